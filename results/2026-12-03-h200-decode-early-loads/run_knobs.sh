#!/usr/bin/env bash
# One device call: gpubench (built here, the committed kernels) at batch 1 with --kernels fused under the decode
# kernels' existing switches, each run between runs of the default, now that the weights stream with L2 evict_first:
# the attention's least split (GPUBENCH_DECODE_ATTN_MIN_SPLIT), its cluster limit (GPUBENCH_DECODE_ATTN_CLUSTER), and
# GPT-2's products on the run or streamed GEMV (GPUBENCH_DECODE_RUN=1, GPUBENCH_DECODE_STREAM=1). One archive,
# $OUT/<CALL>-<time>.tar.gz. From the repository root:
#   OUT=... CALL=knobs GPUBENCH_GIT_REVISION=<commit> results/2026-12-03-h200-decode-early-loads/run_knobs.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT="${OUT:-$PWD/device-out}"
C="${CALL:-knobs}-$(date -u +%H%M%S)"
W="$OUT/$C"
mkdir -p "$W/records"
log() { echo "== $(date -u +%H:%M:%S) [${SECONDS}s] $*" | tee -a "$W/session.log"; }
finish() { tar -C "$OUT" -czf "$OUT/$C.tar.gz" "$C" && rm -rf "$W"; }
trap finish EXIT
GPUBENCH_BUILD_TARGETS="gpubench" GPUBENCH_WITH_TESTS=OFF OUT="$W" scripts/device_run.sh build > "$W/build_phase.log" 2>&1 \
  || { tail -40 "$W/build.log"; exit 1; }
rm -f "$W/records.tar.gz"
log "build done"
GB="$PWD/build-device/gpubench"
LIMIT=${LIMIT:-480}
run() {  # NAME "ENV=..." MODEL
  local name="$1" envs="$2" model="$3"
  [ "$SECONDS" -gt "$LIMIT" ] && { log "$name: no time left"; return; }
  log "gpubench $name ($envs)"
  local left=$((${END:-585} - SECONDS)); [ "$left" -gt 90 ] && left=90
  # shellcheck disable=SC2086
  env $envs timeout "$left" "$GB" run "$model" --precision bf16 --batch-size 1 --kernels fused --mode generate \
    --output "$W/records/gpubench_$name.json" > "$W/records/console_gpubench_$name.txt" 2>&1
  log "exit $?"
  grep -oE "decode \(median of generations\) \(tokens/s\): [0-9.]+|fraction of the roofline bound reached: [0-9.]+%|error.*" \
    "$W/records/console_gpubench_$name.txt" | tr '\n' ' ' | tee -a "$W/session.log"; echo | tee -a "$W/session.log"
}
run gpt2_default "X=1" gpt2
run gpt2_split32 "GPUBENCH_DECODE_ATTN_MIN_SPLIT=32" gpt2
run gpt2_split128 "GPUBENCH_DECODE_ATTN_MIN_SPLIT=128" gpt2
run gpt2_default_2 "X=1" gpt2
run gpt2_cluster16 "GPUBENCH_DECODE_ATTN_CLUSTER=16" gpt2
run gpt2_run1 "GPUBENCH_DECODE_RUN=1" gpt2
run gpt2_default_3 "X=1" gpt2
run gpt2_stream1 "GPUBENCH_DECODE_STREAM=1" gpt2
run gpt2_split16 "GPUBENCH_DECODE_ATTN_MIN_SPLIT=16" gpt2
run gpt2_default_4 "X=1" gpt2
run llama_default "X=1" llama
run llama_split32 "GPUBENCH_DECODE_ATTN_MIN_SPLIT=32" llama
run llama_split128 "GPUBENCH_DECODE_ATTN_MIN_SPLIT=128" llama
run llama_default_2 "X=1" llama
run llama_cluster16 "GPUBENCH_DECODE_ATTN_CLUSTER=16" llama
run llama_default_3 "X=1" llama
