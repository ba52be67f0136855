#!/usr/bin/env bash
# One device call (carry [".deps", "build-bench"]; build-bench/sync_bench from build.sh):
# - sync_bench before and after the build: the floor of one dependent phase of a decode step (sync_bench.cu);
# - the prompt's forward at 512 tokens, batch 1 and 8: gpubench --mode inference --kernels fused --cuda-graph true
#   (the prefill's kernels, captured) alternated with PyTorch's --graph --compile (whose compile runs once while
#   gpubench builds, filling inductor's cache). One archive, $OUT/<CALL>-<time>.tar.gz.
#   OUT=... CALL=floor GPUBENCH_GIT_REVISION=<commit> results/2026-12-03-h200-phase-floor/run.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT="${OUT:-$PWD/device-out}"
C="${CALL:-floor}-$(date -u +%H%M%S)"
W="$OUT/$C"
mkdir -p "$W/records" "$W/smoke"
log() { echo "== $(date -u +%H:%M:%S) [${SECONDS}s] $*" | tee -a "$W/session.log"; }
finish() { tar -C "$OUT" -czf "$OUT/$C.tar.gz" "$C" && rm -rf "$W"; }
trap finish EXIT
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv \
  > "$W/nvidia-smi.txt" 2>&1
export PYTHONUNBUFFERED=1
CAT=results/2026-12-03-h200-decode-early-loads/catalog.json
LIMIT="${LIMIT:-520}"
log "sync_bench (before the build)"
timeout 60 build-bench/sync_bench 200 2>&1 | tee "$W/sync_bench_1.txt" | tee -a "$W/session.log"
reference() {  # DIR NAME SECONDS ARGS...
  local dir=$1 name=$2 t=$3; shift 3
  [ "$SECONDS" -gt "$LIMIT" ] && { log "$name: no time left"; return; }
  local left=$((${END:-585} - SECONDS)); [ "$left" -gt "$t" ] && left=$t
  log "pytorch $dir/$name: $*"
  timeout "$left" python3 scripts/pytorch_reference.py "$@" --catalog "$CAT" \
    --json "$W/$dir/pytorch_$name.json" > "$W/$dir/console_pytorch_$name.txt" 2>&1
  log "$dir/$name exit $?"
  grep -E '"(status|reason|latency_p50_ms|samples_per_s|warmup_seconds)"' "$W/$dir/console_pytorch_$name.txt" | head -5 \
    | tee -a "$W/session.log"
}
fw=(--model llama --precision bf16 --mode inference --seq-len 512 --warmup-steps 5 --graph --compile)
(
  reference smoke forward512_bs1 120 "${fw[@]}" --batch-size 1 --dataset-size 50
  reference smoke forward512_bs8 120 "${fw[@]}" --batch-size 8 --dataset-size 80
) &
GPUBENCH_BUILD_TARGETS="gpubench" GPUBENCH_WITH_TESTS=OFF OUT="$W" scripts/device_run.sh build \
  > "$W/build_phase.log" 2>&1 || { tail -40 "$W/build.log"; exit 1; }
rm -f "$W/records.tar.gz"
log "build done"
wait
log "smoke runs done"
log "sync_bench (after the build)"
timeout 60 build-bench/sync_bench 200 2>&1 | tee "$W/sync_bench_2.txt" | tee -a "$W/session.log"
GB="$PWD/build-device/gpubench"
export GPUBENCH_BINARY="$GB"
gpubench() {  # NAME ARGS...
  local name="$1"; shift
  [ "$SECONDS" -gt "$LIMIT" ] && { log "$name: no time left"; return; }
  log "gpubench $name: $*"
  timeout 90 "$GB" run "$@" --output "$W/records/gpubench_$name.json" > "$W/records/console_gpubench_$name.txt" 2>&1
  log "exit $?"
  python3 results/2026-12-03-h200-prefill-graph/summarize.py --one "$W/records/gpubench_$name.json" 2>&1 \
    | tee -a "$W/session.log"
}
g=(llama --mode inference --precision bf16 --seq-len 512 --warmup-steps 5 --cuda-graph true --kernels fused)
gpubench forward512_bs1 "${g[@]}" --batch-size 1 --dataset-size 200
reference records forward512_bs1 70 "${fw[@]}" --batch-size 1 --dataset-size 200
gpubench forward512_bs1_2 "${g[@]}" --batch-size 1 --dataset-size 200
gpubench forward512_bs8 "${g[@]}" --batch-size 8 --dataset-size 400
reference records forward512_bs8 70 "${fw[@]}" --batch-size 8 --dataset-size 400
gpubench forward512_bs8_2 "${g[@]}" --batch-size 8 --dataset-size 400
reference records forward512_bs1_2 70 "${fw[@]}" --batch-size 1 --dataset-size 200
log "done"
