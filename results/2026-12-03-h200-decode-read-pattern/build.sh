#!/usr/bin/env bash
# Builds build-bench/read_bench.xz on the developer machine (nvcc 13.0, sm_90a) from read_bench.cu.
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p build-bench build-obj
nvcc -std=c++17 -O3 -gencode arch=compute_90a,code=sm_90a -Xptxas -v \
  results/2026-12-03-h200-decode-read-pattern/read_bench.cu -o build-obj/read_bench 2>&1 | grep -E "error|Used"
xz -T2 -6 -c build-obj/read_bench > build-bench/read_bench.xz
