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
    profile)
      if command -v nsys > /dev/null; then
        log "nsys: llama bs 1 fused, kernels inside the graphs"
        timeout 200 nsys profile --cuda-graph-trace=node -o "$OUT/llama_bs1_fused" --force-overwrite true \
          "$GB" run llama --precision bf16 --batch-size 1 --kernels fused --mode generate --epochs 2 \
          --output "$OUT/records/nsys_llama_bs1_fused.json" > "$OUT/nsys.log" 2>&1
        log "exit $?"
        nsys stats --report cuda_gpu_kern_sum --format csv -o "$OUT/kern" "$OUT/llama_bs1_fused.nsys-rep" > /dev/null 2>&1
        head -25 "$OUT"/kern*.csv | cut -c1-220
        rm -f "$OUT"/*.nsys-rep "$OUT"/*.sqlite
      else
        log "no nsys on this machine"
      fi
      ;;
  esac
done
tar -C "$OUT" -czf "$OUT/records.tar.gz" records
