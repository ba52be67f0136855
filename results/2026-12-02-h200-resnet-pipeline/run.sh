#!/usr/bin/env bash
# Call 1 on the H200 (issue #32), a fresh machine. While the build runs: the stem convolution's kernels per dtype and
# memory format (stem_conv.py). Then the ResNet and input-pipeline CUDA tests at main's kernels, an ImageNet-like
# folder (`dataset make`, 25,600 JPEGs, page cache warmed), and resnet50 bs 256 fused: synthetic, then the folder with
# --decode auto / cpu / gpu / mixed, then torch.compile, fp16 (--amp) and bf16; a bf16 torch.compile trace last.
# One archive. Run from the repository root:
#   OUT=... GPUBENCH_GIT_REVISION=<commit> results/2026-12-02-h200-resnet-pipeline/run.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
HERE=results/2026-12-02-h200-resnet-pipeline
OUT="${OUT:-$PWD/device-out}"
C="${CALL:-call1}"
W="$OUT/$C"
mkdir -p "$W/records"
log() { echo "== $(date -u +%H:%M:%S) [${SECONDS}s] $*" | tee -a "$W/session.log"; }
finish() { tar -C "$OUT" -czf "$OUT/$C.tar.gz" "$C" && rm -rf "$W"; }
trap finish EXIT
log "stem convolution microbenchmark (background, during the build)"
python3 "$HERE/stem_conv.py" > "$W/stem_conv.txt" 2>&1 &
GPUBENCH_BUILD_TARGETS="gpubench engine_tests" OUT="$W" scripts/device_run.sh build > "$W/build_phase.log" 2>&1 \
  || { tail -30 "$W/build.log"; exit 1; }
rm -f "$W/records.tar.gz"
wait
log "build done"
GB=build-device/gpubench
export GPUBENCH_BINARY="$PWD/$GB"
D=/tmp/gpubench-imagenet-like
( "$GB" dataset make --images 25600 --classes 100 --seed 0 --out "$D" > "$W/dataset_make.log" 2>&1 \
  && cat "$D"/*/* > /dev/null ) &
log "CUDA tests (ResNet, input pipeline, GPU decode)"
timeout 150 build-device/tests/engine_tests \
  --gtest_filter='ResNet50Test.*_CUDA:InputPipeline.*_CUDA:GpuDecode.*_CUDA' > "$W/cuda_tests.log" 2>&1
log "exit $?"
grep -E "^\[       OK|FAILED|Failure|Expected|Which is|rel_diff|cpu_share|mixed" "$W/cuda_tests.log" | head -40 | tee -a "$W/session.log"
wait
log "dataset made: $(tail -2 "$W/dataset_make.log" | tr '\n' ' ')"
cat > "$W/resnet.yaml" <<'YAML'
model: resnet50
precision: amp
batch_size: 256
dataset_size: 25600
warmup_steps: 15
YAML
LIMIT=${LIMIT:-520}
run() {  # name, flags...
  local name=$1; shift
  [ "$SECONDS" -gt "$LIMIT" ] && { log "$name: no time left"; return; }
  log "$name: $GB run --config $W/resnet.yaml $*"
  timeout 50 "$GB" run --config "$W/resnet.yaml" "$@" --quiet --output "$W/records/gpubench_resnet50_$name.json" \
    > "$W/resnet50_$name.log" 2>&1
  log "exit $?"
  grep -E "^total|note|status|decode|input wait|cpu_share" "$W/resnet50_$name.log" | tail -4 | tee -a "$W/session.log"
}
compile() {  # name, precision, extra flags
  local left=$((LIMIT + 60 - SECONDS))
  [ "$left" -lt 40 ] && { log "compile $1: no time left"; return; }
  log "compile $1: scripts/pytorch_reference.py --config $W/resnet.yaml --precision $2 --fused --compile ${*:3} ($left s left)"
  PYTHONUNBUFFERED=1 timeout "$left" python3 scripts/pytorch_reference.py --config "$W/resnet.yaml" --precision "$2" \
    --fused --compile --json "$W/records/pytorch_resnet50_$1.json" "${@:3}" > "$W/pytorch_$1.log" 2>&1
  log "exit $?"
  grep -E "samples_per_s|step_ms_median" "$W/pytorch_$1.log" | tee -a "$W/session.log"
}
F=(--data folder --data-path "$D")
run "amp-fused-synthetic_r1" --kernels fused
run "amp-fused-folder-auto_r1" --kernels fused "${F[@]}"
run "amp-fused-folder-mixed_r1" --kernels fused "${F[@]}" --decode mixed
run "amp-fused-folder-gpu_r1" --kernels fused "${F[@]}" --decode gpu
compile "amp-compile_r1" amp
run "bf16-fused-synthetic_r1" --kernels fused --precision bf16
run "bf16-fused-folder-auto_r1" --kernels fused --precision bf16 "${F[@]}"
run "bf16-fused-folder-mixed_r1" --kernels fused --precision bf16 "${F[@]}" --decode mixed
compile "bf16-compile_r1" bf16
run "amp-fused-synthetic_r2" --kernels fused
run "amp-fused-folder-mixed_r2" --kernels fused "${F[@]}" --decode mixed
run "amp-fused-folder-cpu_r1" --kernels fused "${F[@]}" --decode cpu
run "bf16-fused-synthetic_r2" --kernels fused --precision bf16
run "bf16-fused-folder-gpu_r1" --kernels fused --precision bf16 "${F[@]}" --decode gpu
compile "bf16-compile-trace" bf16 --trace "$W/pytorch_bf16_compile_trace.json" --trace-steps 3
gzip -f "$W"/*.json 2>/dev/null
