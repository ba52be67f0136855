#!/usr/bin/env bash
# One device call: ab_bench (built here by build.sh, carried in build-bench/ as ab_bench.xz) on the GPU while gpubench builds on the
# CPUs; the decode CUDA tests; gpubench --mode generate at batch 1 with --kernels fused, the committed setting (L2
# evict_first for the streamed and run GEMVs' weights) alternated with GPUBENCH_DECODE_EVICT_FIRST=0, twice each, for
# TinyLlama and GPT-2; TinyLlama with GPUBENCH_DECODE_RUN=1 (its output product on the run GEMV); then transformers'
# eager generate for both (REFS=1). PLAN=graph instead alternates gpubench with scripts/pytorch_reference.py --graph
# (gpt-fast's recipe) and --graph --compile, for both models (REF_LIMIT=150 gives the compiles time). Everything goes
# into one archive, $OUT/<CALL>-<time>.tar.gz. From the repository root:
#   OUT=... CALL=call1 GPUBENCH_GIT_REVISION=<commit> results/2026-12-03-h200-decode-early-loads/run_gpubench.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT="${OUT:-$PWD/device-out}"
C="${CALL:-call1}-$(date -u +%H%M%S)"
W="$OUT/$C"
mkdir -p "$W/records"
log() { echo "== $(date -u +%H:%M:%S) [${SECONDS}s] $*" | tee -a "$W/session.log"; }
finish() { tar -C "$OUT" -czf "$OUT/$C.tar.gz" "$C" && rm -rf "$W"; }
trap finish EXIT
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv \
  > "$W/nvidia-smi.txt" 2>&1
if [ -f build-bench/ab_bench.xz ]; then  # carried compressed (the working tree's limit); xz of the stripped binary
  python3 -c "import lzma, sys; open('build-bench/ab_bench', 'wb').write(lzma.open('build-bench/ab_bench.xz').read())"
  chmod +x build-bench/ab_bench
fi
if [ -x build-bench/ab_bench ]; then  # on the GPU while the build runs on the CPUs
  log "ab_bench (beside the build)"
  (timeout 200 build-bench/ab_bench 22 12 640 576 5 200 > "$W/bench.txt" 2>&1; echo "exit $?" >> "$W/bench.txt") &
fi
GPUBENCH_BUILD_TARGETS="gpubench engine_tests" OUT="$W" scripts/device_run.sh build > "$W/build_phase.log" 2>&1 \
  || { tail -40 "$W/build.log"; exit 1; }
wait
[ -f "$W/bench.txt" ] && cat "$W/bench.txt" | tee -a "$W/session.log"
rm -f "$W/records.tar.gz"
log "build done"
GB="$PWD/build-device/gpubench"
export GPUBENCH_BINARY="$GB" PYTHONUNBUFFERED=1
log "CUDA tests: the decode operations, the decoders against transformers"
timeout 200 build-device/tests/engine_tests --gtest_filter='DecodeOps*_CUDA:DecoderParity*_CUDA:DecodeStep*_CUDA' \
  > "$W/engine_cuda.log" 2>&1
log "exit $?"
grep -E "^\[  (PASSED|FAILED) |Failure|tests ran|^\[  FAILED" "$W/engine_cuda.log" | head -20 | tee -a "$W/session.log"
LIMIT=${LIMIT:-480}
gpubench() {  # NAME ARGS...
  local name="$1"; shift
  [ "$SECONDS" -gt "$LIMIT" ] && { log "$name: no time left"; return; }
  log "gpubench $name (EVICT_FIRST=${GPUBENCH_DECODE_EVICT_FIRST-default} RUN=${GPUBENCH_DECODE_RUN-default}): $*"
  local left=$((${END:-585} - SECONDS)); [ "$left" -gt 90 ] && left=90
  timeout "$left" "$GB" run "$@" --mode generate --output "$W/records/gpubench_$name.json" \
    > "$W/records/console_gpubench_$name.txt" 2>&1
  log "exit $?"
  grep -oE "decode \(median of generations\) \(tokens/s\): [0-9.]+|fraction of the roofline bound reached: [0-9.]+%|error.*" \
    "$W/records/console_gpubench_$name.txt" | tr '\n' ' ' | tee -a "$W/session.log"; echo | tee -a "$W/session.log"
}
reference() {
  local name="$1"; shift
  [ "$SECONDS" -gt "$LIMIT" ] && { log "$name: no time left"; return; }
  log "pytorch $name: $*"
  local left=$((${END:-585} - SECONDS)); [ "$left" -gt "${REF_LIMIT:-100}" ] && left=${REF_LIMIT:-100}
  timeout "$left" python3 scripts/pytorch_reference.py "$@" --mode generate --json "$W/records/pytorch_$name.json" \
    > "$W/records/console_pytorch_$name.txt" 2>&1
  log "exit $?"
  grep -E '"(ttft_ms|decode_tokens_per_s|mode|compile_error)"' "$W/records/console_pytorch_$name.txt" | head -4 \
    | tee -a "$W/session.log"
}
off() { GPUBENCH_DECODE_EVICT_FIRST=0 gpubench "$@"; }
a=(--precision bf16 --batch-size 1 --kernels fused)
if [ "${PLAN:-evict}" = graph ]; then  # gpubench against gpt-fast's recipe in PyTorch (--graph), alternated
  gpubench llama_bs1 llama "${a[@]}"
  reference llama_bs1_graph --model llama --precision bf16 --batch-size 1 --graph
  gpubench gpt2_bs1 gpt2 "${a[@]}"
  reference gpt2_bs1_graph --model gpt2 --precision bf16 --batch-size 1 --graph
  reference llama_bs1_graph_compile --model llama --precision bf16 --batch-size 1 --graph --compile
  gpubench llama_bs1_2 llama "${a[@]}"
  reference gpt2_bs1_graph_compile --model gpt2 --precision bf16 --batch-size 1 --graph --compile
  gpubench gpt2_bs1_2 gpt2 "${a[@]}"
  exit 0
fi
gpubench llama_bs1 llama "${a[@]}"
off llama_bs1_normal llama "${a[@]}"
gpubench gpt2_bs1 gpt2 "${a[@]}"
off gpt2_bs1_normal gpt2 "${a[@]}"
off llama_bs1_normal_2 llama "${a[@]}"
gpubench llama_bs1_2 llama "${a[@]}"
off gpt2_bs1_normal_2 gpt2 "${a[@]}"
gpubench gpt2_bs1_2 gpt2 "${a[@]}"
GPUBENCH_DECODE_RUN=1 gpubench llama_bs1_run1 llama "${a[@]}"
if [ "${REFS:-1}" = 1 ]; then
  reference llama_bs1 --model llama --precision bf16 --batch-size 1
  reference gpt2_bs1 --model gpt2 --precision bf16 --batch-size 1
fi
gpubench llama_bs1_3 llama "${a[@]}"
