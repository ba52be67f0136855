#!/usr/bin/env bash
# Device call: head_bench (built here by build.sh, carried in build-bench/), twice (call 2: RUNS=1, once).
# On the GPU machine: OUT=$OUT results/2026-12-03-h200-decode-run-head/run.sh CALL
set -uo pipefail
cd "$(dirname "$0")/../.."
dir="$OUT/${1:-call1}-$(date -u +%H%M%S)"
mkdir -p "$dir"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem,power.limit --format=csv >"$dir/nvidia-smi.txt" 2>&1
for i in $(seq 1 "${RUNS:-2}"); do timeout 100 build-bench/head_bench 22 640 576 5 200 2>&1 | tee "$dir/bench$i.txt"; done
