#!/usr/bin/env bash
# The cluster attention bench on the GPU machine (attn_bench built here by build.sh, carried in build-bench/):
#   OUT=... results/2026-12-03-h200-decode-attn-cluster/run.sh [label]
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT="${OUT:-$PWD/device-out}"
label="${1:-call}"
mkdir -p "$OUT/$label"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv > "$OUT/$label/nvidia-smi.txt" 2>&1
for i in 1 2; do
  timeout 150 build-bench/attn_bench 22 640 576 5 200 > "$OUT/$label/tinyllama-$i.txt" 2>&1; echo "rc $?" >> "$OUT/$label/tinyllama-$i.txt"
done
tail -n 12 "$OUT/$label"/tinyllama-*.txt
grep -c MISMATCH "$OUT/$label/tinyllama-1.txt"; grep "correctness\|does not serve" "$OUT/$label/tinyllama-1.txt"
