#!/usr/bin/env bash
# Builds ab_bench (build-bench/ab_bench.xz) for the run GEMV register experiment, on the developer machine (nvcc 13.0,
# sm_90a), from results/2026-12-03-h200-decode-early-loads' ab_main.cu and ab_step.cu. Three versions of
# src/engine/fused/decode_kernels.cu, all from `git archive` of REV (default HEAD), each compiled into a namespace of
# its own (-Dgpubench=<its namespace>):
#   v_old    as committed: every run GEMV __launch_bounds__(256, 2) (up to 128 registers; 93 plain, 116 SwiGLU)
#   v_early  the plain run GEMV (down, the LM heads) __launch_bounds__(256, 3): at most 80 registers (78, no spills)
#   v_new    every run GEMV at most 80 registers (the SwiGLU form spills 188 bytes)
# The grid is the same two blocks an SM in all three: only the registers a block holds change, so that the next
# kernel's blocks can be resident (and request their weights) while these run.
set -euo pipefail
cd "$(dirname "$0")/../.."
here=results/2026-12-03-h200-decode-run-regs
ab=results/2026-12-03-h200-decode-early-loads
rev=${REV:-HEAD}
mkdir -p build-bench build-obj/ab
unpack() {  # DIR
  rm -rf "$1" && mkdir -p "$1" && git archive "$rev" src | tar -x -C "$1"
}
for v in v_old v_early v_new; do unpack "build-obj/ab/$v"; done
bounds='__launch_bounds__(kStreamWarps \* 32, kRunBlocksPerSm) decode_run_gemv'
f=src/engine/fused/decode_kernels.cu
sed -i "s/$bounds/__launch_bounds__(kStreamWarps * 32, MODE == kStreamSwiglu ? kRunBlocksPerSm : 3) decode_run_gemv/" \
  "build-obj/ab/v_early/$f"
sed -i "s/$bounds/__launch_bounds__(kStreamWarps * 32, 3) decode_run_gemv/" "build-obj/ab/v_new/$f"
grep -q "MODE == kStreamSwiglu ? kRunBlocksPerSm : 3) decode_run_gemv" "build-obj/ab/v_early/$f"
grep -q "32, 3) decode_run_gemv" "build-obj/ab/v_new/$f"
arch=(-gencode arch=compute_90a,code=sm_90a)
pids=()
for v in v_old v_early v_new; do
  inc="build-obj/ab/$v/src/engine"
  nvcc -std=c++17 -O3 "${arch[@]}" -Xptxas -v -Dgpubench=gpubench_$v -I "$inc" \
    -c "$inc/fused/decode_kernels.cu" -o "build-obj/ab/$v/decode_kernels.o" > "build-obj/ab/$v/ptxas.log" 2>&1 &
  pids+=($!)
  nvcc -std=c++17 -O3 "${arch[@]}" -Dgpubench=gpubench_$v -DVARIANT=$v -I "$inc" -I "$ab" \
    -c "$ab/ab_step.cu" -o "build-obj/ab/$v/ab_step.o" &
  pids+=($!)
done
nvcc -std=c++17 -O3 "${arch[@]}" -I "$ab" -DAB_LABEL_OLD='"committed"' \
  -DAB_LABEL_EARLY='"plain run GEMV <= 80 registers"' -DAB_LABEL_NEW='"every run GEMV <= 80 registers"' \
  -c "$ab/ab_main.cu" -o build-obj/ab/ab_main.o
for p in "${pids[@]}"; do wait "$p"; done
nvcc "${arch[@]}" build-obj/ab/ab_main.o build-obj/ab/v_*/decode_kernels.o build-obj/ab/v_*/ab_step.o \
  -o build-obj/ab/ab_bench
strip -o build-obj/ab/ab_bench.stripped build-obj/ab/ab_bench
xz -T2 -6 -c build-obj/ab/ab_bench.stripped > build-bench/ab_bench.xz
echo "built build-bench/ab_bench.xz from $(git rev-parse --short "$rev")"
