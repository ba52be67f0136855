#!/usr/bin/env bash
# Call 3 on the H200 (issue #32), a fresh machine. nvJPEG now decodes only each crop's window (regions of interest,
# nvjpegDecodeBatchedEx) and decode: mixed backs off only when no prepared batch was queued for the step. Build; the
# GPU-decode and input-pipeline CUDA tests; then resnet50 bs 256 fused, fp16 (--amp): synthetic, the folder with 7
# workers (two ranks' share of this host) on nvJPEG with and without ROI, auto (= mixed there), and with all 15
# workers mixed and auto (= cpu); bf16 synthetic, auto with 15 and with 7. One archive. From the repository root:
#   OUT=... GPUBENCH_GIT_REVISION=<commit> results/2026-12-02-h200-resnet-pipeline/run3.sh
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
log "build done"
GB=build-device/gpubench
export GPUBENCH_BINARY="$PWD/$GB"
D=/tmp/gpubench-imagenet-like
( "$GB" dataset make --images 25600 --classes 100 --seed 0 --out "$D" > "$W/dataset_make.log" 2>&1 \
  && cat "$D"/*/* > /dev/null ) &
log "CUDA tests (GPU decode, input pipeline)"
timeout 90 build-device/tests/engine_tests --gtest_filter='GpuDecode.*_CUDA:InputPipeline.*_CUDA' > "$W/cuda_tests.log" 2>&1
log "exit $?"
grep -E "^\[       OK|SKIPPED|FAILED|Failure|Expected|Which is|ROI|levels" "$W/cuda_tests.log" | head -30 | tee -a "$W/session.log"
wait
log "dataset made"
cat > "$W/resnet.yaml" <<'YAML'
model: resnet50
precision: amp
batch_size: 256
dataset_size: 25600
warmup_steps: 15
YAML
LIMIT=${LIMIT:-420}
run() {  # name, flags...
  local name=$1; shift
  [ "$SECONDS" -gt "$LIMIT" ] && { log "$name: no time left"; return; }
  log "$name: $GB run --config $W/resnet.yaml $*"
  timeout 50 "$GB" run --config "$W/resnet.yaml" "$@" --quiet --output "$W/records/gpubench_resnet50_$name.json" \
    > "$W/resnet50_$name.log" 2>&1
  log "exit $?"
  grep -E "^total|note|status|also measured" "$W/resnet50_$name.log" | tail -3 | tee -a "$W/session.log"
}
F=(--data folder --data-path "$D")
run "amp-fused-synthetic_r1" --kernels fused
run "amp-fused-folder-w7-gpu" --kernels fused "${F[@]}" --data-workers 7 --decode gpu
GPUBENCH_NVJPEG_ROI=0 run "amp-fused-folder-w7-gpu-noroi" --kernels fused "${F[@]}" --data-workers 7 --decode gpu
run "amp-fused-folder-w7-auto" --kernels fused "${F[@]}" --data-workers 7
run "amp-fused-folder-mixed" --kernels fused "${F[@]}" --decode mixed
run "amp-fused-folder-auto" --kernels fused "${F[@]}"
run "amp-fused-synthetic_r2" --kernels fused
run "bf16-fused-synthetic" --kernels fused --precision bf16
run "bf16-fused-folder-auto" --kernels fused --precision bf16 "${F[@]}"
run "bf16-fused-folder-w7-auto" --kernels fused --precision bf16 "${F[@]}" --data-workers 7
run "amp-fused-folder-w7-gpu_r2" --kernels fused "${F[@]}" --data-workers 7 --decode gpu
GPUBENCH_NVJPEG_ROI=0 run "amp-fused-folder-w7-gpu-noroi_r2" --kernels fused "${F[@]}" --data-workers 7 --decode gpu
