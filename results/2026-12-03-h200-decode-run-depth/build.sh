#!/usr/bin/env bash
# Builds ab_bench (build-bench/ab_bench.xz) for the run GEMV depth experiment, on the developer machine (nvcc 13.0,
# sm_90a), from results/2026-12-03-h200-decode-early-loads' ab_main.cu and ab_step.cu. Three versions of
# src/engine/fused/decode_kernels.cu, all from `git archive` of REV (default HEAD), each compiled into a namespace of
# its own (-Dgpubench=<its namespace>); only the run GEMV's depth (16-byte loads a lane in flight per weight row, and
# as many issued before they are used) differs:
#   v_old    as committed: kRunDepth 4 for every mode
#   v_early  PLAIN_EARLY / GLU_EARLY (default 6 / 4): the plain form (down, the LM heads) deeper
#   v_new    PLAIN_NEW / GLU_NEW (default 8 / 4)
set -euo pipefail
cd "$(dirname "$0")/../.."
here=results/2026-12-03-h200-decode-run-depth
ab=results/2026-12-03-h200-decode-early-loads
rev=${REV:-HEAD}
mkdir -p build-bench build-obj/ab
unpack() {  # DIR
  rm -rf "$1" && mkdir -p "$1" && git archive "$rev" src | tar -x -C "$1"
}
f=src/engine/fused/decode_kernels.cu
depth() {  # DIR PLAIN GLU
  unpack "$1"
  sed -i "s/constexpr int kRows = MODE == kStreamSwiglu ? 2 : 1, D = kRunDepth;/constexpr int kRows = MODE == kStreamSwiglu ? 2 : 1, D = MODE == kStreamSwiglu ? $3 : $2;/" \
    "$1/$f"
  grep -q "D = MODE == kStreamSwiglu ? $3 : $2;" "$1/$f"
}
unpack build-obj/ab/v_old
depth build-obj/ab/v_early "${PLAIN_EARLY:-6}" "${GLU_EARLY:-4}"
depth build-obj/ab/v_new "${PLAIN_NEW:-8}" "${GLU_NEW:-4}"
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
nvcc -std=c++17 -O3 "${arch[@]}" -I "$ab" -DAB_LABEL_OLD='"committed (depth 4)"' \
  -DAB_LABEL_EARLY="\"plain ${PLAIN_EARLY:-6}, SwiGLU ${GLU_EARLY:-4}\"" \
  -DAB_LABEL_NEW="\"plain ${PLAIN_NEW:-8}, SwiGLU ${GLU_NEW:-4}\"" \
  -c "$ab/ab_main.cu" -o build-obj/ab/ab_main.o
for p in "${pids[@]}"; do wait "$p"; done
nvcc "${arch[@]}" build-obj/ab/ab_main.o build-obj/ab/v_*/decode_kernels.o build-obj/ab/v_*/ab_step.o \
  -o build-obj/ab/ab_bench
strip -o build-obj/ab/ab_bench.stripped build-obj/ab/ab_bench
xz -T2 -6 -c build-obj/ab/ab_bench.stripped > build-bench/ab_bench.xz
for v in v_old v_early v_new; do
  echo "$v:"; grep -A1 "decode_run_gemv" "build-obj/ab/$v/ptxas.log" | grep -o "Used [0-9]* registers\|[0-9]* bytes spill stores" \
    | paste -sd' ' | cut -c1-400
done
echo "built build-bench/ab_bench.xz from $(git rev-parse --short "$rev")"
