#!/usr/bin/env bash
# gpubench built on the GPU machine, its decode CUDA tests, then mode: generate at batch 1 with --kernels fused:
# the committed L2 prefetch setting (the default) against GPUBENCH_DECODE_PREFETCH=0 (off), alternating, twice each,
# for TinyLlama and GPT-2; then each setting in $VARIANTS once per model (GPUBENCH_DECODE_PREFETCH=A,M,N), then
# transformers' eager generate (REFS=1). BENCH: prefetch_bench configurations run beside the build (carried in
# build-bench/). One archive $CALL.tar.gz. From the repository root:
#   OUT=... CALL=call2 GPUBENCH_GIT_REVISION=<commit> VARIANTS="1,0,0 0.5,0.5,1" \
#     results/2026-12-03-h200-decode-l2-prefetch/run_gpubench.sh
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
if [ -n "${BENCH:-}" ] && [ -x build-bench/prefetch_bench ]; then  # on the GPU while the build runs on the CPUs
  log "prefetch_bench (beside the build): $BENCH"
  # shellcheck disable=SC2086
  (timeout 200 build-bench/prefetch_bench 22 640 576 5 200 $BENCH > "$W/bench.txt" 2>&1; echo "exit $?" >> "$W/bench.txt") &
fi
GPUBENCH_BUILD_TARGETS="gpubench engine_tests" OUT="$W" scripts/device_run.sh build > "$W/build_phase.log" 2>&1 \
  || { tail -40 "$W/build.log"; exit 1; }
wait
[ -f "$W/bench.txt" ] && grep -E "correctness|x \(means|exit" "$W/bench.txt" | tee -a "$W/session.log"
rm -f "$W/records.tar.gz"
log "build done"
GB="$PWD/build-device/gpubench"
export GPUBENCH_BINARY="$GB" PYTHONUNBUFFERED=1
if [ "${TESTS:-1}" = 1 ]; then
  log "CUDA tests: the decode operations, the decoders against transformers"
  timeout 200 build-device/tests/engine_tests --gtest_filter='DecodeOps*_CUDA:DecoderParity*_CUDA' \
    > "$W/engine_cuda.log" 2>&1
  log "exit $?"; grep -E "^\[  (PASSED|FAILED) |Failure|tests ran|^\[  FAILED" "$W/engine_cuda.log" | head -20 | tee -a "$W/session.log"
fi
LIMIT=${LIMIT:-480}
gpubench() {  # NAME ARGS...
  local name="$1"; shift
  [ "$SECONDS" -gt "$LIMIT" ] && { log "$name: no time left"; return; }
  log "gpubench $name (GPUBENCH_DECODE_PREFETCH=${GPUBENCH_DECODE_PREFETCH-default}): $*"
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
off() { GPUBENCH_DECODE_PREFETCH=0 gpubench "$@"; }
a=(--precision bf16 --batch-size 1 --kernels fused)
gpubench llama_bs1_prefetch llama "${a[@]}"
off llama_bs1_off llama "${a[@]}"
gpubench gpt2_bs1_prefetch gpt2 "${a[@]}"
off gpt2_bs1_off gpt2 "${a[@]}"
off llama_bs1_off_2 llama "${a[@]}"
gpubench llama_bs1_prefetch_2 llama "${a[@]}"
off gpt2_bs1_off_2 gpt2 "${a[@]}"
gpubench gpt2_bs1_prefetch_2 gpt2 "${a[@]}"
for v in ${VARIANTS:-}; do
  tag=$(echo "$v" | tr ',.' '__')
  GPUBENCH_DECODE_PREFETCH="$v" gpubench "llama_bs1_pf$tag" llama "${a[@]}"
  GPUBENCH_DECODE_PREFETCH="$v" gpubench "gpt2_bs1_pf$tag" gpt2 "${a[@]}"
done
if [ "${REFS:-1}" = 1 ]; then
  reference llama_bs1 --model llama --precision bf16 --batch-size 1
  reference gpt2_bs1 --model gpt2 --precision bf16 --batch-size 1
fi
