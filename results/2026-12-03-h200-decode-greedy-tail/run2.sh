#!/usr/bin/env bash
# The second device call: gpubench built alone (no tests), then --mode generate --kernels fused at batch 1 with the
# step's ends as kernels (the default) and with both off (GPUBENCH_DECODE_GREEDY_TAIL=0 GPUBENCH_DECODE_EMBED=0),
# for GPT-2 and TinyLlama: the records' notes now carry the generated tokens (sequence 0's first ones and a digest of
# all), so the two settings' tokens can be compared; then GPT-2's --graph --compile reference (gpt-fast's settings),
# which the first call ran out of time for. One archive, $OUT/<CALL>-<time>.tar.gz. From the repository root (carry
# [".deps"]):
#   OUT=... CALL=tokens GPUBENCH_GIT_REVISION=<commit> results/2026-12-03-h200-decode-greedy-tail/run2.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT="${OUT:-$PWD/device-out}"
C="${CALL:-tokens}-$(date -u +%H%M%S)"
W="$OUT/$C"
mkdir -p "$W/records"
log() { echo "== $(date -u +%H:%M:%S) [${SECONDS}s] $*" | tee -a "$W/session.log"; }
finish() { tar -C "$OUT" -czf "$OUT/$C.tar.gz" "$C" && rm -rf "$W"; }
trap finish EXIT
export PYTHONUNBUFFERED=1
GPUBENCH_BUILD_TARGETS="gpubench" GPUBENCH_WITH_TESTS=OFF OUT="$W" scripts/device_run.sh build \
  > "$W/build_phase.log" 2>&1 || { tail -40 "$W/build.log"; exit 1; }
rm -f "$W/records.tar.gz"
log "build done"
GB="$PWD/build-device/gpubench"
export GPUBENCH_BINARY="$GB"
gpubench() {  # NAME ARGS...
  local name="$1"; shift
  [ "$SECONDS" -gt "${LIMIT:-380}" ] && { log "$name: no time left"; return; }
  log "gpubench $name (GREEDY_TAIL=${GPUBENCH_DECODE_GREEDY_TAIL-default} EMBED=${GPUBENCH_DECODE_EMBED-default}): $*"
  timeout 60 "$GB" run "$@" --mode generate --output "$W/records/gpubench_$name.json" \
    > "$W/records/console_gpubench_$name.txt" 2>&1
  log "exit $?"
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(d['status'], \
[m['value'] for m in d['summary']['metrics'] if m['tag'] == 'decode_tokens_per_s'], \
[n for n in d['notes'] if 'tokens' in n and ('digest' in n or 'differ' in n)])" \
    "$W/records/gpubench_$name.json" 2>&1 | tee -a "$W/session.log"
}
off() { GPUBENCH_DECODE_GREEDY_TAIL=0 GPUBENCH_DECODE_EMBED=0 gpubench "$@"; }
a=(--precision bf16 --batch-size 1 --kernels fused)
gpubench gpt2_bs1 gpt2 "${a[@]}"
off gpt2_bs1_off gpt2 "${a[@]}"
gpubench llama_bs1 llama "${a[@]}"
off llama_bs1_off llama "${a[@]}"
gpubench gpt2_bs1_2 gpt2 "${a[@]}"
[ "$SECONDS" -lt "${LIMIT:-380}" ] && {
  log "pytorch gpt2_bs1_graph_compile"
  timeout $((${END:-400} - SECONDS)) python3 scripts/pytorch_reference.py --model gpt2 --precision bf16 --batch-size 1 \
    --graph --compile --mode generate --json "$W/records/pytorch_gpt2_bs1_graph_compile.json" \
    > "$W/records/console_pytorch_gpt2_bs1_graph_compile.txt" 2>&1
  log "exit $?"
  grep -E '"(decode_tokens_per_s|itl_p50_ms|warmup_seconds)"' "$W/records/console_pytorch_gpt2_bs1_graph_compile.txt" \
    | head -3 | tee -a "$W/session.log"
}
gpubench gpt2_bs1_3 gpt2 "${a[@]}"
