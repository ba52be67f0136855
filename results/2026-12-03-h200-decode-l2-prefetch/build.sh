#!/usr/bin/env bash
# Builds prefetch_bench into build-bench/ on the developer machine (nvcc 13.0, sm_90a, the CUDA runtime linked
# statically); the device call carries build-bench/.
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p build-bench build-obj
flags=(-std=c++17 -O3 -gencode arch=compute_90a,code=sm_90a -I src/engine)
nvcc "${flags[@]}" -c src/engine/fused/decode_kernels.cu -o build-obj/decode_kernels.o &
nvcc "${flags[@]}" -c results/2026-12-03-h200-decode-l2-prefetch/prefetch_bench.cu -o build-obj/prefetch_bench.o &
wait
nvcc -gencode arch=compute_90a,code=sm_90a build-obj/decode_kernels.o build-obj/prefetch_bench.o -o build-bench/prefetch_bench
