#!/usr/bin/env bash
# One device call: the decode step's ends as decode kernels, measured in gpubench --mode generate --kernels fused at
# batch 1: the LM head's launch ending the greedy step (decode_lm_head_greedy: the argmax, the token, the history and
# the position in the run GEMV's last block) and the embeddings as one programmatic launch (decode_embed), alternated
# with both off (GPUBENCH_DECODE_GREEDY_TAIL=0 GPUBENCH_DECODE_EMBED=0: the two argmax launches, three ATen copies and
# ATen's embedding as before) and each off alone, for GPT-2 and TinyLlama; the decode CUDA tests first; then
# scripts/pytorch_reference.py --graph --compile with gpt-fast's inductor settings (coordinate descent tuning),
# alternated with gpubench. While gpubench builds on the
# CPUs, each compiled reference runs once untimed (it fills inductor's caches, so the timed runs spend less of the call
# compiling). Everything goes into one archive, $OUT/<CALL>-<time>.tar.gz. From the repository root (carry [".deps"]):
#   OUT=... CALL=tail GPUBENCH_GIT_REVISION=<commit> results/2026-12-03-h200-decode-greedy-tail/run.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT="${OUT:-$PWD/device-out}"
C="${CALL:-tail}-$(date -u +%H%M%S)"
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
  [ "$SECONDS" -gt "${LIMIT:-500}" ] && { log "$name: no time left"; return; }
  local left=$((${END:-585} - SECONDS)); [ "$left" -gt "$t" ] && left=$t
  log "pytorch $dir/$name: $*"
  timeout "$left" python3 scripts/pytorch_reference.py "$@" --catalog "$CAT" --mode generate \
    --json "$W/$dir/pytorch_$name.json" > "$W/$dir/console_pytorch_$name.txt" 2>&1
  log "$dir/$name exit $?"
  grep -E '"(status|reason|ttft_ms|decode_tokens_per_s|itl_p50_ms|warmup_seconds)"' "$W/$dir/console_pytorch_$name.txt" \
    | head -6 | tee -a "$W/session.log"
  tail -4 "$W/$dir/console_pytorch_$name.txt" | grep -iE "error|exception" | tee -a "$W/session.log"
}
ll=(--model llama --precision bf16 --batch-size 1 --graph --compile)
g2=(--model gpt2 --precision bf16 --batch-size 1 --graph --compile)
(  # untimed first compiles, on the GPU while the build runs
  reference smoke gpt2_graph_compile 150 "${g2[@]}" --repetitions 1
  reference smoke llama_graph_compile 200 "${ll[@]}" --repetitions 1
) &
GPUBENCH_BUILD_TARGETS="gpubench engine_tests decoder_parity_tests" OUT="$W" scripts/device_run.sh build \
  > "$W/build_phase.log" 2>&1 || { tail -40 "$W/build.log"; exit 1; }
log "build done"
wait
log "smoke runs done"
rm -f "$W/records.tar.gz"
GB="$PWD/build-device/gpubench"
export GPUBENCH_BINARY="$GB"
log "CUDA tests: the decode operations and the step kernel; the decoders against transformers"
timeout 150 build-device/tests/engine_tests --gtest_filter='DecodeOps*_CUDA:DecodeStep*_CUDA' > "$W/engine_cuda.log" 2>&1
log "exit $?"
grep -E "^\[  (PASSED|FAILED) |Failure|tests ran|^\[  FAILED" "$W/engine_cuda.log" | head -20 | tee -a "$W/session.log"
timeout 100 build-device/tests/decoder_parity_tests --gtest_filter='*_CUDA' > "$W/parity_cuda.log" 2>&1
log "exit $?"
grep -E "^\[  (PASSED|FAILED) |Failure|tests ran|^\[  FAILED" "$W/parity_cuda.log" | head -20 | tee -a "$W/session.log"
gpubench() {  # NAME ARGS...
  local name="$1"; shift
  [ "$SECONDS" -gt "${LIMIT:-500}" ] && { log "$name: no time left"; return; }
  log "gpubench $name (GREEDY_TAIL=${GPUBENCH_DECODE_GREEDY_TAIL-default} EMBED=${GPUBENCH_DECODE_EMBED-default}): $*"
  timeout 60 "$GB" run "$@" --mode generate --output "$W/records/gpubench_$name.json" \
    > "$W/records/console_gpubench_$name.txt" 2>&1
  log "exit $?"
  grep -oE "decode \(median of generations\) \(tokens/s\): [0-9.]+|fraction of the roofline bound reached: [0-9.]+%|error.*" \
    "$W/records/console_gpubench_$name.txt" | tr '\n' ' ' | tee -a "$W/session.log"; echo | tee -a "$W/session.log"
}
off() { GPUBENCH_DECODE_GREEDY_TAIL=0 GPUBENCH_DECODE_EMBED=0 gpubench "$@"; }  # the step as before both
a=(--precision bf16 --batch-size 1 --kernels fused)
for model in gpt2 llama; do
  gpubench ${model}_bs1 $model "${a[@]}"
  off ${model}_bs1_off $model "${a[@]}"
  GPUBENCH_DECODE_GREEDY_TAIL=0 gpubench ${model}_bs1_off_tail $model "${a[@]}"
  GPUBENCH_DECODE_EMBED=0 gpubench ${model}_bs1_off_embed $model "${a[@]}"
  off ${model}_bs1_off_2 $model "${a[@]}"
  gpubench ${model}_bs1_2 $model "${a[@]}"
done
reference records llama_bs1_graph_compile 120 "${ll[@]}"
gpubench llama_bs1_3 llama "${a[@]}"
reference records gpt2_bs1_graph_compile 90 "${g2[@]}"
gpubench gpt2_bs1_3 gpt2 "${a[@]}"
