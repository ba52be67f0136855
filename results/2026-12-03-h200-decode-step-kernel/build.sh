#!/usr/bin/env bash
# Builds step_bench into build-bench/ (on the developer machine: nvcc 13.0; the device call carries it).
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p build-bench build-obj
flags=(-std=c++17 -O3 -gencode arch=compute_90a,code=sm_90a -I src/engine)
nvcc "${flags[@]}" -c src/engine/fused/decode_kernels.cu -o build-obj/decode_kernels.o &
nvcc "${flags[@]}" -c src/engine/fused/decode_step_kernel.cu -o build-obj/decode_step_kernel.o &
nvcc "${flags[@]}" -c results/2026-12-03-h200-decode-step-kernel/step_bench.cu -o build-obj/step_bench.o &
wait
nvcc -gencode arch=compute_90a,code=sm_90a build-obj/*.o -o build-bench/step_bench
