#!/usr/bin/env bash
# Builds head_bench into build-bench/ on the developer machine (nvcc 13.0, sm_90a, the CUDA runtime linked
# statically); the device call carries build-bench/. head_bench.cu includes src/engine/fused/decode_kernels.cu.
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p build-bench
nvcc -std=c++17 -O3 -gencode arch=compute_90a,code=sm_90a -I src/engine \
  results/2026-12-03-h200-decode-run-head/head_bench.cu -o build-bench/head_bench
