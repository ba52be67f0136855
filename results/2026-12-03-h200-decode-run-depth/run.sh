#!/usr/bin/env bash
# One device call (carry [".deps", "build-bench"]), each part bringing back its own archive or folder:
#   1. the two ab_benches built here by build.sh (whole TinyLlama and GPT-2 decode steps as CUDA graphs, replayed
#      alternately, every variant's hidden state and logits checked bit for bit against the first), two rounds each:
#      ab_bench (the run GEMV's depth) and ab_pos (the position read before the wait). $OUT/<CALL>-bench-<time>.tar.gz
#   2. results/2026-12-03-h200-phase-floor/run2.sh (gpt2_chain, sync_bench): $OUT/chain/
#   3. results/2026-12-03-h200-graph-memory/run.sh: a gpubench build of this commit with the engine and parity tests,
#      the decode, generate and graph CUDA tests through ctest, the graph-memory records, then TinyLlama and GPT-2
#      bs 1 decode records. $OUT/memory-<time>.tar.gz
#   OUT=... CALL=call1 GPUBENCH_GIT_REVISION=<commit> results/2026-12-03-h200-decode-run-depth/run.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT="${OUT:-$PWD/device-out}"
C="${CALL:-call1}-bench-$(date -u +%H%M%S)"
W="$OUT/$C"
mkdir -p "$W"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv \
  > "$W/nvidia-smi.txt" 2>&1
for b in ab_bench ab_pos; do
  python3 -c "import lzma,sys; open(sys.argv[2], 'wb').write(lzma.open(sys.argv[1]).read())" \
    "build-bench/$b.xz" "build-bench/$b"
  chmod +x "build-bench/$b"
  for round in 1 2; do
    echo "== $b round $round" | tee -a "$W/bench.txt"
    timeout 100 "build-bench/$b" 22 12 640 576 5 200 2>&1 | tee -a "$W/bench.txt"
  done
done
tar -C "$OUT" -czf "$OUT/$C.tar.gz" "$C" && rm -rf "$W"
OUT="$OUT" CALL=chain timeout 60 results/2026-12-03-h200-phase-floor/run2.sh > /dev/null 2>&1
echo "== chain: $(grep -c . "$OUT/chain/chain.txt") lines"
OUT="$OUT" CALL=memory LIMIT="${LIMIT:-470}" BUILD_TARGETS="gpubench engine_tests decoder_parity_tests" \
  CTEST_TIMEOUT=120 CTEST_R="(WorkingSet|DecodeOps|DecodeStep|DecoderParity|GenerateTest|InferenceModeTest|CudaGraphCaptures).*_CUDA" \
  EXTRA="llama_bs1=llama:1 gpt2_bs1=gpt2:1" results/2026-12-03-h200-graph-memory/run.sh
