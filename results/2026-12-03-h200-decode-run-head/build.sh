#!/usr/bin/env bash
# Builds head_bench into build-bench/ on the developer machine (nvcc 13.0, sm_90a, the CUDA runtime linked
# statically); the device call carries build-bench/. head_bench.cu includes src/engine/fused/decode_kernels.cu as of
# commit 2da151b (git archive), which is 611f095's; call 1's bench was 3d0142e's head_bench.cu, without the v4 variants.
# stream_v4.inc is that commit's decode_stream_gemv, renamed, with its ring reads by one 16-byte shared load a lane
# (ld.shared.v4) where nvcc emitted four 4-byte ones at a 16-byte lane stride (4-way bank conflicts). Commit
# 914d123 made decode_stream_gemv itself read so: its sm_90a SASS equals stream_v4_gemv's.
set -euo pipefail
cd "$(dirname "$0")/../.."
rev=${HEAD_REV:-2da151b}
src="build-obj/src-$rev"
mkdir -p build-bench build-obj
rm -rf "$src" && mkdir -p "$src"
git archive "$rev" src | tar -x -C "$src"
awk '/^__global__ void __launch_bounds__\(kStreamWarps \* 32, 2\) decode_stream_gemv/{s=NR-1} s&&NR>=s{print} s&&/^\/\/\/ Ring slots of/{exit}' \
  "$src/src/engine/fused/decode_kernels.cu" | sed '$d' |
  sed 's/decode_stream_gemv(const StreamArgs a)/stream_v4_gemv(const StreamArgs a)/;
       s/unpack8<T>(wv\[o \* chunks + c\], wf\[o\])/unpack8<T>(lds128(wv + o * chunks + c), wf[o])/' \
  > build-obj/stream_v4.inc
grep -q "stream_v4_gemv" build-obj/stream_v4.inc && grep -q "lds128(wv" build-obj/stream_v4.inc
nvcc -std=c++17 -O3 -gencode arch=compute_90a,code=sm_90a -I "$src/src/engine" -I build-obj \
  results/2026-12-03-h200-decode-run-head/head_bench.cu -o build-bench/head_bench
