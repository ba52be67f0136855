#!/usr/bin/env bash
# Builds an ab_bench (build-bench/<NAME>.xz, default ab_bench) on the developer machine (nvcc 13.0, sm_90a), from
# results/2026-12-03-h200-decode-early-loads' ab_main.cu and ab_step.cu. Three versions of
# src/engine/fused/decode_kernels.cu, each compiled into a namespace of its own (-Dgpubench=<its namespace>), each
# given as REV:PLAIN:GLU[:MACRO[:BLOCKS[:PBLOCKS]]]: `git archive` of REV with the run GEMV's depth (16-byte loads
# a lane in flight per weight row, and as many issued before they are used; committed: 4) set to PLAIN for the plain
# form (down, the output product, the LM heads) and GLU for the SwiGLU form (gate/up), its blocks an SM
# (kRunBlocksPerSm, committed: 2) set to BLOCKS, and the plain form's alone to PBLOCKS (its launch bounds and grid),
# each left as committed where empty; MACRO, if any, is defined for that variant's ab_step.cu (AB_O_RUN, AB_O_GEMV:
# TinyLlama's output product on the run or the per-warp GEMV; ab_step.cu's default is the streamed GEMV; decoder.cpp
# runs it on the run GEMV since 8ccebcd). BLOCKS and PBLOCKS were added for results/2026-12-03-h200-decode-run-blocks;
# specs without them build as before.
#   call 1's depth bench (built by this script's first form at 0ac8887, the same kernels):
#                             OLD=0ac8887:: EARLY=0ac8887:6:4 NEW=0ac8887:8:4 build.sh
#   call 1's position bench:  NAME=ab_pos OLD=bf0e56d:: EARLY=6df4880:: NEW=6df4880:8:4 build.sh
#   call 2's output bench:    NAME=ab_out OLD=0fd5342:: EARLY=0fd5342:::AB_O_RUN NEW=0fd5342:::AB_O_GEMV build.sh
#   run-blocks call 1:        OLD=5aa0f9b:::AB_O_RUN EARLY=5aa0f9b:8:4:AB_O_RUN:1 NEW=5aa0f9b:4:4:AB_O_RUN:1 build.sh
#   run-blocks call 2:        NAME=ab_blocks3 OLD=5aa0f9b:::AB_O_RUN EARLY=5aa0f9b:::AB_O_RUN::3
#                             NEW=5aa0f9b:2::AB_O_RUN::3 build.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
ab=results/2026-12-03-h200-decode-early-loads
name=${NAME:-ab_bench}
mkdir -p build-bench build-obj/ab
f=src/engine/fused/decode_kernels.cu
label() {  # SPEC
  IFS=: read -r rev plain glu macro blocks pblocks <<< "$1"
  echo "$(git rev-parse --short "$rev")${plain:+, plain $plain}${glu:+, SwiGLU $glu}${blocks:+, $blocks/SM}${pblocks:+, plain $pblocks/SM}${macro:+, $macro}"
}
macro_of() {  # SPEC: -D<its macro>, or nothing
  IFS=: read -r _ _ _ macro _ _ <<< "$1"
  [ -n "$macro" ] && echo "-D$macro" || true
}
unpack() {  # DIR SPEC
  IFS=: read -r rev plain glu _ blocks pblocks <<< "$2"
  rm -rf "$1" && mkdir -p "$1" && git archive "$rev" src | tar -x -C "$1"
  if [ -n "$blocks" ]; then
    sed -i "s/^constexpr int kRunBlocksPerSm = 2;/constexpr int kRunBlocksPerSm = $blocks;/" "$1/$f"
    grep -q "^constexpr int kRunBlocksPerSm = $blocks;" "$1/$f"
  fi
  if [ -n "$pblocks" ]; then
    sed -i -e "s/__launch_bounds__(kStreamWarps \* 32, kRunBlocksPerSm) decode_run_gemv/__launch_bounds__(kStreamWarps * 32, MODE == kStreamSwiglu ? kRunBlocksPerSm : $pblocks) decode_run_gemv/" \
      -e "s/int64_t{device::multiprocessors()} \* kRunBlocksPerSm,/int64_t{device::multiprocessors()} * (MODE == kStreamSwiglu ? kRunBlocksPerSm : $pblocks),/" "$1/$f"
    [ "$(grep -c "MODE == kStreamSwiglu ? kRunBlocksPerSm : $pblocks" "$1/$f")" = 2 ]
  fi
  if [ -n "$plain$glu" ]; then
    sed -i "s/constexpr int kRows = MODE == kStreamSwiglu ? 2 : 1, D = kRunDepth;/constexpr int kRows = MODE == kStreamSwiglu ? 2 : 1, D = MODE == kStreamSwiglu ? ${glu:-kRunDepth} : ${plain:-kRunDepth};/" \
      "$1/$f"
    grep -q "D = MODE == kStreamSwiglu ? ${glu:-kRunDepth} : ${plain:-kRunDepth};" "$1/$f"
  fi
}
unpack build-obj/ab/v_old "${OLD:?OLD=REV:PLAIN:GLU}"
unpack build-obj/ab/v_early "${EARLY:?EARLY=REV:PLAIN:GLU}"
unpack build-obj/ab/v_new "${NEW:?NEW=REV:PLAIN:GLU}"
arch=(-gencode arch=compute_90a,code=sm_90a)
pids=()
declare -A spec=([v_old]="$OLD" [v_early]="$EARLY" [v_new]="$NEW")
for v in v_old v_early v_new; do
  inc="build-obj/ab/$v/src/engine"
  nvcc -std=c++17 -O3 "${arch[@]}" -Xptxas -v -Dgpubench=gpubench_$v -I "$inc" \
    -c "$inc/fused/decode_kernels.cu" -o "build-obj/ab/$v/decode_kernels.o" > "build-obj/ab/$v/ptxas.log" 2>&1 &
  pids+=($!)
  # shellcheck disable=SC2046
  nvcc -std=c++17 -O3 "${arch[@]}" -Dgpubench=gpubench_$v -DVARIANT=$v $(macro_of "${spec[$v]}") -I "$inc" -I "$ab" \
    -c "$ab/ab_step.cu" -o "build-obj/ab/$v/ab_step.o" &
  pids+=($!)
done
nvcc -std=c++17 -O3 "${arch[@]}" -I "$ab" -DAB_LABEL_OLD="\"$(label "$OLD")\"" \
  -DAB_LABEL_EARLY="\"$(label "$EARLY")\"" -DAB_LABEL_NEW="\"$(label "$NEW")\"" \
  -c "$ab/ab_main.cu" -o build-obj/ab/ab_main.o
for p in "${pids[@]}"; do wait "$p"; done
nvcc "${arch[@]}" build-obj/ab/ab_main.o build-obj/ab/v_*/decode_kernels.o build-obj/ab/v_*/ab_step.o \
  -o build-obj/ab/ab_bench
strip -o build-obj/ab/ab_bench.stripped build-obj/ab/ab_bench
xz -T2 -6 -c build-obj/ab/ab_bench.stripped > "build-bench/$name.xz"
for v in v_old v_early v_new; do  # the bf16, one-row run GEMVs: plain, SwiGLU, greedy
  for m in 0 2 4; do
    grep -A3 "Compiling entry.*decode_run_gemvI13__nv_bfloat16Li1ELi${m}EE" "build-obj/ab/$v/ptxas.log" \
      | grep -oE "[0-9]+ bytes spill stores|Used [0-9]+ registers" | paste -sd' ' | sed "s/^/$v run GEMV mode $m: /"
  done
done
echo "built build-bench/$name.xz: $(label "$OLD") | $(label "$EARLY") | $(label "$NEW")"
