#!/usr/bin/env bash
# Builds prefetch_bench into build-bench/ on the developer machine (nvcc 13.0, sm_90a, the CUDA runtime linked
# statically); the device call carries build-bench/. The bench needs the kernels' prefetch (DecodePrefetch), which
# was measured and then taken out of the code: it builds against src/ as of commit 10615e5 (git archive), the kernels
# calls 1 and 2 ran (call 1 ran 98ee93a's: the same but for the `lines` option, which it did not use).
set -euo pipefail
cd "$(dirname "$0")/../.."
rev=${PREFETCH_REV:-10615e5}
mkdir -p build-bench build-obj
rm -rf "build-obj/src-$rev" && mkdir -p "build-obj/src-$rev"
git archive "$rev" src | tar -x -C "build-obj/src-$rev"
flags=(-std=c++17 -O3 -gencode arch=compute_90a,code=sm_90a -I "build-obj/src-$rev/src/engine")
nvcc "${flags[@]}" -c "build-obj/src-$rev/src/engine/fused/decode_kernels.cu" -o build-obj/decode_kernels_prefetch.o &
nvcc "${flags[@]}" -c results/2026-12-03-h200-decode-l2-prefetch/prefetch_bench.cu -o build-obj/prefetch_bench.o &
wait
nvcc -gencode arch=compute_90a,code=sm_90a build-obj/decode_kernels_prefetch.o build-obj/prefetch_bench.o \
  -o build-bench/prefetch_bench
