#!/usr/bin/env bash
# The whole-step kernel bench on the GPU machine. step_bench is built on the developer machine (nvcc 13.0, sm_90a;
# the CUDA runtime linked statically) by build.sh and carried in build-bench/:
#   OUT=... results/2026-12-03-h200-decode-step-kernel/run.sh [label]
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT="${OUT:-$PWD/device-out}"
label="${1:-call}"
mkdir -p "$OUT/$label"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv > "$OUT/$label/nvidia-smi.txt" 2>&1
bin_v1=build-bench/step_bench_v1  # the previous version, where a call compares two
if [ -x "$bin_v1" ]; then
  timeout 120 "$bin_v1" 22 640 576 3 200 > "$OUT/$label/tinyllama-v1.txt" 2>&1; echo "rc $?" >> "$OUT/$label/tinyllama-v1.txt"
fi
for i in 1 2; do
  timeout 120 build-bench/step_bench 22 640 576 5 200 > "$OUT/$label/tinyllama-$i.txt" 2>&1; echo "rc $?" >> "$OUT/$label/tinyllama-$i.txt"
done
timeout 60 build-bench/step_bench 2 256 100 3 100 > "$OUT/$label/two-layers.txt" 2>&1; echo "rc $?" >> "$OUT/$label/two-layers.txt"
