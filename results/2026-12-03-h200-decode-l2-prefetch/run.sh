#!/usr/bin/env bash
# Device call: runs prefetch_bench (built here by build.sh, carried in build-bench/) with its default configurations,
# then a second list. Usage on the GPU machine: OUT=$OUT results/2026-12-03-h200-decode-l2-prefetch/run.sh CALL
set -uo pipefail
cd "$(dirname "$0")/../.."
call=${1:-call1}
dir="$OUT/$call"
mkdir -p "$dir"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem,power.limit --format=csv >"$dir/nvidia-smi.txt" 2>&1
build-bench/prefetch_bench 22 640 576 5 200 2>&1 | tee "$dir/bench1.txt"
build-bench/prefetch_bench 22 640 576 5 200 none "gu>down=0.5" "down>next=1" "attn>gu=0.25" "qkv>gu=1" \
  "attn>gu=0.5,o>down=0.5" "attn>gu=0.5,o>down=1" "qkv>gu=0.5,attn>down=0.5" "attn>gu=0.5,gu>down=0.25" \
  "o>gu=0.75,gu>down=0.5,down>next=1" 2>&1 | tee "$dir/bench2.txt"
