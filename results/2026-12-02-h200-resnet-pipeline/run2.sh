#!/usr/bin/env bash
# Call 2 on the H200 (issue #32), a fresh machine. Call 1 found the torch.compile "bf16" reference measuring fp16
# (torch 2.11's AOTAutograd cache keys autocast's on/off, not its dtype; the bf16 run reused the fp16 run's graph):
# scripts/pytorch_reference.py now keeps one inductor cache per autocast dtype. Here: bf16 fused against a cold,
# then a warm bf16 compile (its trace, to see bf16 kernels), fp16 fused against compile, then the folder with 7 decode
# workers (two ranks' share of this host) on the CPU, nvJPEG and mixed, and mixed with all 15 (the split now starts
# with the workers taking every sample). One archive. Run from the repository root:
#   OUT=... GPUBENCH_GIT_REVISION=<commit> results/2026-12-02-h200-resnet-pipeline/run2.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT="${OUT:-$PWD/device-out}"
C="${CALL:-call2}"
W="$OUT/$C"
mkdir -p "$W/records"
log() { echo "== $(date -u +%H:%M:%S) [${SECONDS}s] $*" | tee -a "$W/session.log"; }
finish() { tar -C "$OUT" -czf "$OUT/$C.tar.gz" "$C" && rm -rf "$W"; }
trap finish EXIT
GPUBENCH_BUILD_TARGETS="gpubench" GPUBENCH_WITH_TESTS=OFF OUT="$W" scripts/device_run.sh build > "$W/build_phase.log" 2>&1 \
  || { tail -30 "$W/build.log"; exit 1; }
rm -f "$W/records.tar.gz"
log "build done"
GB=build-device/gpubench
export GPUBENCH_BINARY="$PWD/$GB"
D=/tmp/gpubench-imagenet-like
"$GB" dataset make --images 25600 --classes 100 --seed 0 --out "$D" > "$W/dataset_make.log" 2>&1 && cat "$D"/*/* > /dev/null
log "dataset made: $(tail -2 "$W/dataset_make.log" | head -1)"
cat > "$W/resnet.yaml" <<'YAML'
model: resnet50
precision: amp
batch_size: 256
dataset_size: 25600
warmup_steps: 15
YAML
LIMIT=${LIMIT:-530}
run() {  # name, flags...
  local name=$1; shift
  [ "$SECONDS" -gt "$LIMIT" ] && { log "$name: no time left"; return; }
  log "$name: $GB run --config $W/resnet.yaml $*"
  timeout 50 "$GB" run --config "$W/resnet.yaml" "$@" --quiet --output "$W/records/gpubench_resnet50_$name.json" \
    > "$W/resnet50_$name.log" 2>&1
  log "exit $?"
  grep -E "^total|note|status|also measured" "$W/resnet50_$name.log" | tail -3 | tee -a "$W/session.log"
}
compile() {  # name, precision, extra flags
  local left=$((LIMIT + 60 - SECONDS))
  [ "$left" -lt 40 ] && { log "compile $1: no time left"; return; }
  log "compile $1: scripts/pytorch_reference.py --config $W/resnet.yaml --precision $2 --fused --compile ${*:3} ($left s left)"
  PYTHONUNBUFFERED=1 timeout "$left" python3 scripts/pytorch_reference.py --config "$W/resnet.yaml" --precision "$2" \
    --fused --compile --json "$W/records/pytorch_resnet50_$1.json" "${@:3}" > "$W/pytorch_$1.log" 2>&1
  log "exit $?"
  grep -E "samples_per_s|step_ms_median|compile_cache_dir" "$W/pytorch_$1.log" | tee -a "$W/session.log"
}
F=(--data folder --data-path "$D")
compile "bf16-compile_r1" bf16
run "bf16-fused-synthetic_r1" --kernels fused --precision bf16
compile "bf16-compile_r2" bf16 --trace "$W/pytorch_bf16_compile_trace.json" --trace-steps 2
run "bf16-fused-synthetic_r2" --kernels fused --precision bf16
compile "amp-compile_r1" amp
run "amp-fused-synthetic_r1" --kernels fused
run "amp-fused-folder-w7-cpu" --kernels fused "${F[@]}" --data-workers 7 --decode cpu
run "amp-fused-folder-w7-gpu" --kernels fused "${F[@]}" --data-workers 7 --decode gpu
run "amp-fused-folder-w7-auto" --kernels fused "${F[@]}" --data-workers 7
run "amp-fused-folder-mixed" --kernels fused "${F[@]}" --decode mixed
run "amp-fused-folder-auto" --kernels fused "${F[@]}"
run "amp-fused-synthetic_r2" --kernels fused
gzip -f "$W"/*.json 2>/dev/null
