#!/usr/bin/env bash
# One device call (carry [".deps"]): `gpubench sweep --batch-size max --batch-search ladder` under memory limits of
# 12, 16, 24 and 48 GiB (`--memory-limit`) for ResNet-50 --amp, BERT-base, GPT-2 and TinyLlama (bf16), against what
# `gpubench fit` predicts for the same scenario and limit (docs/fit.md). Limits run in parallel lanes on the one GPU,
# as many as its memory holds at once (their caps and contexts together below its size): each process's caching
# allocator is capped, so a neighbour changes its speed, not what fits. No sweep starts DEADLINE seconds (default
# 540) after the start. Then an emulated RTX 4070 Ti (seed 000's card): ResNet-50 --amp bs 256 and 224.
#   OUT=... GPUBENCH_GIT_REVISION=<commit> bash results/2026-12-05-h100-fit-sweep/run.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT="${OUT:-$PWD/device-out}"
DEADLINE="${DEADLINE:-540}"
mkdir -p "$OUT/records"
start=$SECONDS
GB="$PWD/build-device/gpubench"
[ -x "$GB" ] || GPUBENCH_WITH_TESTS=OFF GPUBENCH_BUILD_TARGETS=gpubench scripts/device_run.sh build || exit 1
declare -A flags=([resnet50]="resnet50 --amp" [bert]="bert-base --precision bf16" [gpt2]="gpt2 --precision bf16"
                  [llama]="llama --precision bf16")
sweep_one() {  # model key, limit in GiB
  if [ $((SECONDS - start)) -gt "$DEADLINE" ]; then echo "== out of time before $1 ${2}GiB"; return; fi
  local dir="$OUT/records/$1_${2}GiB"
  # shellcheck disable=SC2086
  "$GB" sweep ${flags[$1]} --batch-size max --batch-search ladder --memory-limit "${2}GiB" --epochs 1 \
    --dataset-size 1 --warmup-steps 1 --out "$dir" > "$dir.txt" 2>&1
  echo "== $((SECONDS - start)) s $1 ${2}GiB exit $?: $(grep -m1 -o 'batch size [0-9]* chosen.*' "$dir.txt" | cut -c1-140)"
}
lane() { for limit in "$@"; do for m in resnet50 bert gpt2 llama; do sweep_one "$m" "$limit"; done; done; }
total_gib=$(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits | head -1 | awk '{print int($1/1024)}')
echo "== $total_gib GiB on $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)"
if [ "$total_gib" -ge 110 ]; then
  lane 48 & lane 24 & lane 16 & lane 12 & wait
else
  lane 48 12 & lane 24 16 & wait
fi
for b in 256 224; do
  "$GB" run resnet50 --amp --batch-size $b --dataset-size 2560 --emulate "NVIDIA GeForce RTX 4070 Ti" \
    --output "$OUT/records/emulate_4070ti_bs$b.json" > "$OUT/records/emulate_4070ti_bs$b.txt" 2>&1
  echo "== emulated RTX 4070 Ti, ResNet-50 --amp bs $b: exit $?, $(grep -m1 -E '^status|^total' "$OUT/records/emulate_4070ti_bs$b.txt")"
done
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv > "$OUT/gpu.csv"
tar -C "$OUT" -czf "$OUT/records.tar.gz" records
