#!/usr/bin/env bash
# One device call (carry [".deps", "build-bench"]), three parts, each bringing back its own archive or folder:
#   1. ab_bench (built here by build.sh): whole TinyLlama and GPT-2 decode steps with the run GEMV at depth 4
#      (committed), plain 6 and plain 8, alternately, bit-for-bit checked; two rounds. $OUT/<CALL>-depth-<time>.tar.gz
#   2. results/2026-12-03-h200-phase-floor/run2.sh (gpt2_chain, sync_bench): $OUT/chain/
#   3. results/2026-12-03-h200-graph-memory/run.sh (gpubench build, the graph CUDA tests, the peak-memory records):
#      $OUT/memory-<time>.tar.gz
#   OUT=... CALL=call1 GPUBENCH_GIT_REVISION=<commit> results/2026-12-03-h200-decode-run-depth/run.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT="${OUT:-$PWD/device-out}"
C="${CALL:-call1}-depth-$(date -u +%H%M%S)"
W="$OUT/$C"
mkdir -p "$W"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv \
  > "$W/nvidia-smi.txt" 2>&1
python3 -c "import lzma; open('build-bench/ab_bench', 'wb').write(lzma.open('build-bench/ab_bench.xz').read())"
chmod +x build-bench/ab_bench
for round in 1 2; do
  echo "== round $round" | tee -a "$W/bench.txt"
  timeout 200 build-bench/ab_bench 22 12 640 576 5 200 2>&1 | tee -a "$W/bench.txt"
done
tar -C "$OUT" -czf "$OUT/$C.tar.gz" "$C" && rm -rf "$W"
OUT="$OUT" CALL=chain results/2026-12-03-h200-phase-floor/run2.sh
OUT="$OUT" CALL=memory LIMIT="${LIMIT:-480}" results/2026-12-03-h200-graph-memory/run.sh
