#!/usr/bin/env bash
# One device call: Nsight Compute on ab_bench's eager steps, each kernel alone (serialized: no PDL overlap; clocks
# left alone): duration, DRAM bytes read and L2 hit rate, for the committed kernels (v_new: L2 evict_first) and
# v_early (the same but the weights at normal priority). Filtered by the variant's namespace in the mangled names:
#   GPT-2 (no TinyLlama layers): v_X's first 66 launches are the TinyLlama phase (LM head and argmax: eager step,
#     20 warm-up replays, one timed replay, 3 kernels each), then its eager GPT-2 step (63 kernels);
#   TinyLlama (22 layers, no GPT-2 layers): v_X's first 113 launches are its eager step.
# From the repository root:  OUT=... results/2026-12-03-h200-decode-early-loads/run_ncu.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT="${OUT:-$PWD/device-out}"
C="ncu-$(date -u +%H%M%S)"
W="$OUT/$C"
mkdir -p "$W"
finish() { tar -C "$OUT" -czf "$OUT/$C.tar.gz" "$C" && rm -rf "$W"; }
trap finish EXIT
python3 -c "import lzma; open('build-bench/ab_bench', 'wb').write(lzma.open('build-bench/ab_bench.xz').read())"
chmod +x build-bench/ab_bench
metrics=gpu__time_duration.sum,dram__bytes_read.sum,lts__t_sector_hit_rate.pct
prof() {  # NAME VARIANT SKIP COUNT ARGS...
  local name=$1 v=$2 skip=$3 count=$4; shift 4
  echo "== $(date -u +%H:%M:%S) [${SECONDS}s] $name" | tee -a "$W/session.log"
  timeout 150 ncu --clock-control none --kernel-name-base mangled --kernel-name "regex:gpubench_$v" \
    --launch-skip "$skip" --launch-count "$count" --metrics "$metrics" --csv --print-units base \
    build-bench/ab_bench "$@" > "$W/$name.csv" 2> "$W/$name.err"
  echo "exit $?" | tee -a "$W/session.log"
  python3 results/2026-12-03-h200-decode-early-loads/ncu_table.py "$W/$name.csv" > "$W/$name.txt" 2>&1
  tail -12 "$W/$name.txt" | tee -a "$W/session.log"
}
prof gpt2_new v_new 66 63 0 12 640 576 1 1
prof gpt2_early v_early 66 63 0 12 640 576 1 1
prof tiny_new v_new 0 113 22 0 640 576 1 1
prof tiny_early v_early 0 113 22 0 640 576 1 1
