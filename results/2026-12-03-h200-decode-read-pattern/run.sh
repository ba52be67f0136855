#!/usr/bin/env bash
# A short device call, no gpubench build (carry ["build-bench"]): read_bench (built here by build.sh), twice.
# $OUT/<CALL>-<time>.tar.gz
#   OUT=... CALL=call1 results/2026-12-03-h200-decode-read-pattern/run.sh
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
b=read_bench
python3 -c "import lzma,sys; open(sys.argv[2], 'wb').write(lzma.open(sys.argv[1]).read())" "build-bench/$b.xz" \
  "build-bench/$b"
chmod +x "build-bench/$b"
for round in 1 2; do
  echo "== $b round $round" | tee -a "$W/bench.txt"
  timeout 120 "build-bench/$b" 5 40 2>&1 | tee -a "$W/bench.txt"
done
