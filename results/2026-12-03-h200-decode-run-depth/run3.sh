#!/usr/bin/env bash
# The end-to-end call (carry [".deps"]): a gpubench build of this commit with the engine and parity tests (while
# PyTorch's compiled references run once each, filling inductor's cache), the decode CUDA tests through ctest, then
# gpubench --mode generate --kernels fused at batch 1 (TinyLlama, GPT-2) alternated with scripts/pytorch_reference.py
# --mode generate --graph --compile (gpt-fast's recipe on transformers' model). One archive, $OUT/<CALL>-<time>.tar.gz.
#   OUT=... CALL=call3 GPUBENCH_GIT_REVISION=<commit> results/2026-12-03-h200-decode-run-depth/run3.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT="${OUT:-$PWD/device-out}"
C="${CALL:-call3}-$(date -u +%H%M%S)"
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
  local left=$((${END:-580} - SECONDS)); [ "$left" -gt "$t" ] && left=$t
  log "pytorch $dir/$name: $*"
  timeout "$left" python3 scripts/pytorch_reference.py "$@" --catalog "$CAT" --mode generate \
    --json "$W/$dir/pytorch_$name.json" > "$W/$dir/console_pytorch_$name.txt" 2>&1
  log "$dir/$name exit $?"
  grep -E '"(status|reason|ttft_ms|decode_tokens_per_s|itl_p50_ms|tokens_agree_with_uncompiled)"' \
    "$W/$dir/console_pytorch_$name.txt" | head -6 | tee -a "$W/session.log"
}
ll=(--model llama --precision bf16 --batch-size 1)
g2=(--model gpt2 --precision bf16 --batch-size 1)
(  # on the GPU while the build runs: the compiled forms' self-check, and inductor's cache filled
  reference smoke gpt2_graph_compile 120 "${g2[@]}" --graph --compile --repetitions 1
  reference smoke llama_graph_compile 170 "${ll[@]}" --graph --compile --repetitions 1
) &
GPUBENCH_BUILD_TARGETS="gpubench engine_tests decoder_parity_tests" OUT="$W" scripts/device_run.sh build \
  > "$W/build_phase.log" 2>&1 || { tail -40 "$W/build.log"; exit 1; }
rm -f "$W/records.tar.gz"
log "build done"
wait
log "smoke runs done"
GB="$PWD/build-device/gpubench"
(cd build-device && timeout 90 ctest --output-on-failure -R "(DecodeOps|DecodeStep|DecoderParity|GenerateTest).*_CUDA" \
  > "$W/ctest_cuda.log" 2>&1)
log "ctest exit $?"
grep -E "tests passed|tests failed|\(Failed\)" "$W/ctest_cuda.log" | tail -6 | tee -a "$W/session.log"
gpubench() {  # NAME ARGS...
  local name="$1"; shift
  [ "$SECONDS" -gt "${LIMIT:-500}" ] && { log "$name: no time left"; return; }
  log "gpubench $name: $*"
  timeout 60 "$GB" run "$@" --output "$W/records/gpubench_$name.json" > "$W/records/console_gpubench_$name.txt" 2>&1
  log "exit $?"
  python3 results/2026-12-03-h200-prefill-graph/summarize.py --one "$W/records/gpubench_$name.json" 2>&1 \
    | tee -a "$W/session.log"
}
a=(--mode generate --precision bf16 --batch-size 1 --kernels fused)
gpubench llama_bs1 llama "${a[@]}"
reference records llama_bs1_graph_compile 70 "${ll[@]}" --graph --compile
gpubench gpt2_bs1 gpt2 "${a[@]}"
reference records gpt2_bs1_graph_compile 60 "${g2[@]}" --graph --compile
gpubench llama_bs1_2 llama "${a[@]}"
gpubench gpt2_bs1_2 gpt2 "${a[@]}"
reference records llama_bs1_graph_compile_2 70 "${ll[@]}" --graph --compile
gpubench llama_bs1_3 llama "${a[@]}"
log "done"
