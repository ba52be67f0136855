#!/usr/bin/env bash
# The kernel-boundary bench (boundary_bench.cu) on a fresh GPU machine: compile, run twice, keep the output.
#   OUT=... results/2026-12-02-h200-decode-run-gemv/run_boundary.sh
set -euo pipefail
cd "$(dirname "$0")"
OUT="${OUT:-$PWD/device-out}"
mkdir -p "$OUT"
nvcc -std=c++17 -O3 -gencode arch=compute_90a,code=sm_90a boundary_bench.cu -o /tmp/boundary_bench
/tmp/boundary_bench > "$OUT/boundary1.txt" 2>&1
/tmp/boundary_bench > "$OUT/boundary2.txt" 2>&1
