#!/usr/bin/env bash
# Builds ab_bench (build-bench/ab_bench.xz) on the developer machine (nvcc 13.0, sm_90a, the CUDA runtime linked statically);
# the device call carries build-bench/. Three versions of src/engine/fused/decode_kernels.cu link into it, each
# compiled with -Dgpubench=<its namespace> (as is its ab_step.cu), from `git archive` of:
#   v_old    OLD_REV (370b866: the kernels before this change)
#   v_early  NEW_REV with weights_evict_first() returning false (the early loads alone)
#   v_new    NEW_REV as committed (early loads + L2 evict_first for the streamed and run GEMVs' weights)
set -euo pipefail
cd "$(dirname "$0")/../.."
here=results/2026-12-03-h200-decode-early-loads
old=${OLD_REV:-370b866}
new=${NEW_REV:?NEW_REV=<commit>}
mkdir -p build-bench build-obj/ab
unpack() {  # REV DIR
  rm -rf "$2" && mkdir -p "$2" && git archive "$1" src | tar -x -C "$2"
}
unpack "$old" build-obj/ab/v_old
unpack "$new" build-obj/ab/v_early
unpack "$new" build-obj/ab/v_new
sed -i 's/^  return !off;$/  return false;  \/\/ ab bench: the early loads alone/' build-obj/ab/v_early/src/engine/fused/decode_kernels.cu
grep -q "ab bench: the early loads alone" build-obj/ab/v_early/src/engine/fused/decode_kernels.cu
# the sed must have hit weights_evict_first and nothing else
[ "$(grep -c 'ab bench: the early loads alone' build-obj/ab/v_early/src/engine/fused/decode_kernels.cu)" = 1 ]
arch=(-gencode arch=compute_90a,code=sm_90a)
pids=()
for v in v_old v_early v_new; do
  inc="build-obj/ab/$v/src/engine"
  nvcc -std=c++17 -O3 "${arch[@]}" -Dgpubench=gpubench_$v -I "$inc" \
    -c "$inc/fused/decode_kernels.cu" -o "build-obj/ab/$v/decode_kernels.o" &
  pids+=($!)
  nvcc -std=c++17 -O3 "${arch[@]}" -Dgpubench=gpubench_$v -DVARIANT=$v -I "$inc" -I "$here" \
    -c "$here/ab_step.cu" -o "build-obj/ab/$v/ab_step.o" &
  pids+=($!)
done
nvcc -std=c++17 -O3 "${arch[@]}" -I "$here" -c "$here/ab_main.cu" -o build-obj/ab/ab_main.o
for p in "${pids[@]}"; do wait "$p"; done
nvcc "${arch[@]}" build-obj/ab/ab_main.o build-obj/ab/v_*/decode_kernels.o build-obj/ab/v_*/ab_step.o \
  -o build-obj/ab/ab_bench
# 28 MB with three copies of the kernels: carried stripped and compressed (run_gpubench.sh unpacks it)
strip -o build-obj/ab/ab_bench.stripped build-obj/ab/ab_bench
xz -T2 -6 -c build-obj/ab/ab_bench.stripped > build-bench/ab_bench.xz
echo "built build-bench/ab_bench.xz ($old, $new)"
