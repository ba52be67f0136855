#!/usr/bin/env bash
# Call 3 of 2026-12-02 on the H200 (issue #32), a fresh machine, the session's last device time: ResNet-50's
# batch-norm + (residual add +) ReLU as gpubench's kernels (--kernels fused). Build; the ResNet CUDA tests (kernels
# against ATen, the two paths' 200-step loss curves) and the whole-step graph test; then resnet50 --amp bs 256
# (fp16 autocast + loss scaling, channels_last, fused SGD), fused and ATen alternating for two rounds, bf16 one round
# each, a profiled fused run, and PyTorch's torchvision resnet50 under torch.compile with the same recipe last (it
# may not finish in the call). Bundled into one archive.
# Run from the repository root: OUT=... GPUBENCH_GIT_REVISION=<commit> results/2026-12-02-h200-resnet-fused-bn/run.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT="${OUT:-$PWD/device-out}"
W="$OUT/call3"
mkdir -p "$W/records"
log() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$W/session.log"; }
finish() { tar -C "$OUT" -czf "$OUT/call3.tar.gz" call3 && rm -rf "$W"; }
trap finish EXIT
GPUBENCH_BUILD_TARGETS="gpubench engine_tests" OUT="$W" scripts/device_run.sh build > "$W/build_phase.log" 2>&1 \
  || { tail -30 "$W/build.log"; exit 1; }
GB=build-device/gpubench
export GPUBENCH_BINARY="$PWD/$GB"
log "ResNet CUDA tests"
timeout 120 build-device/tests/engine_tests \
  --gtest_filter='ResNet50Test.*_CUDA:TrainerTest.CudaGraph*_CUDA' > "$W/cuda_tests.log" 2>&1
log "exit $?"
grep -E "^\[       OK|FAILED|largest|Failure|Expected|Which is|error|resnet50 fused" "$W/cuda_tests.log" | head -40 | tee -a "$W/session.log"
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
  grep -E "^total|note|fused" "$W/resnet50_$name.log" | tail -3 | tee -a "$W/session.log"
}
run "amp-fused_r1" --kernels fused
run "amp-aten_r1"
run "bf16-fused_r1" --kernels fused --precision bf16
run "bf16-aten_r1" --precision bf16
run "amp-fused_profile" --kernels fused --profile
run "amp-fused_r2" --kernels fused
run "amp-aten_r2"
log "torchvision resnet50 under torch.compile (fused SGD), the same recipe"
PYTHONUNBUFFERED=1 timeout 100 python3 scripts/pytorch_reference.py --config "$W/resnet.yaml" --fused --compile \
  --json "$W/records/pytorch_resnet50_compile.json" > "$W/pytorch_compile.log" 2>&1
log "exit $?"
tail -3 "$W/pytorch_compile.log" | tee -a "$W/session.log"
