#!/usr/bin/env bash
# One device call after results/2026-12-05-h100-cxx20/run.sh (its build-device/ still there; else it builds): the
# bottleneck attribution (docs/bottleneck.md) on the runs #59 names, each without and with --profile: the README's main
# job, BERT-base bs 128 --kernels fused (twice without a profile: the pair that used to disagree), GPT-2 bs 8 fused,
# TinyLlama training bs 4 fused, and TinyLlama decode at batch 32 (mode: generate). Stops starting runs DEADLINE
# seconds (default 570) after the start.
#   OUT=... GPUBENCH_GIT_REVISION=<commit> bash results/2026-12-05-h100-attribution/run.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT="${OUT:-$PWD/device-out}"
DEADLINE="${DEADLINE:-570}"
mkdir -p "$OUT/records"
start=$SECONDS
GB="$PWD/build-device/gpubench"
[ -x "$GB" ] || GPUBENCH_WITH_TESTS=OFF GPUBENCH_BUILD_TARGETS=gpubench scripts/device_run.sh build || exit 1
one() {  # name, then the run's flags
  local name=$1; shift
  if [ $((SECONDS - start)) -gt $((DEADLINE - 60)) ]; then echo "== out of time before $name"; return; fi
  "$GB" run "$@" --output "$OUT/records/$name.json" > "$OUT/records/$name.txt" 2>&1
  echo "== $((SECONDS - start)) s $name exit $?: $(grep -m1 '^bounded by' "$OUT/records/$name.txt" | cut -c1-150)"
}
bert=(bert-base --precision bf16 --batch-size 128 --dataset-size 12800 --kernels fused)
gpt2=(gpt2 --precision bf16 --batch-size 8 --dataset-size 960 --kernels fused)
llama=(llama --precision bf16 --batch-size 4 --dataset-size 320 --kernels fused)
one main resnet50 --amp
one main_profile resnet50 --amp --profile true
one bert_r1 "${bert[@]}"
one bert_r2 "${bert[@]}"
one bert_profile "${bert[@]}" --profile true
one llama_decode_bs32 llama --mode generate --batch-size 32
one llama "${llama[@]}"
one llama_profile "${llama[@]}" --profile true
one gpt2 "${gpt2[@]}"
one gpt2_profile "${gpt2[@]}" --profile true
"$GB" export --per run $(ls "$OUT"/records/*.json | grep -v '\.trace\.json$') --format csv > "$OUT/attribution.csv" 2>/dev/null
python3 - "$OUT/attribution.csv" <<'PY' | tee "$OUT/summary.md"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
names = [c for c in rows[0] if c.startswith("share_")] if rows else []
print("| record | bounded by | " + " | ".join(n[6:] for n in names) + " |")
print("| --- | --- | " + " | ".join("---:" for _ in names) + " |")
for r in rows:
    cells = [f"{float(r[n]) * 100:.1f}" if r[n] not in ("", None) else "-" for n in names]
    print(f"| {r['path'].split('/')[-1]} | {r['bounded_by']} | " + " | ".join(cells) + " |")
PY
tar -C "$OUT" -czf "$OUT/records.tar.gz" records
