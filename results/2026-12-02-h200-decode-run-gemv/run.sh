#!/usr/bin/env bash
# mode: generate, --kernels fused, after the run GEMV (large one-token products: each warp streams its run of weight
# rows into registers) and the decode attention's longer splits (64 positions or more, the combine's loads in flight
# at once), on the H200, against the same build with both off (GPUBENCH_DECODE_RUN=0 GPUBENCH_DECODE_ATTN_MIN_SPLIT=16:
# the committed path before), each alone, and transformers' eager generate, alternating. (attn24, for a next call:
# the longer splits against 16 at TinyLlama batches 2 and 4.) A fresh machine: build, the
# decode CUDA tests, the runs; one archive. From the repository root:
#   OUT=... CALL=call1 GPUBENCH_GIT_REVISION=<commit> results/2026-12-02-h200-decode-run-gemv/run.sh PHASE...
# Phases: cudatest, llama, gpt2 (batch 1 A/B with the references), final (call 2: both models at batch 1 against
# the path before and the attention's longer splits, with the references), batch4, profile (ncu, llama), sweep.
# (Call 1's build, bcb8395, had splits of 64 positions or more and a batched combine by default; call 2's has the
# attention as before, 16 or more, so there "before" is GPUBENCH_DECODE_RUN=0 alone and "split64" the longer splits.)
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT="${OUT:-$PWD/device-out}"
C="${CALL:-call1}"
W="$OUT/$C"
mkdir -p "$W/records"
log() { echo "== $(date -u +%H:%M:%S) [${SECONDS}s] $*" | tee -a "$W/session.log"; }
finish() { tar -C "$OUT" -czf "$OUT/$C.tar.gz" "$C" && rm -rf "$W"; }
trap finish EXIT
if [ ! -x build-device/gpubench ] || [ "${REBUILD:-1}" = 1 ]; then
  GPUBENCH_BUILD_TARGETS="${BUILD_TARGETS:-gpubench engine_tests decoder_parity_tests}" OUT="$W" scripts/device_run.sh build \
    > "$W/build_phase.log" 2>&1 || { tail -40 "$W/build.log"; exit 1; }
  rm -f "$W/records.tar.gz"
fi
log "build done"
GB="$PWD/build-device/gpubench"
export GPUBENCH_BINARY="$GB" PYTHONUNBUFFERED=1
LIMIT=${LIMIT:-480}  # no run starts after LIMIT seconds, and none runs past END (default 585)
gpubench() {  # NAME ARGS...: a gpubench generate run, its record and its console
  local name="$1"; shift
  [ "$SECONDS" -gt "$LIMIT" ] && { log "$name: no time left"; return; }
  log "gpubench $name: $*"
  local left=$((${END:-585} - SECONDS)); [ "$left" -gt 90 ] && left=90
  timeout "$left" "$GB" run "$@" --mode generate --output "$W/records/gpubench_$name.json" > "$W/records/console_gpubench_$name.txt" 2>&1
  log "exit $?"
  grep -oE "decode \(median of generations\) \(tokens/s\): [0-9.]+|fraction of the roofline bound reached: [0-9.]+%|time to first token / the prompt's forward alone: [0-9.]+|error.*" \
    "$W/records/console_gpubench_$name.txt" | tr '\n' ' ' | tee -a "$W/session.log"; echo | tee -a "$W/session.log"
}
reference() {  # NAME ARGS...: transformers' generate with the same shapes
  local name="$1"; shift
  [ "$SECONDS" -gt "$LIMIT" ] && { log "$name: no time left"; return; }
  log "pytorch $name: $*"
  local left=$((${END:-585} - SECONDS)); [ "$left" -gt 150 ] && left=150
  timeout "$left" python3 scripts/pytorch_reference.py "$@" --mode generate --json "$W/records/pytorch_$name.json" \
    > "$W/records/console_pytorch_$name.txt" 2>&1
  log "exit $?"; grep -E '"(ttft_ms|decode_tokens_per_s|mode|compile_error)"' "$W/records/console_pytorch_$name.txt" | head -4 | tee -a "$W/session.log"
}
before() { GPUBENCH_DECODE_RUN=0 GPUBENCH_DECODE_ATTN_MIN_SPLIT=16 gpubench "$@"; }  # the committed path before
for phase in "$@"; do
  case "$phase" in
    cudatest)
      log "CUDA tests: the decode kernels against their ATen forms, and the decode parity tests"
      timeout 240 build-device/tests/engine_tests --gtest_filter='DecodeOps*:FusedOps*_CUDA' > "$W/engine_cuda.log" 2>&1
      log "exit $?"; grep -E "^\[  (PASSED|FAILED) |Failure|tests ran|^\[  FAILED" "$W/engine_cuda.log" | head -20 | tee -a "$W/session.log"
      (cd build-device && timeout 200 ctest -R "decoder_parity|DecoderParity" --output-on-failure > "$W/ctest_decoder.log" 2>&1)
      log "exit $?"; grep -E "tests passed|Failed|SKIPPED" "$W/ctest_decoder.log" | head | tee -a "$W/session.log"
      ;;
    llama|gpt2)
      m=$phase; a=(--precision bf16 --batch-size 1 --kernels fused)
      gpubench ${m}_bs1_new $m "${a[@]}"
      before ${m}_bs1_before $m "${a[@]}"
      GPUBENCH_DECODE_ATTN_MIN_SPLIT=16 gpubench ${m}_bs1_run_only $m "${a[@]}"
      GPUBENCH_DECODE_RUN=0 gpubench ${m}_bs1_attention_only $m "${a[@]}"
      [ "$m" = gpt2 ] && GPUBENCH_DECODE_RUN=1 gpubench ${m}_bs1_run_everywhere $m "${a[@]}"
      reference ${m}_bs1 --model $m --precision bf16 --batch-size 1
      gpubench ${m}_bs1_new_2 $m "${a[@]}"
      before ${m}_bs1_before_2 $m "${a[@]}"
      ;;
    final)
      for m in llama gpt2; do
        a=(--precision bf16 --batch-size 1 --kernels fused)
        gpubench ${m}_bs1_new $m "${a[@]}"
        before ${m}_bs1_before $m "${a[@]}"
        GPUBENCH_DECODE_ATTN_MIN_SPLIT=64 gpubench ${m}_bs1_split64 $m "${a[@]}"
        [ "$m" = llama ] && GPUBENCH_DECODE_RUN=1 gpubench ${m}_bs1_run_everywhere $m "${a[@]}"
        reference ${m}_bs1 --model $m --precision bf16 --batch-size 1
        gpubench ${m}_bs1_new_2 $m "${a[@]}"
        before ${m}_bs1_before_2 $m "${a[@]}"
        GPUBENCH_DECODE_ATTN_MIN_SPLIT=64 gpubench ${m}_bs1_split64_2 $m "${a[@]}"
      done
      ;;
    attn24)  # not yet run: the longer splits at batches 2 and 4 (TinyLlama: 10 splits instead of 32 and 16)
      for b in 2 4; do
        for r in 1 2; do
          gpubench llama_bs${b}_split64_$r llama --precision bf16 --batch-size $b --kernels fused
          GPUBENCH_DECODE_ATTN_MIN_SPLIT=16 gpubench llama_bs${b}_split16_$r llama --precision bf16 --batch-size $b --kernels fused
        done
      done
      ;;
    batch4)
      for m in llama gpt2; do
        gpubench ${m}_bs4_new $m --precision bf16 --batch-size 4 --kernels fused
        GPUBENCH_DECODE_RUN=1 gpubench ${m}_bs4_run_everywhere $m --precision bf16 --batch-size 4 --kernels fused
        before ${m}_bs4_before $m --precision bf16 --batch-size 4 --kernels fused
      done
      ;;
    profile)  # each kernel's duration alone (Nsight Compute serializes them: no PDL overlap), clocks left alone
      [ "$SECONDS" -gt "$LIMIT" ] && { log "profile: no time left"; continue; }
      for cfg in ${PROFILE:-new before}; do
        log "ncu ($cfg): llama bs 1 fused, 60 kernels of the eager warm-up's decode steps"
        env $([ $cfg = before ] && echo GPUBENCH_DECODE_RUN=0 GPUBENCH_DECODE_ATTN_MIN_SPLIT=16) \
          timeout 100 ncu --clock-control none --metrics gpu__time_duration.sum --launch-skip 3000 --launch-count 60 --csv \
          --print-units base "$GB" run llama --precision bf16 --batch-size 1 --kernels fused --mode generate --epochs 1 \
          --cuda-graph false --output /tmp/ncu_llama.json > "$W/ncu_llama_$cfg.csv" 2> "$W/ncu_llama_$cfg.err"
        log "exit $?"
        python3 results/2026-12-01-h200-fused-decode/ncu_table.py "$W/ncu_llama_$cfg.csv" > "$W/ncu_llama_$cfg.txt"
        tail -10 "$W/ncu_llama_$cfg.txt" | tee -a "$W/session.log"
      done
      ;;
    sweep)
      [ "$SECONDS" -gt "$LIMIT" ] && { log "sweep: no time left"; continue; }
      log "sweep: llama fused, batch x prompt"
      left=$((${END:-585} - SECONDS)); [ "$left" -gt 170 ] && left=170
      timeout "$left" "$GB" sweep llama --mode generate --precision bf16 --kernels fused --batch-size 1,8,32,128 \
        --prompt-tokens 512,1536 --epochs 2 --out "$W/records/sweep" > "$W/records/console_sweep.txt" 2>&1
      log "exit $?"; tail -20 "$W/records/console_sweep.txt" | tee -a "$W/session.log"
      ;;
  esac
done
