#!/usr/bin/env bash
# GPT-2 with `kernels: fused` now fusing every LayerNorm into the operation before it (attention's output projection
# + dropout + residual + ln_2; the MLP whole with cuBLASLt's GELU_AUX_BIAS / DGELU_BGRAD epilogues + dropout +
# residual + the next block's ln_1), on the H200 against transformers + torch.compile.
# Run from the repository root: OUT=... results/2026-12-02-h200-gpt2-fused/run.sh PHASE... where the phases are
#   build     scripts/device_run.sh build of the binary and the engine/decoder tests (carry .deps for libjpeg)
#   cudatest  the fused ops' *_CUDA tests (the MLP on cuBLASLt's epilogues among them) and GPT-2's parity tests
#   bs8       configs/bench/gpt2-bs8.yaml (ROUNDS, SKIP as scripts/device_run.sh takes them)
#   bs32      configs/bench/gpt2-bs32.yaml
#   mfu       gpubench fused (with --cuda-graph) at batches MFU_BATCHES (default 16 24 48): the batch of best MFU
#   llama     configs/bench/llama-bs4.yaml (TinyLlama; its residual adds with their RMSNorms fused since call 4)
#   bert      configs/bench/bert-bs128.yaml (the column sums' kernel changed in call 4: BERT's backward uses it)
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT="${OUT:-$PWD/device-out}"
mkdir -p "$OUT/records"
GB="${GPUBENCH_BINARY:-$PWD/build-device/gpubench}"
export GPUBENCH_BINARY="$GB" PYTHONUNBUFFERED=1
log() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$OUT/session.log"; }
for phase in "$@"; do
  case "$phase" in
    build)
      GPUBENCH_BUILD_TARGETS="${GPUBENCH_BUILD_TARGETS:-gpubench engine_tests decoder_parity_tests}" \
        OUT="$OUT" scripts/device_run.sh build || exit 1
      ;;
    cudatest)
      log "CUDA tests: the fused ops against their ATen compositions, reduced models' bf16 loss curves"
      timeout 300 build-device/tests/engine_tests --gtest_filter='FusedOps*_CUDA:FusedOpsTest.TheRecord*' \
        > "$OUT/engine_cuda.log" 2>&1
      log "exit $?"; grep -E "^\[  (PASSED|FAILED) |^\[       OK|Failure|tests ran|Expected|Which is|largest" "$OUT/engine_cuda.log" | head -40 | tee -a "$OUT/session.log"
      (cd build-device && timeout 150 ctest -R "DecoderParity.*(Gpt2|Llama)" --output-on-failure > "$OUT/ctest_parity.log" 2>&1)
      log "exit $?"; grep -E "tests passed|Failed|SKIPPED" "$OUT/ctest_parity.log" | head | tee -a "$OUT/session.log"
      ;;
    bs8)
      OUT="$OUT" scripts/device_run.sh bench configs/bench/gpt2-bs8.yaml
      ;;
    bs32)
      OUT="$OUT" scripts/device_run.sh bench configs/bench/gpt2-bs32.yaml
      ;;
    llama)
      OUT="$OUT" scripts/device_run.sh bench configs/bench/llama-bs4.yaml
      ;;
    bert)
      OUT="$OUT" scripts/device_run.sh bench configs/bench/bert-bs128.yaml
      ;;
    mfu)
      for b in ${MFU_BATCHES:-16 24 48}; do
        log "gpt2 fused + graph, batch $b"
        timeout 120 "$GB" run gpt2 --precision bf16 --batch-size "$b" --dataset-size $((b * 60)) --warmup-steps 10 \
          --kernels fused --cuda-graph --output "$OUT/records/gpubench_gpt2_mfu_bs$b.json" \
          > "$OUT/records/console_mfu_bs$b.txt" 2>&1
        log "exit $?"; grep -E "^total|MFU|mfu|peak" "$OUT/records/console_mfu_bs$b.txt" | head -6 | tee -a "$OUT/session.log"
      done
      ;;
    *) echo "unknown phase $phase" >&2; exit 2 ;;
  esac
done
tar -C "$OUT" -czf "$OUT/records.tar.gz" records scenarios 2>/dev/null || tar -C "$OUT" -czf "$OUT/records.tar.gz" records
