#!/usr/bin/env bash
# BERT-base with `kernels: fused` (linear + dropout + residual + LayerNorm, linear + GELU) on the H200, after
# `scripts/device_run.sh build` with GPUBENCH_BUILD_TARGETS="gpubench engine_tests bert_parity_tests
# decoder_parity_tests".
# Run from the repository root: OUT=... results/2026-12-02-h200-bert-fused/run.sh PHASE... where the phases are
#   cudatest  the fused ops' *_CUDA tests and the BERT parity tests (transformers' logits on the fused kernels)
#   bench     configs/bench/bert-bs128.yaml (ROUNDS, SKIP as scripts/device_run.sh takes them)
#   gpt2      configs/bench/gpt2-bs8.yaml (GPT-2's fused MLP linear + GELU since this folder's second call)
#   unet      sd-unet bs 8, bf16, kernels aten and fused alternating (UNET_ROUNDS="1 2"); no PyTorch reference
#             (diffusers is not on the machine)
#   profile   gpubench --profile of the ATen and the fused path (kernel categories, a Chrome trace of each;
#             PROFILE_KERNELS="fused" profiles one)
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT="${OUT:-$PWD/device-out}"
mkdir -p "$OUT/records"
GB="${GPUBENCH_BINARY:-$PWD/build-device/gpubench}"
export GPUBENCH_BINARY="$GB" PYTHONUNBUFFERED=1
log() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$OUT/session.log"; }
for phase in "$@"; do
  case "$phase" in
    cudatest)
      log "CUDA tests: the fused ops against their ATen compositions, BERT's fused path against transformers"
      timeout 240 build-device/tests/engine_tests --gtest_filter='FusedOps*_CUDA' \
        > "$OUT/engine_cuda.log" 2>&1
      log "exit $?"; grep -E "^\[  (PASSED|FAILED) |Failure|tests ran|Expected|Which is" "$OUT/engine_cuda.log" | head -30 | tee -a "$OUT/session.log"
      (cd build-device && timeout 150 ctest -R "BertParity|DecoderParity.*(Gpt2|Fused)" --output-on-failure > "$OUT/ctest_bert.log" 2>&1)
      log "exit $?"; grep -E "tests passed|Failed|SKIPPED" "$OUT/ctest_bert.log" | head | tee -a "$OUT/session.log"
      ;;
    bench)
      OUT="$OUT" scripts/device_run.sh bench configs/bench/bert-bs128.yaml
      ;;
    profile)
      for k in ${PROFILE_KERNELS:-aten fused}; do
        log "profile $k"
        timeout 120 "$GB" run bert-base --precision bf16 --batch-size 128 --dataset-size 2560 --kernels "$k" \
          --profile true --output "$OUT/records/profile_bert_bs128_$k.json" > "$OUT/records/console_profile_$k.txt" 2>&1
        log "exit $?"; grep -iE "category|GEMM|normal|elementwise|reduction|attention|optimizer|copies|other|busy|step" \
          "$OUT/records/console_profile_$k.txt" | head -24 | tee -a "$OUT/session.log"
      done
      ;;
    gpt2)
      OUT="$OUT" scripts/device_run.sh bench configs/bench/gpt2-bs8.yaml
      ;;
    unet)
      for r in ${UNET_ROUNDS:-1 2}; do
        for k in aten fused; do
          log "sd-unet bs 8 $k, round $r"
          timeout 150 "$GB" run sd-unet --precision bf16 --batch-size 8 --dataset-size 240 --warmup-steps 5 \
            --kernels "$k" --output "$OUT/records/gpubench_unet_bs8_${k}_r$r.json" > "$OUT/records/console_unet_${k}_r$r.txt" 2>&1
          log "exit $?"; grep -E "^total|fusions|error" "$OUT/records/console_unet_${k}_r$r.txt" | tee -a "$OUT/session.log"
        done
      done
      ;;
    *) echo "unknown phase $phase" >&2; exit 2 ;;
  esac
done
