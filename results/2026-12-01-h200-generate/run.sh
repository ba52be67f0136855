#!/usr/bin/env bash
# mode: generate on the H200 against transformers' generate, one device call after the build (run from the repository
# root: GPUBENCH_GIT_REVISION=<commit> OUT=... results/2026-12-01-h200-generate/run.sh). gpubench and PyTorch alternate
# per scenario; each gpubench run is 5 timed generations after 1 untimed one, each PyTorch run 5 after 1 (2 compiled).
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
  timeout 240 "$GB" run "$@" --mode generate --output "$OUT/records/gpubench_$name.json" > "$OUT/records/console_gpubench_$name.txt" 2>&1
  log "exit $?"; tail -3 "$OUT/records/console_gpubench_$name.txt"
}
reference() {  # NAME ARGS...: transformers' generate with the same shapes
  local name="$1"; shift
  log "pytorch $name: $*"
  timeout 300 python3 scripts/pytorch_reference.py "$@" --mode generate --json "$OUT/records/pytorch_$name.json" \
    > "$OUT/records/console_pytorch_$name.txt" 2>&1
  log "exit $?"; grep -E '"(ttft_ms|decode_tokens_per_s|mode|compile_error)"' "$OUT/records/console_pytorch_$name.txt"
}
for phase in "$@"; do
  case "$phase" in
    small)
      gpubench llama_bs1 llama --precision bf16 --batch-size 1
      reference llama_bs1 --model llama --precision bf16 --batch-size 1
      gpubench gpt2_bs1 gpt2 --precision bf16 --batch-size 1
      reference gpt2_bs1 --model gpt2 --precision bf16 --batch-size 1
      gpubench llama_bs1_eager llama --precision bf16 --batch-size 1 --cuda-graph false --epochs 2
      gpubench llama_bs1_fused llama --precision bf16 --batch-size 1 --kernels fused
      ;;
    large)
      gpubench llama_bs32 llama --precision bf16 --batch-size 32
      reference llama_bs32 --model llama --precision bf16 --batch-size 32
      gpubench llama_bs128 llama --precision bf16 --batch-size 128
      reference llama_bs128 --model llama --precision bf16 --batch-size 128 --repetitions 3
      gpubench gpt2_bs32 gpt2 --precision bf16 --batch-size 32
      reference gpt2_bs32 --model gpt2 --precision bf16 --batch-size 32
      ;;
    compiled)
      gpubench llama_bs1_again llama --precision bf16 --batch-size 1
      reference llama_bs1_compile --model llama --precision bf16 --batch-size 1 --compile --repetitions 3
      ;;
    cudatest)
      log "decoder parity tests (the CUDA flash-decode test among them)"
      (cd build-device && ctest -R decoder_parity --output-on-failure > "$OUT/ctest_decoder.log" 2>&1)
      log "exit $?"; grep -E "Flash|tests passed|FAILED|SKIPPED" "$OUT/ctest_decoder.log" | head
      ;;
  esac
done
tar -C "$OUT" -czf "$OUT/records.tar.gz" records
