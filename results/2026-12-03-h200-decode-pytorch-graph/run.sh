#!/usr/bin/env bash
# One device call: gpubench --mode generate --kernels fused at batch 1 (TinyLlama, GPT-2) alternated with
# scripts/pytorch_reference.py --mode generate --graph (gpt-fast's recipe on transformers' model: a static cache, the
# decode step captured once as a CUDA graph) and --graph --compile (its forward compiled by torch.compile first).
# While gpubench builds on the CPUs, each reference runs once as a smoke test (one generation; it also fills
# inductor's cache, so the timed --compile runs after the build spend less of the call compiling). Everything goes into
# one archive, $OUT/<CALL>-<time>.tar.gz. From the repository root (carry [".deps"]):
#   OUT=... CALL=graph GPUBENCH_GIT_REVISION=<commit> results/2026-12-03-h200-decode-pytorch-graph/run.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT="${OUT:-$PWD/device-out}"
C="${CALL:-graph}-$(date -u +%H%M%S)"
W="$OUT/$C"
mkdir -p "$W/records" "$W/smoke"
log() { echo "== $(date -u +%H:%M:%S) [${SECONDS}s] $*" | tee -a "$W/session.log"; }
finish() { tar -C "$OUT" -czf "$OUT/$C.tar.gz" "$C" && rm -rf "$W"; }
trap finish EXIT
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv \
  > "$W/nvidia-smi.txt" 2>&1
export PYTHONUNBUFFERED=1
CAT=results/2026-12-03-h200-decode-early-loads/catalog.json  # gpubench's catalog before its build is there
reference() {  # DIR NAME SECONDS ARGS...
  local dir=$1 name=$2 t=$3; shift 3
  [ "$SECONDS" -gt "${LIMIT:-480}" ] && { log "$name: no time left"; return; }
  local left=$((${END:-585} - SECONDS)); [ "$left" -gt "$t" ] && left=$t
  log "pytorch $dir/$name: $*"
  timeout "$left" python3 scripts/pytorch_reference.py "$@" --catalog "$CAT" --mode generate \
    --json "$W/$dir/pytorch_$name.json" > "$W/$dir/console_pytorch_$name.txt" 2>&1
  log "$dir/$name exit $?"
  grep -E '"(status|reason|ttft_ms|decode_tokens_per_s|itl_p50_ms|warmup_seconds)"' "$W/$dir/console_pytorch_$name.txt" \
    | head -6 | tee -a "$W/session.log"
  tail -4 "$W/$dir/console_pytorch_$name.txt" | grep -iE "error|exception" | tee -a "$W/session.log"
}
ll=(--model llama --precision bf16 --batch-size 1)
g2=(--model gpt2 --precision bf16 --batch-size 1)
(  # the smoke tests, on the GPU while the build runs
  reference smoke llama_graph 90 "${ll[@]}" --graph --repetitions 1
  reference smoke gpt2_graph 60 "${g2[@]}" --graph --repetitions 1
  reference smoke gpt2_graph_compile 150 "${g2[@]}" --graph --compile --repetitions 1
  reference smoke llama_graph_compile 200 "${ll[@]}" --graph --compile --repetitions 1
) &
GPUBENCH_BUILD_TARGETS="gpubench" GPUBENCH_WITH_TESTS=OFF OUT="$W" scripts/device_run.sh build \
  > "$W/build_phase.log" 2>&1 || { tail -40 "$W/build.log"; exit 1; }
log "build done"
wait
log "smoke tests done"
rm -f "$W/records.tar.gz"
GB="$PWD/build-device/gpubench"
export GPUBENCH_BINARY="$GB"
gpubench() {  # NAME ARGS...
  local name="$1"; shift
  [ "$SECONDS" -gt "${LIMIT:-480}" ] && { log "$name: no time left"; return; }
  log "gpubench $name: $*"
  timeout 60 "$GB" run "$@" --mode generate --output "$W/records/gpubench_$name.json" \
    > "$W/records/console_gpubench_$name.txt" 2>&1
  log "exit $?"
  grep -oE "decode \(median of generations\) \(tokens/s\): [0-9.]+|fraction of the roofline bound reached: [0-9.]+%|error.*" \
    "$W/records/console_gpubench_$name.txt" | tr '\n' ' ' | tee -a "$W/session.log"; echo | tee -a "$W/session.log"
}
a=(--precision bf16 --batch-size 1 --kernels fused)
gpubench llama_bs1 llama "${a[@]}"
reference records llama_bs1_graph 90 "${ll[@]}" --graph
reference records llama_bs1_graph_compile 150 "${ll[@]}" --graph --compile
gpubench gpt2_bs1 gpt2 "${a[@]}"
reference records gpt2_bs1_graph 60 "${g2[@]}" --graph
reference records gpt2_bs1_graph_compile 120 "${g2[@]}" --graph --compile
gpubench llama_bs1_2 llama "${a[@]}"
gpubench gpt2_bs1_2 gpt2 "${a[@]}"
reference records llama_bs1_graph_2 90 "${ll[@]}" --graph
reference records gpt2_bs1_graph_2 60 "${g2[@]}" --graph
gpubench llama_bs1_3 llama "${a[@]}"
gpubench gpt2_bs1_3 gpt2 "${a[@]}"
