#!/usr/bin/env bash
# mode: generate with the decode kernels after programmatic dependent launch, the in-pass norm and the tiled decode
# attention (commit in README.md), against gpubench's ATen path and transformers' eager generate on the H200, after
# `scripts/device_run.sh build` with GPUBENCH_BUILD_TARGETS="gpubench engine_tests decoder_parity_tests".
# Run from the repository root: OUT=... results/2026-12-01-h200-decode-pdl/run.sh PHASE... (cudatest, small, large,
# profile, final, sweep). Per scenario gpubench's runs and PyTorch's follow each other; each gpubench run is 5 timed
# generations after 1 untimed one. `nopdl` runs are the same fused path with GPUBENCH_DECODE_PDL=0 (plain launches).
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT="${OUT:-$PWD/device-out}"
mkdir -p "$OUT/records"
GB="${GPUBENCH_BINARY:-$PWD/build-device/gpubench}"
export GPUBENCH_BINARY="$GB" PYTHONUNBUFFERED=1
log() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$OUT/session.log"; }
gpubench() {  # NAME ARGS...: a gpubench generate run, its record and its console
  local name="$1"; shift
  log "gpubench $name: $*"
  timeout 200 "$GB" run "$@" --mode generate --output "$OUT/records/gpubench_$name.json" > "$OUT/records/console_gpubench_$name.txt" 2>&1
  log "exit $?"; grep -E "decode|bound|error" "$OUT/records/console_gpubench_$name.txt" | head -4 | tee -a "$OUT/session.log"
}
reference() {  # NAME ARGS...: transformers' generate with the same shapes
  local name="$1"; shift
  log "pytorch $name: $*"
  timeout 200 python3 scripts/pytorch_reference.py "$@" --mode generate --json "$OUT/records/pytorch_$name.json" \
    > "$OUT/records/console_pytorch_$name.txt" 2>&1
  log "exit $?"; grep -E '"(ttft_ms|decode_tokens_per_s|mode|compile_error)"' "$OUT/records/console_pytorch_$name.txt" | tee -a "$OUT/session.log"
}
for phase in "$@"; do
  case "$phase" in
    cudatest)
      log "CUDA tests: the decode kernels against their ATen forms, and the decode parity tests"
      timeout 240 build-device/tests/engine_tests --gtest_filter='DecodeOps*:FusedOps*_CUDA' > "$OUT/engine_cuda.log" 2>&1
      log "exit $?"; grep -E "^\[  (PASSED|FAILED) |Failure|tests ran" "$OUT/engine_cuda.log" | head -20 | tee -a "$OUT/session.log"
      (cd build-device && timeout 240 ctest -R "decoder_parity|DecoderParity" --output-on-failure > "$OUT/ctest_decoder.log" 2>&1)
      log "exit $?"; grep -E "tests passed|Failed|SKIPPED" "$OUT/ctest_decoder.log" | head | tee -a "$OUT/session.log"
      ;;
    small)
      gpubench llama_bs1_aten llama --precision bf16 --batch-size 1
      gpubench llama_bs1_fused llama --precision bf16 --batch-size 1 --kernels fused
      GPUBENCH_DECODE_PDL=0 gpubench llama_bs1_fused_nopdl llama --precision bf16 --batch-size 1 --kernels fused
      reference llama_bs1 --model llama --precision bf16 --batch-size 1
      gpubench llama_bs1_fused_2 llama --precision bf16 --batch-size 1 --kernels fused
      gpubench gpt2_bs1_aten gpt2 --precision bf16 --batch-size 1
      gpubench gpt2_bs1_fused gpt2 --precision bf16 --batch-size 1 --kernels fused
      GPUBENCH_DECODE_PDL=0 gpubench gpt2_bs1_fused_nopdl gpt2 --precision bf16 --batch-size 1 --kernels fused
      reference gpt2_bs1 --model gpt2 --precision bf16 --batch-size 1
      gpubench gpt2_bs1_fused_2 gpt2 --precision bf16 --batch-size 1 --kernels fused
      ;;
    large)
      for b in 8 32 128; do
        gpubench llama_bs${b}_aten llama --precision bf16 --batch-size $b
        gpubench llama_bs${b}_fused llama --precision bf16 --batch-size $b --kernels fused
      done
      ;;
    profile)  # kernel durations of eager decode steps by Nsight Compute (serialized: no overlap between kernels)
      for m in llama gpt2; do
        log "ncu: $m bs 1 fused, 120 kernels of the eager warm-up's decode steps"
        timeout 200 ncu --metrics gpu__time_duration.sum --launch-skip 4000 --launch-count 120 --csv --print-units base \
          "$GB" run $m --precision bf16 --batch-size 1 --kernels fused --mode generate --epochs 1 --cuda-graph false \
          --output /tmp/ncu_$m.json > "$OUT/ncu_$m.csv" 2> "$OUT/ncu_$m.err"
        log "exit $?"
        python3 results/2026-12-01-h200-fused-decode/ncu_table.py "$OUT/ncu_$m.csv" > "$OUT/ncu_$m.txt"
        head -14 "$OUT/ncu_$m.txt" | tee -a "$OUT/session.log"
      done
      ;;
    final)  # the last commit's bs 1 figures and its GEMV tests, after the SwiGLU GEMV change
      timeout 120 build-device/tests/engine_tests --gtest_filter='DecodeOps*Gemv*_CUDA:DecodeOps*FusedDecodeSteps*_CUDA' \
        > "$OUT/engine_cuda_final.log" 2>&1
      log "exit $?"; grep -E "^\[  (PASSED|FAILED) |Failure" "$OUT/engine_cuda_final.log" | head | tee -a "$OUT/session.log"
      gpubench final_llama_bs1_fused llama --precision bf16 --batch-size 1 --kernels fused
      reference final_llama_bs1 --model llama --precision bf16 --batch-size 1
      gpubench final_llama_bs1_fused_2 llama --precision bf16 --batch-size 1 --kernels fused
      gpubench final_gpt2_bs1_fused gpt2 --precision bf16 --batch-size 1 --kernels fused
      reference final_gpt2_bs1 --model gpt2 --precision bf16 --batch-size 1
      gpubench final_gpt2_bs1_fused_2 gpt2 --precision bf16 --batch-size 1 --kernels fused
      ;;
    sweep)
      log "sweep: llama fused, batch x prompt"
      timeout 170 "$GB" sweep llama --mode generate --precision bf16 --kernels fused --batch-size 1,8,32,128 \
        --prompt-tokens 512,1536 --epochs 2 --out "$OUT/records/sweep" > "$OUT/records/console_sweep.txt" 2>&1
      log "exit $?"; tail -20 "$OUT/records/console_sweep.txt" | tee -a "$OUT/session.log"
      ;;
  esac
done
cd "$OUT" && tar czf records.tar.gz records && rm -rf records
