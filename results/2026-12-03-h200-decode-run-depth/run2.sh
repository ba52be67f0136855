#!/usr/bin/env bash
# A short device call, no gpubench build (carry ["build-bench"]): build-bench/$BENCH.xz (default ab_out, built here by
# build.sh: TinyLlama's output product streamed as committed, on the run GEMV, on the per-warp GEMV) unpacked and run
# twice with $ARGS (default ab_bench's: 22 12 640 576 5 200). $OUT/<CALL>-<time>.tar.gz
#   OUT=... CALL=call2 results/2026-12-03-h200-decode-run-depth/run2.sh
#   run-blocks calls:   OUT=... CALL=call1 BENCH=ab_bench results/2026-12-03-h200-decode-run-depth/run2.sh
#                       OUT=... CALL=call2 BENCH=ab_blocks3 results/2026-12-03-h200-decode-run-depth/run2.sh
#   read-pattern call:  OUT=... CALL=call1 BENCH=read_bench ARGS="5 40" results/2026-12-03-h200-decode-run-depth/run2.sh
# (The run-blocks and read-pattern calls ran copies of this script in their folders that differed only in those
# values and their timeouts, 100 and 120 s.)
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT="${OUT:-$PWD/device-out}"
C="${CALL:-call2}-$(date -u +%H%M%S)"
W="$OUT/$C"
mkdir -p "$W"
finish() { tar -C "$OUT" -czf "$OUT/$C.tar.gz" "$C" && rm -rf "$W"; }
trap finish EXIT
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv \
  > "$W/nvidia-smi.txt" 2>&1
b=${BENCH:-ab_out}
python3 -c "import lzma,sys; open(sys.argv[2], 'wb').write(lzma.open(sys.argv[1]).read())" "build-bench/$b.xz" \
  "build-bench/$b"
chmod +x "build-bench/$b"
for round in 1 2; do
  echo "== $b round $round" | tee -a "$W/bench.txt"
  # shellcheck disable=SC2086
  timeout 120 "build-bench/$b" ${ARGS:-22 12 640 576 5 200} 2>&1 | tee -a "$W/bench.txt"
done
