#!/usr/bin/env bash
# Issue #62 on the GPU machine (carry [".deps"]): decode: auto chosen by measurement in each run. Builds gpubench and
# engine_tests, runs the GPU-decode and input-pipeline CUDA tests, makes the 25,600-image folder (page cache warmed),
# then ResNet-50 bs 256 --kernels fused, fp16 (--amp) and bf16, ROUNDS rounds alternated: synthetic, the folder with
# the default decode: auto (the host's cores - 1 workers) and with 7 workers (a host shared by two GPUs); then, once,
# the pipeline alone (--data-only) on nvJPEG (the hardware decoder where the card has one) and on the CPU workers, and
# training fed by nvJPEG alone and by the CPU alone.
# PHASES picks parts (build tests rounds alone; default all); a second call on a warm machine can run the rest.
# ONLY="fp16-synthetic fp16-auto ..." runs only those (names without the round); BUILD_TARGETS overrides the build's.
#   OUT=... GPUBENCH_GIT_REVISION=<commit> [ROUNDS=2] [PHASES="build tests rounds alone"] results/2026-12-05-h100-auto-decode/run.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT="${OUT:-$PWD/device-out}"
ROUNDS="${ROUNDS:-2}"
FIRST_ROUND="${FIRST_ROUND:-1}"
PHASES="${PHASES:-build tests rounds alone}"
LIMIT="${LIMIT:-560}"
mkdir -p "$OUT/records"
log() { echo "== $(date -u +%H:%M:%S) [${SECONDS}s] $*" | tee -a "$OUT/session.log"; }
finish() { tar -C "$OUT" -czf "$OUT/records.tar.gz" records session.log 2>/dev/null; }
trap finish EXIT
want() { [[ " $PHASES " == *" $1 "* ]]; }
GB="$PWD/build-device/gpubench"
export GPUBENCH_BINARY="$GB"
if want build || [ ! -x "$GB" ]; then
  GPUBENCH_BUILD_TARGETS="${BUILD_TARGETS:-gpubench engine_tests}" scripts/device_run.sh build > "$OUT/build_phase.log" 2>&1 \
    || { tail -30 "$OUT/build.log"; exit 1; }
  rm -f "$OUT/records.tar.gz"
  log "build done"
fi
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee -a "$OUT/session.log"
log "host: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
D=/tmp/gpubench-imagenet-like
if [ ! -f "$D/dataset.json" ]; then
  ( "$GB" dataset make --images 25600 --classes 100 --seed 0 --out "$D" > "$OUT/dataset_make.log" 2>&1 \
    && cat "$D"/*/* > /dev/null ) &
fi
if want tests; then
  log "CUDA tests (GPU decode, input pipeline)"
  timeout 150 build-device/tests/engine_tests --gtest_filter='GpuDecode.*_CUDA:InputPipeline.*_CUDA' > "$OUT/cuda_tests.log" 2>&1
  log "exit $?"
  grep -E "^\[       OK|SKIPPED|FAILED|Failure|Expected|Which is" "$OUT/cuda_tests.log" | head -30 | tee -a "$OUT/session.log"
fi
wait
cat "$D"/*/* > /dev/null
log "dataset ready: $(find "$D" -name '*.JPEG' | wc -l) files"
cat > "$OUT/resnet.yaml" <<'YAML'
model: resnet50
batch_size: 256
dataset_size: 25600
warmup_steps: 15
kernels: fused
YAML
run() {  # name, flags...
  local name=$1; shift
  if [ -n "${ONLY:-}" ] && [[ " $ONLY " != *" ${name%_r*} "* ]]; then return; fi
  [ "$SECONDS" -gt "$LIMIT" ] && { log "$name: no time left"; return; }
  timeout 80 "$GB" run --config "$OUT/resnet.yaml" "$@" --quiet --output "$OUT/records/$name.json" \
    > "$OUT/records/$name.log" 2>&1
  local rc=$?
  log "$name: exit $rc, $(grep -m1 -oE 'total[^|]*' "$OUT/records/$name.log" | head -c 120)"
  python3 - "$OUT/records/$name.json" <<'PY' 2>/dev/null | tee -a "$OUT/session.log"
import json, sys
r = json.load(open(sys.argv[1]))
d = r.get("data") or {}
c = d.get("decode_calibration") or {}
print(f"   {r['summary']['samples_per_s']:.1f} img/s, decode {d.get('decode', '-')}"
      + (f", calibration: step {c.get('step_img_per_s', 0):.0f}, workers {c.get('cpu_img_per_s', 0):.0f}, nvJPEG {c.get('gpu_img_per_s', 0):.0f} ({c.get('gpu_backend', '')}), fed cpu/gpu/mixed {c.get('fed_cpu_img_per_s', 0):.0f}/{c.get('fed_gpu_img_per_s', 0):.0f}/{c.get('fed_mixed_img_per_s', 0):.0f} at {c.get('mixed_share', 0):.2f}, {c.get('seconds', 0):.1f} s" if c else ""))
PY
}
F=(--data folder --data-path "$D")
if want rounds; then
  for r in $(seq "$FIRST_ROUND" "$ROUNDS"); do
    run "fp16-synthetic_r$r" --amp
    run "fp16-auto_r$r" --amp "${F[@]}"
    run "fp16-auto-w7_r$r" --amp "${F[@]}" --data-workers 7
    run "bf16-synthetic_r$r" --precision bf16
    run "bf16-auto_r$r" --precision bf16 "${F[@]}"
    run "bf16-auto-w7_r$r" --precision bf16 "${F[@]}" --data-workers 7
  done
fi
if want alone; then
  run "fp16-alone-gpu" --amp "${F[@]}" --data-only --decode gpu
  run "fp16-alone-gpu-w7" --amp "${F[@]}" --data-only --decode gpu --data-workers 7
  run "fp16-alone-cpu" --amp "${F[@]}" --data-only --decode cpu
  run "fp16-gpu" --amp "${F[@]}" --decode gpu
  run "fp16-cpu" --amp "${F[@]}" --decode cpu
fi
