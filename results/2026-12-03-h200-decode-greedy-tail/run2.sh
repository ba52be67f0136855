#!/usr/bin/env bash
# Prepared for the next device call (not run: this session's device time ran out after refused starts). It builds
# gpubench and the engine and parity tests; runs the decode CUDA tests through ctest (so that the parity tests' fixture,
# which exports transformers' weights, runs first: call 1 started their binary directly and they failed for want of
# it); then gpubench --mode generate --kernels fused at batch 1 with the step's ends as kernels (the default) and with
# both off (GPUBENCH_DECODE_GREEDY_TAIL=0 GPUBENCH_DECODE_EMBED=0), twice each, for GPT-2 and TinyLlama: the records'
# notes carry the generated tokens (sequence 0's first ones, a digest of all), so the two settings' tokens can be
# compared; then PyTorch's --graph --compile for both (inductor's defaults, the strongest valid form so far), whose
# records now say how many leading tokens agree with the uncompiled forward's. One archive, $OUT/<CALL>-<time>.tar.gz.
# From the repository root (carry [".deps"]):
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
GPUBENCH_BUILD_TARGETS="gpubench engine_tests decoder_parity_tests" OUT="$W" scripts/device_run.sh build \
  > "$W/build_phase.log" 2>&1 || { tail -40 "$W/build.log"; exit 1; }
rm -f "$W/records.tar.gz"
log "build done"
GB="$PWD/build-device/gpubench"
export GPUBENCH_BINARY="$GB"
log "CUDA tests (ctest, with the parity tests' export fixture)"
(cd build-device && timeout 200 ctest --output-on-failure -R "(DecodeOps|DecodeStep|DecoderParity)" > "$W/ctest_cuda.log" 2>&1)
log "exit $?"
grep -E "tests passed|tests failed|\(Failed\)|_CUDA .*(Passed|Failed)" "$W/ctest_cuda.log" | tail -20 | tee -a "$W/session.log"
gpubench() {  # NAME ARGS...
  local name="$1"; shift
  [ "$SECONDS" -gt "${LIMIT:-480}" ] && { log "$name: no time left"; return; }
  log "gpubench $name (GREEDY_TAIL=${GPUBENCH_DECODE_GREEDY_TAIL-default} EMBED=${GPUBENCH_DECODE_EMBED-default}): $*"
  timeout 60 "$GB" run "$@" --mode generate --output "$W/records/gpubench_$name.json" \
    > "$W/records/console_gpubench_$name.txt" 2>&1
  log "exit $?"
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(d['status'], \
[m['value'] for m in d['summary']['metrics'] if m['tag'] == 'decode_tokens_per_s'], \
[n for n in d['notes'] if 'tokens' in n and ('digest' in n or 'differ' in n)])" \
    "$W/records/gpubench_$name.json" 2>&1 | tee -a "$W/session.log"
}
reference() {  # NAME ARGS...
  local name="$1"; shift
  [ "$SECONDS" -gt "${LIMIT:-480}" ] && { log "$name: no time left"; return; }
  log "pytorch $name: $*"
  timeout $((${END:-585} - SECONDS)) python3 scripts/pytorch_reference.py "$@" --mode generate \
    --json "$W/records/pytorch_$name.json" > "$W/records/console_pytorch_$name.txt" 2>&1
  log "exit $?"
  grep -E '"(decode_tokens_per_s|itl_p50_ms|warmup_seconds|tokens_agree_with_uncompiled)"|warning' \
    "$W/records/console_pytorch_$name.txt" | head -5 | tee -a "$W/session.log"
}
off() { GPUBENCH_DECODE_GREEDY_TAIL=0 GPUBENCH_DECODE_EMBED=0 gpubench "$@"; }
a=(--precision bf16 --batch-size 1 --kernels fused)
for model in gpt2 llama; do
  gpubench ${model}_bs1 $model "${a[@]}"
  off ${model}_bs1_off $model "${a[@]}"
  off ${model}_bs1_off_2 $model "${a[@]}"
  gpubench ${model}_bs1_2 $model "${a[@]}"
done
reference gpt2_bs1_graph_compile --model gpt2 --precision bf16 --batch-size 1 --graph --compile
gpubench gpt2_bs1_3 gpt2 "${a[@]}"
reference llama_bs1_graph_compile --model llama --precision bf16 --batch-size 1 --graph --compile
gpubench llama_bs1_3 llama "${a[@]}"
