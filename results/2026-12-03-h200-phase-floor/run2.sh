#!/usr/bin/env bash
# The second call (carry ["build-bench"]; build.sh builds build-bench/gpt2_chain here): GPT-2's layer products as an
# ideal PDL chain (gpt2_chain.cu), 12 layers and 2, twice each, and sync_bench once more. Text files in $OUT/<CALL>/.
#   OUT=... CALL=chain results/2026-12-03-h200-phase-floor/run2.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
W="${OUT:-$PWD/device-out}/${CALL:-chain}"
mkdir -p "$W"
{
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv
  for run in 1 2; do
    timeout 60 build-bench/gpt2_chain 12
    timeout 60 build-bench/gpt2_chain 2
  done
  timeout 60 build-bench/sync_bench 200
} > "$W/chain.txt" 2>&1
cat "$W/chain.txt"
