#!/usr/bin/env bash
# Call 3 of this session on the H200 (issue #32), a fresh machine, the session's last device time. After call 2: the
# kernels normalise (x - mean) first (as ATen; call 2's fp32 test caught ReLU-mask flips from the cancelling form),
# test fixes, and the stem's convolution over the image and weight zero-padded to 8 channels (cuDNN's bf16 kernel
# for 3 channels took 1.5 + 0.9 ms a step in call 1's profile). Build; the ResNet CUDA tests; then resnet50 bs 256,
# fused (padded stem), torch.compile (torchvision's resnet50, same recipe), fused with the unpadded stem and ATen,
# alternating, fp16 autocast (--amp) and bf16; whole-step CUDA graphs and a bf16 profile if time is left. One archive.
# Run from the repository root: OUT=... GPUBENCH_GIT_REVISION=<commit> results/2026-12-02-h200-resnet-fused-timing/run3.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT="${OUT:-$PWD/device-out}"
C="${CALL:-call3}"
W="$OUT/$C"
mkdir -p "$W/records"
log() { echo "== $(date -u +%H:%M:%S) [${SECONDS}s] $*" | tee -a "$W/session.log"; }
finish() { tar -C "$OUT" -czf "$OUT/$C.tar.gz" "$C" && rm -rf "$W"; }
trap finish EXIT
GPUBENCH_BUILD_TARGETS="gpubench engine_tests" OUT="$W" scripts/device_run.sh build > "$W/build_phase.log" 2>&1 \
  || { tail -30 "$W/build.log"; exit 1; }
rm -f "$W/records.tar.gz"
GB=build-device/gpubench
export GPUBENCH_BINARY="$PWD/$GB"
log "ResNet CUDA tests"
timeout 90 build-device/tests/engine_tests --gtest_filter='ResNet50Test.*_CUDA' > "$W/cuda_tests.log" 2>&1
log "exit $?"
grep -E "^\[       OK|FAILED|Failure|Expected|Which is|error|resnet50|rel_diff|d input|output" "$W/cuda_tests.log" | head -40 | tee -a "$W/session.log"
cat > "$W/resnet.yaml" <<'YAML'
model: resnet50
precision: amp
batch_size: 256
dataset_size: 25600
warmup_steps: 15
YAML
LIMIT=${LIMIT:-500}
run() {  # name, flags...
  local name=$1; shift
  [ "$SECONDS" -gt "$LIMIT" ] && { log "$name: no time left"; return; }
  log "$name: $GB run --config $W/resnet.yaml $*"
  timeout 40 "$GB" run --config "$W/resnet.yaml" "$@" --quiet --output "$W/records/gpubench_resnet50_$name.json" \
    > "$W/resnet50_$name.log" 2>&1
  log "exit $?"
  grep -E "^total|note|status" "$W/resnet50_$name.log" | tail -3 | tee -a "$W/session.log"
}
compile() {  # name, precision
  local left=$((LIMIT + 40 - SECONDS))
  [ "$left" -lt 40 ] && { log "compile $1: no time left"; return; }
  log "compile $1: scripts/pytorch_reference.py --config $W/resnet.yaml --precision $2 --fused --compile ($left s left)"
  PYTHONUNBUFFERED=1 timeout "$left" python3 scripts/pytorch_reference.py --config "$W/resnet.yaml" --precision "$2" \
    --fused --compile --json "$W/records/pytorch_resnet50_$1.json" > "$W/pytorch_$1.log" 2>&1
  log "exit $?"
  grep -E "samples_per_s|step_ms_median" "$W/pytorch_$1.log" | tee -a "$W/session.log"
}
run "amp-fused_r1" --kernels fused
run "bf16-fused_r1" --kernels fused --precision bf16
compile "amp-compile_r1" amp
compile "bf16-compile_r1" bf16
export GPUBENCH_RESNET_STEM_PAD=0
run "amp-fused-unpadded_r1" --kernels fused
run "bf16-fused-unpadded_r1" --kernels fused --precision bf16
unset GPUBENCH_RESNET_STEM_PAD
run "amp-fused_r2" --kernels fused
run "bf16-fused_r2" --kernels fused --precision bf16
compile "amp-compile_r2" amp
compile "bf16-compile_r2" bf16
run "amp-aten_r1"
run "bf16-aten_r1" --precision bf16
run "bf16-fused-graph_r1" --kernels fused --precision bf16 --cuda-graph
run "amp-fused-graph_r1" --kernels fused --cuda-graph
run "bf16-fused_profile" --kernels fused --precision bf16 --profile
