#!/usr/bin/env bash
# A short device call, no gpubench build (carry ["build-bench"]): $BENCH (default ab_bench, built here by build.sh), two
# rounds of TinyLlama and GPT-2 whole decode steps. $OUT/<CALL>-<time>.tar.gz
#   OUT=... CALL=call1 results/2026-12-03-h200-decode-run-blocks/run.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT="${OUT:-$PWD/device-out}"
C="${CALL:-call1}-$(date -u +%H%M%S)"
W="$OUT/$C"
mkdir -p "$W"
finish() { tar -C "$OUT" -czf "$OUT/$C.tar.gz" "$C" && rm -rf "$W"; }
trap finish EXIT
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv \
  > "$W/nvidia-smi.txt" 2>&1
b=${BENCH:-ab_bench}
python3 -c "import lzma,sys; open(sys.argv[2], 'wb').write(lzma.open(sys.argv[1]).read())" "build-bench/$b.xz" \
  "build-bench/$b"
chmod +x "build-bench/$b"
for round in 1 2; do
  echo "== $b round $round" | tee -a "$W/bench.txt"
  timeout 100 "build-bench/$b" 22 12 640 576 5 200 2>&1 | tee -a "$W/bench.txt"
done
