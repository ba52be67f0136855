#!/usr/bin/env bash
# gpubench built on the GPU machine (no tests: the kernels are 611f095's, whose CUDA tests passed in
# results/2026-12-03-h200-decode-attn-cluster call 4), then mode: generate at batch 1 with --kernels fused: the
# default path against the same with $AB_ENV set (e.g. GPUBENCH_DECODE_RUN=1), alternating, twice each for TinyLlama
# and GPT-2; then transformers' eager generate while time is left. One archive $CALL.tar.gz. From the repository root:
#   OUT=... CALL=call1 AB_ENV=GPUBENCH_DECODE_RUN=1 GPUBENCH_GIT_REVISION=<commit> \
#     results/2026-12-03-h200-decode-run-output/run_gpubench.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT="${OUT:-$PWD/device-out}"
C="${CALL:-call1}"
W="$OUT/$C-$(date -u +%H%M%S)"  # a fresh folder: the machine's $OUT may hold older sessions' files
mkdir -p "$W/records"
log() { echo "== $(date -u +%H:%M:%S) [${SECONDS}s] $*" | tee -a "$W/session.log"; }
finish() { tar -C "$W" -czf "$OUT/$C.tar.gz" . && rm -rf "$W"; }
trap finish EXIT
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv > "$W/nvidia-smi.txt" 2>&1
GPUBENCH_BUILD_TARGETS="gpubench" OUT="$W" scripts/device_run.sh build > "$W/build_phase.log" 2>&1 \
  || { tail -40 "$W/build.log"; exit 1; }
rm -f "$W/records.tar.gz"
log "build done"
GB="$PWD/build-device/gpubench"
export GPUBENCH_BINARY="$GB" PYTHONUNBUFFERED=1
LIMIT=${LIMIT:-430}
gpubench() {  # NAME ARGS...
  local name="$1"; shift
  [ "$SECONDS" -gt "$LIMIT" ] && { log "$name: no time left"; return; }
  log "gpubench $name: $*"
  local left=$((${END:-470} - SECONDS)); [ "$left" -gt 60 ] && left=60
  timeout "$left" "$GB" run "$@" --mode generate --output "$W/records/gpubench_$name.json" > "$W/records/console_gpubench_$name.txt" 2>&1
  log "exit $?"
  grep -oE "decode \(median of generations\) \(tokens/s\): [0-9.]+|fraction of the roofline bound reached: [0-9.]+%|error.*" \
    "$W/records/console_gpubench_$name.txt" | tr '\n' ' ' | tee -a "$W/session.log"; echo | tee -a "$W/session.log"
}
reference() {
  local name="$1"; shift
  [ "$SECONDS" -gt "$LIMIT" ] && { log "$name: no time left"; return; }
  log "pytorch $name: $*"
  local left=$((${END:-470} - SECONDS)); [ "$left" -gt 80 ] && left=80
  timeout "$left" python3 scripts/pytorch_reference.py "$@" --mode generate --json "$W/records/pytorch_$name.json" \
    > "$W/records/console_pytorch_$name.txt" 2>&1
  log "exit $?"; grep -E '"(decode_tokens_per_s|mode)"' "$W/records/console_pytorch_$name.txt" | head -3 | tee -a "$W/session.log"
}
ab() { export "${AB_ENV:?}"; log "with $AB_ENV"; gpubench "$@"; unset "${AB_ENV%%=*}"; }
a="--precision bf16 --batch-size 1 --kernels fused"
gpubench llama_bs1_default llama $a
ab llama_bs1_ab llama $a
gpubench gpt2_bs1_default gpt2 $a
ab gpt2_bs1_ab gpt2 $a
ab llama_bs1_ab_2 llama $a
gpubench llama_bs1_default_2 llama $a
ab gpt2_bs1_ab_2 gpt2 $a
gpubench gpt2_bs1_default_2 gpt2 $a
reference gpt2_bs1 --model gpt2 --precision bf16 --batch-size 1
reference llama_bs1 --model llama --precision bf16 --batch-size 1
