#!/usr/bin/env bash
# gpubench built on the GPU machine, its decode CUDA tests, then mode: generate at batch 1 with --kernels fused:
# decode attention's cluster form (the default; for GPT-2 also the attention from the q/k/v product) against
# GPUBENCH_DECODE_ATTN_CLUSTER=0 (the form whose last block combines, and GPT-2's cache-write kernel), alternating,
# twice each; then transformers' eager generate (SET=refs, call 2). SET=final (call 3): attn_bench first (carried in
# build-bench/), no transformers, but clusters of up to 16 and batches 4 and 8 too. SET=check (call 4): the tests and
# one run of each default path (TinyLlama and GPT-2 bs 1, TinyLlama bs 4). One archive $CALL.tar.gz.
# From the repository root:
#   OUT=... CALL=call2 GPUBENCH_GIT_REVISION=<commit> results/2026-12-03-h200-decode-attn-cluster/run_gpubench.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT="${OUT:-$PWD/device-out}"
C="${CALL:-call2}"
W="$OUT/$C"
mkdir -p "$W/records"
log() { echo "== $(date -u +%H:%M:%S) [${SECONDS}s] $*" | tee -a "$W/session.log"; }
finish() { tar -C "$OUT" -czf "$OUT/$C.tar.gz" "$C" && rm -rf "$W"; }
trap finish EXIT
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv > "$W/nvidia-smi.txt" 2>&1
SET="${SET:-refs}"
if [ "$SET" = final ] && [ -x build-bench/attn_bench ]; then
  log "attn_bench"
  timeout 120 build-bench/attn_bench 22 640 576 5 200 > "$W/bench.txt" 2>&1; log "exit $?"
  grep -E "MISMATCH|correctness|^step|^attention" "$W/bench.txt" | tee -a "$W/session.log"
fi
GPUBENCH_BUILD_TARGETS="gpubench engine_tests" OUT="$W" scripts/device_run.sh build > "$W/build_phase.log" 2>&1 \
  || { tail -40 "$W/build.log"; exit 1; }
rm -f "$W/records.tar.gz"
log "build done"
GB="$PWD/build-device/gpubench"
export GPUBENCH_BINARY="$GB" PYTHONUNBUFFERED=1
log "CUDA tests: the decode operations, the step kernel, the decoders against transformers"
timeout 200 build-device/tests/engine_tests --gtest_filter='DecodeOps*_CUDA:DecodeStep*:DecoderParity*_CUDA' \
  > "$W/engine_cuda.log" 2>&1
log "exit $?"; grep -E "^\[  (PASSED|FAILED) |Failure|tests ran|^\[  FAILED" "$W/engine_cuda.log" | head -20 | tee -a "$W/session.log"
LIMIT=${LIMIT:-480}
gpubench() {  # NAME ARGS...
  local name="$1"; shift
  [ "$SECONDS" -gt "$LIMIT" ] && { log "$name: no time left"; return; }
  log "gpubench $name: $*"
  local left=$((${END:-585} - SECONDS)); [ "$left" -gt 90 ] && left=90
  timeout "$left" "$GB" run "$@" --mode generate --output "$W/records/gpubench_$name.json" > "$W/records/console_gpubench_$name.txt" 2>&1
  log "exit $?"
  grep -oE "decode \(median of generations\) \(tokens/s\): [0-9.]+|fraction of the roofline bound reached: [0-9.]+%|error.*" \
    "$W/records/console_gpubench_$name.txt" | tr '\n' ' ' | tee -a "$W/session.log"; echo | tee -a "$W/session.log"
}
reference() {
  local name="$1"; shift
  [ "$SECONDS" -gt "$LIMIT" ] && { log "$name: no time left"; return; }
  log "pytorch $name: $*"
  local left=$((${END:-585} - SECONDS)); [ "$left" -gt 100 ] && left=100
  timeout "$left" python3 scripts/pytorch_reference.py "$@" --mode generate --json "$W/records/pytorch_$name.json" \
    > "$W/records/console_pytorch_$name.txt" 2>&1
  log "exit $?"; grep -E '"(ttft_ms|decode_tokens_per_s|mode|compile_error)"' "$W/records/console_pytorch_$name.txt" | head -4 | tee -a "$W/session.log"
}
before() { GPUBENCH_DECODE_ATTN_CLUSTER=0 gpubench "$@"; }
a=(--precision bf16 --batch-size 1 --kernels fused)
if [ "$SET" = check ]; then  # call 4: the final commit's tests and one run of each default path
  gpubench llama_bs1 llama "${a[@]}"
  gpubench gpt2_bs1 gpt2 "${a[@]}"
  gpubench llama_bs4 llama --precision bf16 --kernels fused --batch-size 4
  exit 0
fi
gpubench llama_bs1_cluster llama "${a[@]}"
before llama_bs1_before llama "${a[@]}"
gpubench gpt2_bs1_cluster gpt2 "${a[@]}"
before gpt2_bs1_before gpt2 "${a[@]}"
before llama_bs1_before_2 llama "${a[@]}"
gpubench llama_bs1_cluster_2 llama "${a[@]}"
before gpt2_bs1_before_2 gpt2 "${a[@]}"
gpubench gpt2_bs1_cluster_2 gpt2 "${a[@]}"
if [ "$SET" = final ]; then
  c16() { GPUBENCH_DECODE_ATTN_CLUSTER=16 gpubench "$@"; }
  c16 llama_bs1_cluster16 llama "${a[@]}"
  c16 gpt2_bs1_cluster16 gpt2 "${a[@]}"
  b=(--precision bf16 --kernels fused)
  gpubench llama_bs4_cluster llama "${b[@]}" --batch-size 4
  before llama_bs4_before llama "${b[@]}" --batch-size 4
  before llama_bs8_before llama "${b[@]}" --batch-size 8
  gpubench llama_bs8_cluster llama "${b[@]}" --batch-size 8
else
  reference llama_bs1 --model llama --precision bf16 --batch-size 1
  reference gpt2_bs1 --model gpt2 --precision bf16 --batch-size 1
fi
