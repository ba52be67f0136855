#!/usr/bin/env bash
# Call 3 (warm machine, the build of commit 4198297 from run.sh): GPT-2, BERT-base and the SD UNet, FP8 against bf16,
# gpubench only. The JSON records did not come back (the device tool returns a handful of files and the records were
# past its count); the console lines below and the per-run logs in this folder are what remains.
GB=build-device/gpubench; mkdir -p $OUT/records; run() { n=$1; shift; echo "== $(date -u +%T) $n: $GB run $*" | tee -a $OUT/session.log; timeout 120 $GB run "$@" --quiet --output $OUT/records/$n.json > $OUT/$n.log 2>&1; echo "exit $?" | tee -a $OUT/session.log; python3 -c "
import json; r=json.load(open('$OUT/records/$n.json')); s=r['summary']; print('$n', r['status'], round(s['samples_per_s'],2), 'median', round(s['step_time']['median_ms'],2), 'peak GiB', round(s['peak_allocated_bytes']/2**30,1), 'fp8 ran', len((r['precision'].get('fp8') or {}).get('converted',[])))" 2>&1 | tail -1 | tee -a $OUT/session.log; }
for p in fp8 bf16; do run gpt2-aten-$p gpt2 --batch-size 8 --precision $p --kernels aten --dataset-size 2400; run gpt2-fused-$p gpt2 --batch-size 8 --precision $p --kernels fused --dataset-size 2400; done
for p in fp8 bf16; do run bert-$p bert-base --batch-size 128 --precision $p --kernels fused --dataset-size 25600; done
for p in fp8 bf16; do run unet-$p sd-unet --batch-size 32 --precision $p --dataset-size 1280; done
for p in bf16 fp8; do run bert-r2-$p bert-base --batch-size 128 --precision $p --kernels fused --dataset-size 25600; run gpt2-aten-r2-$p gpt2 --batch-size 8 --precision $p --kernels aten --dataset-size 2400; done
