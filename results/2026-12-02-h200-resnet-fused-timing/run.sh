#!/usr/bin/env bash
# Call 1 of this session on the H200 (issue #32), a fresh machine: build; the ResNet and FP8 CUDA tests not yet run on
# a GPU (running statistics against ATen, the fp32-yardstick curve test, the FP8 failed-run record); then resnet50
# bs 256 --amp and bf16, --kernels fused and aten alternating for two rounds; a profiled fused run of each precision;
# and, with whatever time is left, torchvision's resnet50 under torch.compile with the same recipe (fp16 autocast).
# Bundled into one archive.
# Run from the repository root: OUT=... GPUBENCH_GIT_REVISION=<commit> results/2026-12-02-h200-resnet-fused-timing/run.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT="${OUT:-$PWD/device-out}"
C="${CALL:-call1}"
W="$OUT/$C"
mkdir -p "$W/records"
log() { echo "== $(date -u +%H:%M:%S) [${SECONDS}s] $*" | tee -a "$W/session.log"; }
finish() { tar -C "$OUT" -czf "$OUT/$C.tar.gz" "$C" && rm -rf "$W"; }
trap finish EXIT
GPUBENCH_BUILD_TARGETS="gpubench engine_tests" OUT="$W" scripts/device_run.sh build > "$W/build_phase.log" 2>&1 \
  || { tail -30 "$W/build.log"; exit 1; }
GB=build-device/gpubench
export GPUBENCH_BINARY="$PWD/$GB"
log "ResNet and FP8 CUDA tests"
timeout 150 build-device/tests/engine_tests \
  --gtest_filter='ResNet50Test.*_CUDA:Fp8Test.*_CUDA' > "$W/cuda_tests.log" 2>&1
log "exit $?"
grep -E "^\[       OK|FAILED|Failure|Expected|Which is|error|resnet50 fused|less than|rel_diff|curve" "$W/cuda_tests.log" | head -40 | tee -a "$W/session.log"
cat > "$W/resnet.yaml" <<'YAML'
model: resnet50
precision: amp
batch_size: 256
dataset_size: 25600
warmup_steps: 15
YAML
run() {  # name, flags...
  local name=$1; shift
  log "$name: $GB run --config $W/resnet.yaml $*"
  timeout 60 "$GB" run --config "$W/resnet.yaml" "$@" --quiet --output "$W/records/gpubench_resnet50_$name.json" \
    > "$W/resnet50_$name.log" 2>&1
  log "exit $?"
  grep -E "^total|note|status" "$W/resnet50_$name.log" | tail -3 | tee -a "$W/session.log"
}
for r in 1 2; do
  run "amp-fused_r$r" --kernels fused
  run "amp-aten_r$r"
  run "bf16-fused_r$r" --kernels fused --precision bf16
  run "bf16-aten_r$r" --precision bf16
done
run "amp-fused_profile" --kernels fused --profile
run "bf16-fused_profile" --kernels fused --precision bf16 --profile
run "amp-aten_profile" --profile
left=$((575 - SECONDS))
log "torchvision resnet50 under torch.compile (fused SGD, fp16 autocast), $left s left"
[ "$left" -gt 60 ] && PYTHONUNBUFFERED=1 timeout "$left" python3 scripts/pytorch_reference.py --config "$W/resnet.yaml" \
  --fused --compile --json "$W/records/pytorch_resnet50_amp_compile.json" > "$W/pytorch_compile.log" 2>&1
log "exit $?"
tail -3 "$W/pytorch_compile.log" | tee -a "$W/session.log"
