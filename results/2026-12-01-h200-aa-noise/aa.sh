#!/usr/bin/env bash
# A/A repeats on the H200 for compare's noise floor (issue #28): the same scenario run back to back, five times in
# one process (--repeats 5) and three times as separate processes, per workload family. Run from the repository root
# after `scripts/device_run.sh build` (GPUBENCH_BUILD_DIR=build-device); records under $OUT/records/aa/.
set -uo pipefail
GB="${GB:-build-device/gpubench}"
R="$OUT/records/aa"
mkdir -p "$R"
run() {  # name, flags...: --repeats 5 in one process
  local name="$1"; shift
  timeout 120 "$GB" run "$@" --repeats 5 -q --output "$R/${name}.json" > /dev/null 2>> "$OUT/aa.log"
  echo "== $name exit $?" >> "$OUT/aa.log"
  tar -C "$OUT/records" -czf "$OUT/aa_records.tar.gz" aa
}
procs() {  # name, flags...: three separate processes
  local name="$1"; shift
  for i in 1 2 3; do
    timeout 60 "$GB" run "$@" -q --output "$R/${name}_p${i}.json" > /dev/null 2>> "$OUT/aa.log"
  done
  echo "== $name (processes) done" >> "$OUT/aa.log"
  tar -C "$OUT/records" -czf "$OUT/aa_records.tar.gz" aa
}
run resnet_amp_bs256 resnet50 --amp --batch-size 256 --dataset-size 10240 --warmup-steps 10
run resnet_amp_bs64 resnet50 --amp --batch-size 64 --dataset-size 6400 --warmup-steps 10
run bert_bf16_bs32 bert-base --precision bf16 --batch-size 32 --dataset-size 6400 --warmup-steps 10
run bert_bf16_bs128 bert-base --precision bf16 --batch-size 128 --dataset-size 12800 --warmup-steps 10
run gpt2_infer_bs1 gpt2 --mode inference --precision bf16 --batch-size 1 --dataset-size 1500 --warmup-steps 10
run gpt2_fused_bs8 gpt2 --precision bf16 --kernels fused --batch-size 8 --dataset-size 800 --warmup-steps 10
procs resnet_amp_bs256 resnet50 --amp --batch-size 256 --dataset-size 10240 --warmup-steps 10
procs bert_bf16_bs32 bert-base --precision bf16 --batch-size 32 --dataset-size 6400 --warmup-steps 10
