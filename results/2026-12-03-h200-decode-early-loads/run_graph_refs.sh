#!/usr/bin/env bash
# One device call: scripts/pytorch_reference.py --mode generate --graph (gpt-fast's recipe on transformers' model: a
# static cache, the decode step captured once as a CUDA graph), for TinyLlama and GPT-2 at batch 1, then the same with
# --compile (the decode forward compiled by torch.compile first). No gpubench here (no time left for its build this
# session): its figures are call 1's. One archive, $OUT/graphrefs-<time>.tar.gz. From the repository root:
#   OUT=... results/2026-12-03-h200-decode-early-loads/run_graph_refs.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT="${OUT:-$PWD/device-out}"
C="graphrefs-$(date -u +%H%M%S)"
W="$OUT/$C"
mkdir -p "$W"
finish() { tar -C "$OUT" -czf "$OUT/$C.tar.gz" "$C" && rm -rf "$W"; }
trap finish EXIT
export PYTHONUNBUFFERED=1
ref() {  # NAME SECONDS ARGS...
  local name=$1 t=$2; shift 2
  [ "$SECONDS" -gt "${LIMIT:-250}" ] && { echo "$name: no time left" | tee -a "$W/session.log"; return; }
  echo "== $(date -u +%H:%M:%S) [${SECONDS}s] $name: $*" | tee -a "$W/session.log"
  timeout "$t" python3 scripts/pytorch_reference.py "$@" --catalog results/2026-12-03-h200-decode-early-loads/catalog.json --mode generate --json "$W/pytorch_$name.json" \
    > "$W/console_$name.txt" 2>&1
  echo "exit $?" | tee -a "$W/session.log"
  grep -E '"(mode|status|reason|ttft_ms|decode_tokens_per_s|itl_p50_ms|e2e_latency_ms|warmup_seconds)"' \
    "$W/console_$name.txt" | grep -v '"mode": "generate"' | head -8 | tee -a "$W/session.log"
  tail -3 "$W/console_$name.txt" | grep -iE "error|exception" | tee -a "$W/session.log"
}
ref llama_bs1_graph 80 --model llama --precision bf16 --batch-size 1 --graph
ref gpt2_bs1_graph 60 --model gpt2 --precision bf16 --batch-size 1 --graph
ref llama_bs1_graph_compile 120 --model llama --precision bf16 --batch-size 1 --graph --compile
ref gpt2_bs1_graph_compile 90 --model gpt2 --precision bf16 --batch-size 1 --graph --compile
