#!/usr/bin/env bash
# The GEMV design bench (gemv_bench.cu) on a fresh GPU machine: compile, run twice, keep the output.
#   OUT=... results/2026-12-02-h200-decode-gemv-bench/run.sh
set -euo pipefail
cd "$(dirname "$0")"
OUT="${OUT:-$PWD/device-out}"
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv > "$OUT/nvidia-smi.txt" 2>&1 || true
nvcc -std=c++17 -O3 -gencode arch=compute_90a,code=sm_90a gemv_bench.cu -lcublas -o /tmp/gemv_bench
/tmp/gemv_bench 50 > "$OUT/bench1.txt" 2>&1
/tmp/gemv_bench 50 > "$OUT/bench2.txt" 2>&1
