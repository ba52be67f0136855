#!/usr/bin/env bash
# Builds sync_bench here (nvcc 13.0, sm_90a) into build-bench/, which the device call carries.
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p build-bench
nvcc -O3 -std=c++17 -arch=sm_90a -o build-bench/sync_bench results/2026-12-03-h200-phase-floor/sync_bench.cu
nvcc -O3 -std=c++17 -arch=sm_90a -o build-bench/gpt2_chain results/2026-12-03-h200-phase-floor/gpt2_chain.cu
