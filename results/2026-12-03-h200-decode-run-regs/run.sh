#!/usr/bin/env bash
# One short device call, no gpubench build: ab_bench (built here by build.sh, carried as build-bench/ab_bench.xz)
# replays whole TinyLlama and GPT-2 decode steps with the committed kernels and the run GEMV capped at 80 registers,
# alternately, checking that every variant's hidden state and logits equal the committed ones bit for bit. One archive,
# $OUT/<CALL>-<time>.tar.gz. From the repository root (carry ["build-bench"]):
#   OUT=... CALL=regs results/2026-12-03-h200-decode-run-regs/run.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT="${OUT:-$PWD/device-out}"
C="${CALL:-regs}-$(date -u +%H%M%S)"
W="$OUT/$C"
mkdir -p "$W"
finish() { tar -C "$OUT" -czf "$OUT/$C.tar.gz" "$C" && rm -rf "$W"; }
trap finish EXIT
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv \
  > "$W/nvidia-smi.txt" 2>&1
python3 -c "import lzma; open('build-bench/ab_bench', 'wb').write(lzma.open('build-bench/ab_bench.xz').read())"
chmod +x build-bench/ab_bench
for round in 1 2; do
  echo "== round $round" | tee -a "$W/bench.txt"
  timeout 200 build-bench/ab_bench 22 12 640 576 5 200 2>&1 | tee -a "$W/bench.txt"
done
