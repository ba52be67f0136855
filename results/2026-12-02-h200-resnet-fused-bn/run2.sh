#!/usr/bin/env bash
# Call 4 of 2026-12-02 on the H200 (issue #32), a fresh machine with ~250 s of device time left: after call 3's fix
# (absent inputs as empty tensors), build the test binary and run the ResNet CUDA tests (the kernels against ATen,
# the two paths' 200-step loss curves); then, only if time is left, resnet50 --amp bs 256 fused and ATen once each
# on 12,800 images. Bundled into one archive.
# Run from the repository root: OUT=... GPUBENCH_GIT_REVISION=<commit> results/2026-12-02-h200-resnet-fused-bn/run2.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT="${OUT:-$PWD/device-out}"
W="$OUT/call4"
mkdir -p "$W/records"
log() { echo "== $(date -u +%H:%M:%S) [${SECONDS}s] $*" | tee -a "$W/session.log"; }
finish() { tar -C "$OUT" -czf "$OUT/call4.tar.gz" call4 && rm -rf "$W"; }
trap finish EXIT
GPUBENCH_BUILD_TARGETS="gpubench engine_tests" OUT="$W" scripts/device_run.sh build > "$W/build_phase.log" 2>&1 \
  || { tail -30 "$W/build.log"; exit 1; }
log "ResNet CUDA tests"
timeout 60 build-device/tests/engine_tests --gtest_filter='ResNet50Test.*_CUDA' > "$W/cuda_tests.log" 2>&1
log "exit $?"
grep -E "^\[       OK|FAILED|Failure|Expected|Which is|error|resnet50 fused|less than|rel_diff" "$W/cuda_tests.log" | head -40 | tee -a "$W/session.log"
cat > "$W/resnet.yaml" <<'YAML'
model: resnet50
precision: amp
batch_size: 256
dataset_size: 12800
warmup_steps: 15
YAML
for v in fused aten; do
  [ "$SECONDS" -gt 215 ] && { log "no time left for $v"; continue; }
  log "amp-$v: build-device/gpubench run --config $W/resnet.yaml --kernels $v"
  timeout 25 build-device/gpubench run --config "$W/resnet.yaml" --kernels "$v" --quiet \
    --output "$W/records/gpubench_resnet50_amp-$v.json" > "$W/resnet50_amp-$v.log" 2>&1
  log "exit $?"
  grep -E "^total|status" "$W/resnet50_amp-$v.log" | tail -2 | tee -a "$W/session.log"
done
