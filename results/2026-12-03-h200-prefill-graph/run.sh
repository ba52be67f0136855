#!/usr/bin/env bash
# One device call: the prefill captured in a CUDA graph (GPUBENCH_PREFILL_GRAPH=0: eager) and the checks the last
# session left unrun.
# - While gpubench and its engine and parity tests build on the CPUs, PyTorch's strongest forms run once each on the
#   GPU: --mode generate --graph --compile for both decoders (their records say how many leading tokens agree with the
#   uncompiled forward's: tokens_agree_with_uncompiled) and --mode inference --graph --compile at 512 tokens (the
#   prompt's forward; this also fills inductor's cache for the timed runs after the build). Their times are not used.
# - The decode and generate CUDA tests through ctest (the parity tests' export fixture first).
# - gpubench --mode generate --kernels fused at batch 1, the prefill graph on (default) and off, alternated, both
#   decoders; TinyLlama at batch 32 too; one run each with the step's ends off (GPUBENCH_DECODE_GREEDY_TAIL=0
#   GPUBENCH_DECODE_EMBED=0): the records' token digests must equal.
# - The prompt's forward alone at 512 tokens, batch 1: gpubench --mode inference --graph against PyTorch's --graph
#   --compile, alternated.
# One archive, $OUT/<CALL>-<time>.tar.gz. From the repository root (carry [".deps"]):
#   OUT=... CALL=prefill GPUBENCH_GIT_REVISION=<commit> results/2026-12-03-h200-prefill-graph/run.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT="${OUT:-$PWD/device-out}"
C="${CALL:-prefill}-$(date -u +%H%M%S)"
W="$OUT/$C"
mkdir -p "$W/records" "$W/smoke"
log() { echo "== $(date -u +%H:%M:%S) [${SECONDS}s] $*" | tee -a "$W/session.log"; }
finish() { tar -C "$OUT" -czf "$OUT/$C.tar.gz" "$C" && rm -rf "$W"; }
trap finish EXIT
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv \
  > "$W/nvidia-smi.txt" 2>&1
export PYTHONUNBUFFERED=1
CAT=results/2026-12-03-h200-decode-early-loads/catalog.json  # gpubench's catalog before its build is there
LIMIT="${LIMIT:-540}"
reference() {  # DIR NAME SECONDS ARGS...
  local dir=$1 name=$2 t=$3; shift 3
  [ "$SECONDS" -gt "$LIMIT" ] && { log "$name: no time left"; return; }
  local left=$((${END:-590} - SECONDS)); [ "$left" -gt "$t" ] && left=$t
  log "pytorch $dir/$name: $*"
  timeout "$left" python3 scripts/pytorch_reference.py "$@" --catalog "$CAT" \
    --json "$W/$dir/pytorch_$name.json" > "$W/$dir/console_pytorch_$name.txt" 2>&1
  log "$dir/$name exit $?"
  grep -E '"(status|reason|ttft_ms|decode_tokens_per_s|itl_p50_ms|warmup_seconds|tokens_agree_with_uncompiled|latency_p50_ms|samples_per_s)"|warning' \
    "$W/$dir/console_pytorch_$name.txt" | head -8 | tee -a "$W/session.log"
  tail -4 "$W/$dir/console_pytorch_$name.txt" | grep -iE "error|exception" | tee -a "$W/session.log"
}
ll=(--model llama --precision bf16 --batch-size 1)
g2=(--model gpt2 --precision bf16 --batch-size 1)
fw=(--mode inference --seq-len 512 --dataset-size 200 --warmup-steps 5)
(  # on the GPU while the build runs: the compiled forms' self-check, and inductor's cache filled
  reference smoke gpt2_graph_compile 120 "${g2[@]}" --mode generate --graph --compile --repetitions 1
  reference smoke llama_graph_compile 170 "${ll[@]}" --mode generate --graph --compile --repetitions 1
  reference smoke llama_forward512_graph_compile 100 "${ll[@]}" "${fw[@]}" --graph --compile
) &
GPUBENCH_BUILD_TARGETS="gpubench engine_tests decoder_parity_tests" OUT="$W" scripts/device_run.sh build \
  > "$W/build_phase.log" 2>&1 || { tail -40 "$W/build.log"; exit 1; }
rm -f "$W/records.tar.gz"
log "build done"
wait
log "smoke runs done"
GB="$PWD/build-device/gpubench"
export GPUBENCH_BINARY="$GB"
log "CUDA tests (ctest, with the parity tests' export fixture)"
(cd build-device && timeout 150 ctest --output-on-failure \
  -R "(DecodeOps|DecodeStep|DecoderParity|GenerateTest|InferenceModeTest).*_CUDA" > "$W/ctest_cuda.log" 2>&1)
log "exit $?"
grep -E "tests passed|tests failed|\(Failed\)|_CUDA .*(Passed|Failed)" "$W/ctest_cuda.log" | tail -24 | tee -a "$W/session.log"
gpubench() {  # NAME ARGS...
  local name="$1"; shift
  [ "$SECONDS" -gt "$LIMIT" ] && { log "$name: no time left"; return; }
  log "gpubench $name (PREFILL_GRAPH=${GPUBENCH_PREFILL_GRAPH-default} GREEDY_TAIL=${GPUBENCH_DECODE_GREEDY_TAIL-default}): $*"
  timeout 90 "$GB" run "$@" --output "$W/records/gpubench_$name.json" > "$W/records/console_gpubench_$name.txt" 2>&1
  log "exit $?"
  python3 results/2026-12-03-h200-prefill-graph/summarize.py --one "$W/records/gpubench_$name.json" 2>&1 \
    | tee -a "$W/session.log"
}
eager() { GPUBENCH_PREFILL_GRAPH=0 gpubench "$@"; }
ends_off() { GPUBENCH_DECODE_GREEDY_TAIL=0 GPUBENCH_DECODE_EMBED=0 gpubench "$@"; }
a=(--mode generate --precision bf16 --batch-size 1 --kernels fused)
gpubench llama_bs1 llama "${a[@]}"
eager llama_bs1_eager llama "${a[@]}"
gpubench gpt2_bs1 gpt2 "${a[@]}"
eager gpt2_bs1_eager gpt2 "${a[@]}"
eager gpt2_bs1_eager_2 gpt2 "${a[@]}"
gpubench gpt2_bs1_2 gpt2 "${a[@]}"
eager llama_bs1_eager_2 llama "${a[@]}"
gpubench llama_bs1_2 llama "${a[@]}"
ends_off gpt2_bs1_ends_off gpt2 "${a[@]}"
ends_off llama_bs1_ends_off llama "${a[@]}"
gpubench llama_forward512 llama --mode inference --precision bf16 --batch-size 1 --seq-len 512 --dataset-size 200 \
  --warmup-steps 5 --cuda-graph true
reference records llama_forward512_graph_compile 80 "${ll[@]}" "${fw[@]}" --graph --compile
gpubench llama_forward512_2 llama --mode inference --precision bf16 --batch-size 1 --seq-len 512 --dataset-size 200 \
  --warmup-steps 5 --cuda-graph true
b=(--mode generate --precision bf16 --batch-size 32 --kernels fused --epochs 3)
gpubench llama_bs32 llama "${b[@]}"
eager llama_bs32_eager llama "${b[@]}"
log "done"
