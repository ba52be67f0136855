#!/usr/bin/env bash
# The step kernel bench (step_bench, carried in build-bench/, built by build.sh here), then gpubench built on the GPU
# machine: the step kernel's CUDA tests and mode: generate at batch 1 with --kernels fused, the whole step one kernel
# against the decode operations' step, alternating, and transformers' eager generate. (Call 3, 6bbabf3: the step
# kernel by default, GPUBENCH_DECODE_STEP=0 the decode operations; from call 5 on it is off by default and
# GPUBENCH_DECODE_STEP=1 asks for it: the runs named _step are the step kernel, _before / _default the other path.) One archive $CALL.tar.gz. From the repository root:
#   OUT=... CALL=call3 GPUBENCH_GIT_REVISION=<commit> results/2026-12-03-h200-decode-step-kernel/run_gpubench.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT="${OUT:-$PWD/device-out}"
C="${CALL:-call3}"
W="$OUT/$C"
mkdir -p "$W/records"
log() { echo "== $(date -u +%H:%M:%S) [${SECONDS}s] $*" | tee -a "$W/session.log"; }
finish() { tar -C "$OUT" -czf "$OUT/$C.tar.gz" "$C" && rm -rf "$W"; }
trap finish EXIT
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv > "$W/nvidia-smi.txt" 2>&1
if [ -x build-bench/step_bench ]; then
  log "step_bench (TinyLlama's shapes, then two layers)"
  timeout 60 build-bench/step_bench 22 640 576 3 200 > "$W/bench.txt" 2>&1; log "exit $?"
  timeout 60 build-bench/step_bench 2 256 100 3 100 > "$W/bench-two-layers.txt" 2>&1; log "exit $?"
  [ -x build-bench/step_bench_v1 ] && { timeout 60 build-bench/step_bench_v1 22 640 576 2 100 > "$W/bench-v1.txt" 2>&1; log "exit $?"; }
  grep -A14 "^step " "$W/bench.txt" | tee -a "$W/session.log"
fi
GPUBENCH_BUILD_TARGETS="gpubench engine_tests" OUT="$W" scripts/device_run.sh build > "$W/build_phase.log" 2>&1 \
  || { tail -40 "$W/build.log"; exit 1; }
rm -f "$W/records.tar.gz"
log "build done"
GB="$PWD/build-device/gpubench"
export GPUBENCH_BINARY="$GB" PYTHONUNBUFFERED=1
log "CUDA tests: the step kernel and the decode operations"
timeout 150 build-device/tests/engine_tests --gtest_filter='DecodeStep*:DecodeOps*_CUDA' > "$W/engine_cuda.log" 2>&1
log "exit $?"; grep -E "^\[  (PASSED|FAILED) |Failure|tests ran|^\[  FAILED|OK \] DecodeStep" "$W/engine_cuda.log" | head -20 | tee -a "$W/session.log"
LIMIT=${LIMIT:-500}
gpubench() {  # NAME ARGS...
  local name="$1"; shift
  [ "$SECONDS" -gt "$LIMIT" ] && { log "$name: no time left"; return; }
  log "gpubench $name: $*"
  local left=$((${END:-585} - SECONDS)); [ "$left" -gt 90 ] && left=90
  timeout "$left" "$GB" run "$@" --mode generate --output "$W/records/gpubench_$name.json" > "$W/records/console_gpubench_$name.txt" 2>&1
  log "exit $?"
  grep -oE "decode \(median of generations\) \(tokens/s\): [0-9.]+|fraction of the roofline bound reached: [0-9.]+%|time to first token / the prompt's forward alone: [0-9.]+|decode step: [^|]*|error.*" \
    "$W/records/console_gpubench_$name.txt" | tr '\n' ' ' | tee -a "$W/session.log"; echo | tee -a "$W/session.log"
}
reference() {
  local name="$1"; shift
  [ "$SECONDS" -gt "$LIMIT" ] && { log "$name: no time left"; return; }
  log "pytorch $name: $*"
  local left=$((${END:-585} - SECONDS)); [ "$left" -gt 120 ] && left=120
  timeout "$left" python3 scripts/pytorch_reference.py "$@" --mode generate --json "$W/records/pytorch_$name.json" \
    > "$W/records/console_pytorch_$name.txt" 2>&1
  log "exit $?"; grep -E '"(ttft_ms|decode_tokens_per_s|mode|compile_error)"' "$W/records/console_pytorch_$name.txt" | head -4 | tee -a "$W/session.log"
}
step() { GPUBENCH_DECODE_STEP=1 gpubench "$@"; }
a=(--precision bf16 --batch-size 1 --kernels fused)
step llama_bs1_step llama "${a[@]}"
gpubench llama_bs1_default llama "${a[@]}"
step gpt2_bs1_step gpt2 "${a[@]}"
gpubench gpt2_bs1_default gpt2 "${a[@]}"
step llama_bs1_step_2 llama "${a[@]}"
gpubench llama_bs1_default_2 llama "${a[@]}"
step gpt2_bs1_step_2 gpt2 "${a[@]}"
gpubench gpt2_bs1_default_2 gpt2 "${a[@]}"
reference llama_bs1 --model llama --precision bf16 --batch-size 1
