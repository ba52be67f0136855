#!/usr/bin/env bash
# Call 4 on the H200 (issue #30), a fresh machine, the last of the session's device time: the build whose FP8 layers
# look up noted amaxes without a flat view per note and never for weights (host time: the forward's attention half
# was launch-bound in call 3's trace). Build, the FP8 and fused-op CUDA tests, TinyLlama bs 4 x 2048 FP8 and bf16
# (kernels: fused) alternating for two rounds. Bundled into one archive.
# Run from the repository root: OUT=... GPUBENCH_GIT_REVISION=<commit> results/2026-12-02-h200-fp8-amax/run3.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT="${OUT:-$PWD/device-out}"
W="$OUT/call4"
mkdir -p "$W/records"
log() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$W/session.log"; }
finish() { tar -C "$OUT" -czf "$OUT/call4.tar.gz" call4 && rm -rf "$W"; }
trap finish EXIT
GPUBENCH_BUILD_TARGETS="gpubench engine_tests" OUT="$W" scripts/device_run.sh build > "$W/build_phase.log" 2>&1 \
  || { tail -30 "$W/build.log"; exit 1; }
GB=build-device/gpubench
log "FP8 and fused-op CUDA tests"
timeout 100 build-device/tests/engine_tests --gtest_filter='Fp8Test.*_CUDA:FusedOps*_CUDA' > "$W/cuda_tests.log" 2>&1
log "exit $?"
grep -E "^\[       OK|FAILED|largest|Failure|Expected|Which is|error" "$W/cuda_tests.log" | head -40 | tee -a "$W/session.log"
cat > "$W/llama.yaml" <<'YAML'
model: llama
precision: fp8
batch_size: 4
dataset_size: 320
warmup_steps: 10
YAML
for round in 1 2; do
  for v in fp8 bf16; do
    log "round $round $v: $GB run --config $W/llama.yaml --kernels fused --precision $v"
    timeout 40 "$GB" run --config "$W/llama.yaml" --kernels fused --precision "$v" --quiet \
      --output "$W/records/gpubench_llama_${v}-fused_r$round.json" > "$W/llama_${v}_r$round.log" 2>&1
    log "exit $?"
    grep -E "^total" "$W/llama_${v}_r$round.log" | tail -1 | tee -a "$W/session.log"
  done
done
