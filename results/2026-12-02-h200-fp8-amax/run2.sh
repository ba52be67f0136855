#!/usr/bin/env bash
# Call 2 and 3 on the H200 (issue #30): call 2 (8828e4b, fresh machine) the 128 x 128 cast-transpose tiles, call 3
# (warm machine) back to 64 x 128 tiles (128 x 128 ran slower: 9.5 against 7.7 ms a step). Build, the FP8
# and fused-op CUDA tests, one round of configs/bench/llama-fp8.yaml without PyTorch's bf16 compile variant (gpubench
# FP8 and bf16 with kernels: fused, torchao Float8 + torch.compile), then while time is left one more gpubench FP8/bf16
# round and a profiled FP8 run. Everything is bundled into one archive (the device tool brings back only a few files).
# Run from the repository root: OUT=... GPUBENCH_GIT_REVISION=<commit> results/2026-12-02-h200-fp8-amax/run2.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
START=$(date +%s)
OUT="${OUT:-$PWD/device-out}"
W="$OUT/${CALL:-call2}"
mkdir -p "$W/records"
log() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$W/session.log"; }
elapsed() { echo $(( $(date +%s) - START )); }
finish() { tar -C "$OUT" -czf "$OUT/${CALL:-call2}.tar.gz" ${CALL:-call2} && rm -rf "$W"; }
trap finish EXIT
GPUBENCH_BUILD_TARGETS="gpubench engine_tests" OUT="$W" scripts/device_run.sh build > "$W/build_phase.log" 2>&1 \
  || { tail -30 "$W/build.log"; exit 1; }
export PYTHONPATH=/tmp/site
GB=build-device/gpubench
log "FP8 and fused-op CUDA tests"
timeout 150 build-device/tests/engine_tests --gtest_filter='Fp8Test.*_CUDA:FusedOps*_CUDA' > "$W/cuda_tests.log" 2>&1
log "exit $?"
grep -E "^\[       OK|FAILED|largest|Failure|Expected|Which is|error" "$W/cuda_tests.log" | head -40 | tee -a "$W/session.log"
log "bench configs/bench/llama-fp8.yaml, one round, without pytorch:bf16-compile"
OUT="$W/bench" ROUNDS=1 SKIP="pytorch:bf16-compile" GPUBENCH_GIT_REVISION="${GPUBENCH_GIT_REVISION:-}" \
  timeout 330 scripts/device_run.sh bench configs/bench/llama-fp8.yaml 2>&1 | grep -v Warning | tail -20
cp "$W/bench/summary.md" "$W/summary.md" 2>/dev/null
cat > "$W/llama.yaml" <<'YAML'
model: llama
precision: fp8
batch_size: 4
dataset_size: 320
warmup_steps: 10
YAML
if [ "$(elapsed)" -lt 490 ]; then
  for v in fp8 bf16; do
    log "round 2 $v: $GB run --config $W/llama.yaml --kernels fused --precision $v"
    timeout 40 "$GB" run --config "$W/llama.yaml" --kernels fused --precision "$v" --quiet \
      --output "$W/records/gpubench_llama_${v}-fused_r2.json" > "$W/llama_${v}_r2.log" 2>&1
    log "exit $?"
    grep -E "^total" "$W/llama_${v}_r2.log" | tail -1 | tee -a "$W/session.log"
  done
fi
if [ "$(elapsed)" -lt 540 ]; then
  log "profiled FP8 run"
  timeout 40 "$GB" run --config "$W/llama.yaml" --kernels fused --dataset-size 64 --profile true --quiet \
    --output "$W/records/profile_fp8.json" > "$W/profile_fp8_run.log" 2>&1
  log "exit $?"
  "$GB" trace "$W/records/profile_fp8.trace.json" > "$W/profile_fp8_kernels.txt" 2>&1
  gzip -f "$W/records/profile_fp8.trace.json"
  head -24 "$W/profile_fp8_kernels.txt"
fi
cat "$W/summary.md" 2>/dev/null
