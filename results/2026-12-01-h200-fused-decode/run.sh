#!/usr/bin/env bash
# mode: generate with the decode kernels (kernels: fused) against the ATen path and transformers' generate on the
# H200, after `scripts/device_run.sh build` with GPUBENCH_BUILD_TARGETS="gpubench engine_tests decoder_parity_tests".
# Run from the repository root: GPUBENCH_GIT_REVISION=<commit> OUT=... results/2026-12-01-h200-fused-decode/run.sh
# PHASE... (cudatest, small, large, profile). gpubench's ATen and fused paths and PyTorch alternate per scenario;
# each gpubench run is 5 timed generations after 1 untimed one.
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
  log "exit $?"; grep -E "decode|tokens/s|bound|error" "$OUT/records/console_gpubench_$name.txt" | head -6
}
reference() {  # NAME ARGS...: transformers' generate with the same shapes
  local name="$1"; shift
  log "pytorch $name: $*"
  timeout 200 python3 scripts/pytorch_reference.py "$@" --mode generate --json "$OUT/records/pytorch_$name.json" \
    > "$OUT/records/console_pytorch_$name.txt" 2>&1
  log "exit $?"; grep -E '"(ttft_ms|decode_tokens_per_s|mode|compile_error)"' "$OUT/records/console_pytorch_$name.txt"
}
for phase in "$@"; do
  case "$phase" in
    cudatest)
      log "CUDA tests: the decode kernels against their ATen forms, and the decode parity tests"
      timeout 240 build-device/tests/engine_tests --gtest_filter='DecodeOps*:FusedOps*_CUDA' > "$OUT/engine_cuda.log" 2>&1
      log "exit $?"; grep -E "OK|FAILED|PASSED|Failure" "$OUT/engine_cuda.log" | head -20
      (cd build-device && timeout 240 ctest -R "decoder_parity|DecoderParity" --output-on-failure > "$OUT/ctest_decoder.log" 2>&1)
      log "exit $?"; grep -E "Flash|Fused|tests passed|Failed|SKIPPED" "$OUT/ctest_decoder.log" | head
      ;;
    small)
      gpubench llama_bs1_aten llama --precision bf16 --batch-size 1
      gpubench llama_bs1_fused llama --precision bf16 --batch-size 1 --kernels fused
      reference llama_bs1 --model llama --precision bf16 --batch-size 1
      gpubench gpt2_bs1_aten gpt2 --precision bf16 --batch-size 1
      gpubench gpt2_bs1_fused gpt2 --precision bf16 --batch-size 1 --kernels fused
      reference gpt2_bs1 --model gpt2 --precision bf16 --batch-size 1
      ;;
    large)
      gpubench llama_bs8_aten llama --precision bf16 --batch-size 8
      gpubench llama_bs8_fused llama --precision bf16 --batch-size 8 --kernels fused
      gpubench llama_bs32_aten llama --precision bf16 --batch-size 32
      gpubench llama_bs32_fused llama --precision bf16 --batch-size 32 --kernels fused
      gpubench llama_bs128_aten llama --precision bf16 --batch-size 128
      gpubench llama_bs128_fused llama --precision bf16 --batch-size 128 --kernels fused
      ;;
    profile)  # kernel durations of eager decode steps by Nsight Compute (the same kernels the graphs replay)
      for m in llama gpt2; do
        log "ncu: $m bs 1 fused, 120 kernels of the eager warm-up's decode steps"
        timeout 200 ncu --metrics gpu__time_duration.sum --launch-skip 4000 --launch-count 120 --csv --print-units base \
          "$GB" run $m --precision bf16 --batch-size 1 --kernels fused --mode generate --epochs 1 --cuda-graph false \
          --output /tmp/ncu_$m.json > "$OUT/ncu_$m.csv" 2> "$OUT/ncu_$m.err"
        log "exit $?"
        python3 results/2026-12-01-h200-fused-decode/ncu_table.py "$OUT/ncu_$m.csv" | tee "$OUT/ncu_$m.txt"
      done
      ;;
    gemv)
      log "the decode GEMV against cuBLAS"
      nvcc -std=c++17 -O3 -arch=sm_90 -Isrc/engine results/2026-12-01-h200-fused-decode/gemv_bench.cu \
        src/engine/fused/decode_kernels.cu -lcublas -o /tmp/gemv_bench && /tmp/gemv_bench | tee "$OUT/gemv_bench.txt"
      ;;
  esac
done
tar -C "$OUT" -czf "$OUT/records.tar.gz" records
