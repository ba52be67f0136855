#!/usr/bin/env bash
# One GPU-machine session, in phases (run several in one call: `scripts/device_run.sh build test main pairs`):
#   build  - bootstrap without apt (the machine has everything), Release build in build-device/
#   test   - the whole ctest suite, *_CUDA tests included
#   main   - the README's main job: gpubench run resnet50 --amp (one full 100k-sample epoch)
#   cudatest - only the *_CUDA tests (the CPU suite runs in CI)
#   pairs  - gpubench and scripts/pytorch_reference.py on the same scenarios, alternating A B A B
#   parity_resnet / parity_bert - issue #5's table: gpubench eager and CUDA-graph runs against PyTorch eager and
#            PyTorch's own whole-step graph capture, alternating, $PAIRS rounds (default 3)
#   extras - torch.compile reference for BERT bs 32, 3 repeats for the coefficient of variation
#   ddp    - issue #7 on nvidia-h200-x2: an NCCL smoke run, then `gpubench scaling --gpus 1,2` and PyTorch DDP
#            (torchrun) on the same scenarios, alternating, and scripts/compare_scaling.py's table
#   sweep  - issue #6 on a GPU: `--batch-size max` for ResNet-50 bf16 (real OOMs) and a batch-size sweep
#   trust  - issue #12 on nvidia-h200-x2: --amp (fp16 + loss scaling) against PyTorch AMP and bf16, and 1- vs 2-GPU
#            energy with nvidia-smi logging both boards alongside
#   faults - issue #13's fault paths on NCCL (nvidia-h200-x2): a rank killed, a rank stopped, rank 0 killed after an
#            epoch, each timed; and a clean 2-GPU run through the runner
#   arch   - issue #14 (runner, tagged metrics, printers, per-model options, train() split): ResNet-50 AMP bs 256 and
#            BERT-base bs 32 against PyTorch, alternating, $REPS rounds; then export, compare --metric and report
#            on those GPU records
#   profile - issue #15: --profile on the H200 (BERT-base bs 128 eager and graph, bs 32, ResNet-50 AMP bs 256, the UNet
#            bs 8), BERT bs 128 against transformers alternating ($REPS rounds) with torch.profiler traces of the same
#            steps, and `gpubench trace` of PyTorch's trace against ours (trace_diff_*.txt)
#   bertperf - issue #15's targets: BERT-base eager at bs 32/128/256 seq 128 and bs 32 seq 512, and graph mode at bs 128,
#            against transformers eager (fused AdamW), alternating, $REPS rounds
#   bertperf2 - a second round of bs 128 (eager and graph) and seq 512 at bs 128
#   unet   - the SD v1.5 UNet against diffusers, bs 8 and 32. The GPU machine has no diffusers: first, here,
#            `python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp
#            --platform manylinux2014_x86_64 -d .whl diffusers importlib_metadata zipp requests idna urllib3 certifi
#            charset_normalizer` (.whl/ is git-ignored), then run with carry [".whl"]
#   data   - issue #16: `gpubench dataset make` (25,600 images), then the JPEG pipeline against PyTorch's standard
#            recipe on that folder: one core each, the loader alone (15 workers), ResNet-50 bf16/fp16 bs 256 trained
#            end to end with GPU and CPU decoding and on synthetic data; scripts/compare_input.py's table. Carry
#            [".deps"] (libjpeg headers, see phase_build)
#   data_quick - the same without PyTorch's training runs, with CPU decoding in fp16 too
#   llm_train - issue #18: gpt2 (bs 8, seq 1024) and llama (TinyLlama-1.1B, bs 4, seq 2048) training in bf16 with fused
#            AdamW against transformers eager, alternating, $REPS rounds; gpubench's CUDA-graph mode beside them
#   llm_infer - issue #18: mode inference for gpt2 and llama at batch 1 and 32 against transformers eager (bf16 weights),
#            alternating, $REPS rounds; gpubench's CUDA-graph mode at batch 1
#   llm_profile - issue #18: gpt2 and llama training with --profile and PyTorch's trace of the same steps, diffed by
#            `gpubench trace` (summary_trace_diff_*.txt)
#   llm_multi - issue #18 on nvidia-h200-x2: gpt2/llama data parallel on 2 GPUs, gpt2 inference on 2 ranks, and seed
#            004's sampling step (fp16, batch 1) with `compare published/seed004-rtx4070-sd`
#   unet_infer - issue #18: the SD v1.5 UNet's guided denoising step (mode inference) at batch 1 and 32 against
#            diffusers (UNet2DConditionModel + DDIMScheduler), wheels carried in .whl/ as for `unet`
#   workloads - telemetry (with an nvidia-smi power log alongside, and telemetry on/off A B A B), BERT-base vs
#            transformers, the SD v1.5 UNet at batch 8 and 32
# Logs and records go to $OUT (the device tool brings them back); records are bundled into records.tar.gz.
# Pass GPUBENCH_GIT_REVISION=<the commit here> in the device command: the copy there carries an earlier commit's .git,
# so without it the records would name that commit (with -dirty).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-$PWD/device-out}"
mkdir -p "$OUT/records"
export GPUBENCH_NO_APT=1 GPUBENCH_BUILD_DIR="$PWD/build-device" NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
GB="$GPUBENCH_BUILD_DIR/gpubench"
PY="$(command -v python3)"
REPS="${REPS:-2}"

bundle() { tar -C "$OUT" -czf "$OUT/records.tar.gz" records; }
log() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$OUT/session.log"; }

phase_build() {
  log "build"
  nvidia-smi > "$OUT/nvidia-smi.txt" 2>&1
  nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm,temperature.gpu --format=csv >> "$OUT/session.log" 2>&1
  # libjpeg-turbo's headers: the GPU machine may lack them (no apt there); Debian's libjpeg62-turbo(-dev), unpacked
  # into .deps/jpeg on the dev machine (`apt-get download libjpeg62-turbo libjpeg62-turbo-dev`, `dpkg -x`), travel
  # with carry [".deps"] and are linked statically.
  if [ ! -f /usr/include/jpeglib.h ] && [ -f .deps/jpeg/include/jpeglib.h ]; then
    export GPUBENCH_CMAKE_ARGS="-DJPEG_INCLUDE_DIR=$PWD/.deps/jpeg/include -DJPEG_LIBRARY=$PWD/.deps/jpeg/lib/libjpeg.a"
    log "libjpeg from .deps/jpeg (static)"
  fi
  scripts/bootstrap.sh > "$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log"; log "BUILD FAILED"; return 1; }
  tail -3 "$OUT/build.log"
}

phase_test() {
  log "test"
  # 8 tests at once on 16 cores: two OpenMP threads each, or the CPU tests oversubscribe the machine.
  (cd "$GPUBENCH_BUILD_DIR" && OMP_NUM_THREADS=2 ctest --output-on-failure -j 8 > "$OUT/ctest.log" 2>&1)
  local rc=$?
  grep -E "tests passed|tests failed|Failed|_CUDA" "$OUT/ctest.log" | tail -20
  log "ctest exit $rc"
}

phase_cudatest() {
  log "cudatest"
  (cd "$GPUBENCH_BUILD_DIR" && timeout "${CUDATEST_TIMEOUT:-300}" ctest --output-on-failure -R "_CUDA" > "$OUT/ctest_cuda.log" 2>&1)
  local rc=$?
  grep -E "tests passed|tests failed|Failed|_CUDA" "$OUT/ctest_cuda.log" | tail -12
  log "ctest (CUDA) exit $rc"
}

run_gb() {  # name, flags...
  local name="$1"
  shift
  log "gpubench $name"
  "$GB" run "$@" --quiet --output "$OUT/records/$name.json" > /dev/null 2>> "$OUT/session.log"
  bundle
}

run_pt() {  # name, flags...
  local name="$1"
  shift
  log "pytorch $name"
  "$PY" scripts/pytorch_reference.py "$@" --json "$OUT/records/$name.json" > /dev/null 2>> "$OUT/session.log"
  bundle
}

phase_workloads() {
  local rn="resnet50 --precision amp --batch-size 256 --dataset-size 25600 --epochs 3 --warmup-steps 15"
  log "telemetry on, with nvidia-smi sampling power every 100 ms alongside"
  nvidia-smi --query-gpu=timestamp,power.draw,clocks.sm,temperature.gpu --format=csv,nounits -lms 100 \
      > "$OUT/records/nvidia_smi_during_telemetry_on_r1.csv" 2>&1 &
  local smi=$!
  # shellcheck disable=SC2086
  run_gb telemetry_on_r1 $rn --telemetry-trace "$OUT/records/telemetry_on_r1_trace.csv"
  kill $smi 2>/dev/null
  local bert="--precision bf16 --batch-size 32 --seq-len 128 --dataset-size 9600 --warmup-steps 10"
  for r in 1 2; do
    # shellcheck disable=SC2086
    run_gb "gpubench_bert_bs32_r$r" bert-base $bert
    # shellcheck disable=SC2086
    run_pt "pytorch_bert_bs32_r$r" --model bert-base $bert
  done
  # shellcheck disable=SC2086
  run_pt pytorch_fused_bert_bs32 --model bert-base $bert --fused
  run_gb sd_unet_bs8 sd-unet --precision bf16 --batch-size 8 --dataset-size 240 --warmup-steps 5
  # shellcheck disable=SC2086
  run_gb telemetry_off_r1 $rn --telemetry false
  run_gb sd_unet_bs32 sd-unet --precision bf16 --batch-size 32 --dataset-size 640 --warmup-steps 3
  # shellcheck disable=SC2086
  run_gb telemetry_on_r2 $rn
  # shellcheck disable=SC2086
  run_gb telemetry_off_r2 $rn --telemetry false
}

phase_main() {
  log "main: gpubench run resnet50 --amp"
  "$GB" run resnet50 --amp --output "$OUT/records/main_resnet50_amp.json" 2>&1 | tail -8
}

# name | gpubench flags | the same scenario for the reference
pair() {
  local name="$1" flags="$2" r
  for r in $(seq 1 "$REPS"); do
    log "pair $name rep $r: gpubench"
    # shellcheck disable=SC2086
    "$GB" run resnet50 $flags --quiet --output "$OUT/records/gpubench_${name}_r$r.json" > /dev/null 2>> "$OUT/session.log"
    log "pair $name rep $r: pytorch"
    # shellcheck disable=SC2086
    "$PY" scripts/pytorch_reference.py $flags --json "$OUT/records/pytorch_${name}_r$r.json" > /dev/null 2>> "$OUT/session.log"
    bundle
  done
}

# One round of a parity scenario: gpubench eager, PyTorch eager, gpubench graph, PyTorch graph.
# name | model | shared flags | PyTorch eager flags (e.g. --fused)
parity_round() {
  local name="$1" model="$2" flags="$3" pt_eager="$4" r="$5"
  log "parity $name round $r"
  # shellcheck disable=SC2086
  "$GB" run "$model" $flags --quiet --output "$OUT/records/gpubench_${name}_eager_r$r.json" > /dev/null 2>> "$OUT/session.log"
  # shellcheck disable=SC2086
  "$PY" scripts/pytorch_reference.py --model "$model" $flags $pt_eager --json "$OUT/records/pytorch_${name}_eager_r$r.json" > /dev/null 2>> "$OUT/session.log"
  # shellcheck disable=SC2086
  "$GB" run "$model" $flags --cuda-graph --quiet --output "$OUT/records/gpubench_${name}_graph_r$r.json" > /dev/null 2>> "$OUT/session.log"
  # shellcheck disable=SC2086
  "$PY" scripts/pytorch_reference.py --model "$model" $flags --graph --json "$OUT/records/pytorch_${name}_graph_r$r.json" > /dev/null 2>> "$OUT/session.log"
  bundle
}

phase_parity_resnet() {
  local r
  for r in $(seq 1 "${PAIRS:-3}"); do
    parity_round resnet_bs256 resnet50 "--precision bf16 --memory-format channels_last --batch-size 256 --dataset-size 12800 --warmup-steps 15" "" "$r"
    parity_round resnet_bs128 resnet50 "--precision bf16 --memory-format channels_last --batch-size 128 --dataset-size 9600 --warmup-steps 15" "" "$r"
  done
  "$PY" scripts/compare_pytorch.py "$OUT/records" --json "$OUT/summary_resnet.json" | tee "$OUT/summary_resnet.md"
}

phase_parity_bert() {
  local r
  for r in $(seq 1 "${PAIRS:-3}"); do
    parity_round bert_bs32 bert-base "--precision bf16 --batch-size 32 --seq-len 128 --dataset-size 6400 --warmup-steps 15" "--fused" "$r"
    parity_round bert_bs128 bert-base "--precision bf16 --batch-size 128 --seq-len 128 --dataset-size 6400 --warmup-steps 10" "--fused" "$r"
  done
  "$PY" scripts/compare_pytorch.py "$OUT/records" --json "$OUT/summary_bert.json" | tee "$OUT/summary_bert.md"
}

phase_extras() {
  log "pytorch compile bert bs32"
  "$PY" scripts/pytorch_reference.py --model bert-base --precision bf16 --batch-size 32 --seq-len 128 --dataset-size 6400 \
      --warmup-steps 15 --fused --compile --json "$OUT/records/compile_bert_bs32.json" > /dev/null 2>> "$OUT/session.log"
  bundle
  local rn="resnet50 --precision bf16 --batch-size 256 --dataset-size 12800 --warmup-steps 15 --quiet"
  log "3 repeats in one process (coefficient of variation)"
  # shellcheck disable=SC2086
  "$GB" run $rn --cuda-graph --epochs 2 --repeats 3 --output "$OUT/records/cov.json" 2>> "$OUT/session.log" | grep -E "repeats|total" | tee -a "$OUT/session.log"
  "$GB" info --measure-peak 2>&1 | tee "$OUT/measure_peak.txt" | grep -E "matmul|copy|table"
  bundle
}

ddp_scenario() {  # name | model | flags | extra PyTorch flags
  local name="$1" model="$2" flags="$3" pt="$4"
  log "ddp $name: gpubench scaling 1,2"
  # shellcheck disable=SC2086
  "$GB" scaling "$model" --gpus 1,2 --out-dir "$OUT/records/scaling_$name" $flags 2>> "$OUT/session.log" | tail -4
  log "ddp $name: PyTorch 1 GPU"
  # shellcheck disable=SC2086
  "$PY" scripts/pytorch_reference.py --model "$model" $flags $pt --json "$OUT/records/pytorch_${name}_1gpu.json" > /dev/null 2>> "$OUT/session.log"
  log "ddp $name: PyTorch DDP 2 GPUs (torchrun)"
  # shellcheck disable=SC2086
  "$PY" -m torch.distributed.run --standalone --nproc-per-node 2 scripts/pytorch_reference.py --model "$model" $flags $pt \
      --json "$OUT/records/pytorch_${name}_2gpu.json" > /dev/null 2>> "$OUT/session.log"
  bundle
}

phase_ddp() {
  nvidia-smi topo -m > "$OUT/topo.txt" 2>&1
  log "ddp smoke: 2 ranks, small ResNet"
  "$GB" run resnet50 --image-size 64 --batch-size 16 --dataset-size 320 --warmup-steps 2 --precision bf16 \
      --nproc-per-node 2 --ddp-timeout 60s --quiet --output "$OUT/records/smoke.json" 2>&1 | tail -5 | tee -a "$OUT/session.log"
  ddp_scenario resnet_bs256 resnet50 "--precision bf16 --memory-format channels_last --batch-size 256 --dataset-size 51200 --warmup-steps 15" ""
  ddp_scenario resnet_bs128 resnet50 "--precision bf16 --memory-format channels_last --batch-size 128 --dataset-size 25600 --warmup-steps 15" ""
  ddp_scenario bert_bs32 bert-base "--precision bf16 --batch-size 32 --seq-len 128 --dataset-size 12800 --warmup-steps 15" "--fused"
  "$PY" scripts/compare_scaling.py "$OUT/records" --json "$OUT/summary_ddp.json" | tee "$OUT/summary_ddp.md"
}

phase_sweep() {
  log "sweep: ResNet-50 bf16 --batch-size max"
  "$GB" sweep resnet50 --precision bf16 --batch-size max --epochs 1 --warmup-steps 3 --telemetry false \
      --out-dir "$OUT/records/sweep_max" 2>> "$OUT/session.log" | tail -3
  bundle
  log "sweep: ResNet-50 bf16 batch 64..1024"
  "$GB" sweep resnet50 --precision bf16 --batch-size 64,128,256,512,1024 --dataset-size 16384 --warmup-steps 10 \
      --out-dir "$OUT/records/sweep_bs" 2>> "$OUT/session.log" | tail -7
}

# Issue #12 on nvidia-h200-x2: the README's --amp meaning against PyTorch AMP, and a job's energy over 1 and 2 GPUs
# with nvidia-smi logging both boards' power alongside (the cross-check for the summed figures).
phase_trust() {
  log "trust: gpubench run resnet50 --amp (PyTorch AMP: fp16 + loss scaling)"
  "$GB" run resnet50 --amp --output "$OUT/records/main_resnet50_amp.json" 2>&1 | tail -12 | tee -a "$OUT/session.log"
  pair amp_bs256 "--precision amp --batch-size 256 --dataset-size 25600 --warmup-steps 15"
  pair bf16_bs256 "--precision bf16 --batch-size 256 --dataset-size 25600 --warmup-steps 15"
  "$PY" scripts/compare_pytorch.py "$OUT/records" --json "$OUT/summary_amp.json" | tee "$OUT/summary_amp.md"
  log "trust: energy of 1 and 2 GPUs (nvidia-smi alongside)"
  nvidia-smi --query-gpu=index,timestamp,power.draw,clocks.sm --format=csv,nounits -lms 200 \
      > "$OUT/records/nvidia_smi_scaling.csv" 2>&1 &
  local smi=$!
  "$GB" scaling resnet50 --gpus 1,2 --amp --batch-size 256 --dataset-size 51200 --warmup-steps 15 \
      --out-dir "$OUT/records/scaling_energy" 2>> "$OUT/session.log" | tee -a "$OUT/session.log"
  kill $smi 2>/dev/null
  bundle
}

# Issue #13's fault paths on NCCL (nvidia-h200-x2; the CI tests run them on Gloo): a rank killed, a rank stopped,
# rank 0 killed after an epoch; each timed, with its record kept. Also a clean 2-GPU run through the runner.
fault_run() {  # name | fault | ddp timeout | extra flags
  local name="$1" fault="$2" timeout="$3" extra="$4" t0 rc
  log "faults $name: GPUBENCH_FAULT_INJECT=$fault --ddp-timeout $timeout"
  t0=$(date +%s)
  # shellcheck disable=SC2086
  GPUBENCH_FAULT_INJECT="$fault" "$GB" run resnet50 --amp --batch-size 128 --dataset-size 25600 --epochs 3 \
      --warmup-steps 10 --nproc-per-node 2 --ddp-timeout "$timeout" $extra --quiet \
      --output "$OUT/records/fault_$name.json" > /dev/null 2>> "$OUT/session.log"
  rc=$?
  log "faults $name: exit $rc after $(( $(date +%s) - t0 )) s"
  bundle
}

phase_faults() {
  log "faults: a clean 2-GPU run (energy per rank through the runner)"
  "$GB" run resnet50 --amp --batch-size 256 --dataset-size 25600 --nproc-per-node 2 --quiet \
      --output "$OUT/records/clean_2gpu.json" 2>> "$OUT/session.log" | tail -3 | tee -a "$OUT/session.log"
  fault_run killed_rank1 kill-rank:1:step:20 30s ""
  fault_run stopped_rank1 stop-rank:1:step:20 20s ""
  fault_run killed_rank0_after_epoch1 kill-rank:0:after-epoch:1 30s ""
  ps aux | grep -c "[g]pubench run" | xargs -I{} echo "gpubench processes left: {}" | tee -a "$OUT/session.log"
}

phase_arch() {
  pair amp_bs256 "--precision amp --batch-size 256 --dataset-size 25600 --warmup-steps 15"
  local bert="--precision bf16 --batch-size 32 --seq-len 128 --dataset-size 6400 --warmup-steps 15" r
  for r in $(seq 1 "$REPS"); do
    # shellcheck disable=SC2086
    run_gb "gpubench_bert_bs32_r$r" bert-base $bert
    # shellcheck disable=SC2086
    run_pt "pytorch_bert_bs32_r$r" --model bert-base $bert --fused
  done
  "$PY" scripts/compare_pytorch.py "$OUT/records" --json "$OUT/summary_arch.json" | tee "$OUT/summary_arch.md"
  mkdir -p "$OUT/gpubench_only"
  cp "$OUT"/records/gpubench_*.json "$OUT/gpubench_only/"
  log "export, compare --metric, report on the GPU records"
  "$GB" export "$OUT/gpubench_only" --out "$OUT/arch_epochs.csv" 2>> "$OUT/session.log"
  "$GB" export "$OUT/gpubench_only" --per run --format jsonl --out "$OUT/arch_runs.jsonl" 2>> "$OUT/session.log"
  local m
  for m in samples_per_s joules_per_sample step_time_p95_ms peak_reserved_bytes; do
    "$GB" compare "$OUT/records/gpubench_amp_bs256_r1.json" "$OUT/records/gpubench_amp_bs256_r2.json" --metric "$m" \
        --format md 2>> "$OUT/session.log" | tee -a "$OUT/arch_compare.md"
    echo "exit ${PIPESTATUS[0]}" >> "$OUT/arch_compare.md"
  done
  "$GB" report "$OUT/gpubench_only" --out "$OUT/arch_report" --title "issue 14 on the H200" 2>> "$OUT/session.log" | tail -1
  rm -rf "$OUT/gpubench_only"
}

phase_profile() {
  local bert="--precision bf16 --batch-size 128 --seq-len 128 --dataset-size 7680 --warmup-steps 15" r
  for r in $(seq 1 "$REPS"); do
    log "gpubench bert bs128 --profile (round $r)"
    # shellcheck disable=SC2086
    "$GB" run bert-base $bert --profile --output "$OUT/records/gpubench_bert_bs128_r$r.json" \
        > "$OUT/records/console_gpubench_bert_bs128_r$r.txt" 2>> "$OUT/session.log"
    # shellcheck disable=SC2086
    run_pt "pytorch_bert_bs128_r$r" --model bert-base $bert --fused --trace "$OUT/records/pytorch_bert_bs128_r$r.trace.json"
  done
  "$GB" trace "$OUT/records/pytorch_bert_bs128_r1.trace.json" > "$OUT/records/profile_pytorch_bert_bs128.txt" 2>&1
  "$GB" trace "$OUT/records/pytorch_bert_bs128_r1.trace.json" "$OUT/records/gpubench_bert_bs128_r1.trace.json" --top 40 \
      > "$OUT/summary_trace_diff_bert_bs128.txt" 2>&1
  "$PY" scripts/compare_pytorch.py "$OUT/records" --json "$OUT/records/summary_profile.json" | tee "$OUT/summary_profile.md"
  local name
  for spec in "bert_bs128_graph|bert-base $bert --cuda-graph" \
              "bert_bs32|bert-base --precision bf16 --batch-size 32 --dataset-size 3200 --warmup-steps 15" \
              "resnet50_amp_bs256|resnet50 --precision amp --batch-size 256 --dataset-size 12800 --warmup-steps 15" \
              "sdunet_bs8|sd-unet --precision bf16 --batch-size 8 --dataset-size 320 --warmup-steps 5"; do
    name="${spec%%|*}"
    log "gpubench $name --profile"
    # shellcheck disable=SC2086
    "$GB" run ${spec#*|} --profile --output "$OUT/records/profiled_$name.json" \
        > "$OUT/records/console_profiled_$name.txt" 2>> "$OUT/session.log"
  done
  grep "^bounded by\|^profile (" "$OUT"/records/console_*.txt | tee "$OUT/summary_verdicts.txt"
  rm -f "$OUT"/records/profiled_*.trace.json "$OUT"/records/*_r[2-9].trace.json  # summarised in their records
  gzip -f "$OUT"/records/*.trace.json
}

pair_bert() {  # round name flags...: gpubench and transformers (fused AdamW) on one BERT scenario, one after the other
  local r="$1" name="$2"
  shift 2
  run_gb "gpubench_${name}_r$r" bert-base "$@"
  run_pt "pytorch_${name}_r$r" --model bert-base "$@" --fused
}

BERT_BS128="--precision bf16 --warmup-steps 15 --batch-size 128 --seq-len 128 --dataset-size 12800"

phase_bertperf() {
  local common="--precision bf16 --warmup-steps 15" r
  for r in $(seq 1 "$REPS"); do
    # shellcheck disable=SC2086
    pair_bert "$r" bs32 $common --batch-size 32 --seq-len 128 --dataset-size 6400
    # shellcheck disable=SC2086
    pair_bert "$r" bs128_eager $BERT_BS128
    # shellcheck disable=SC2086
    pair_bert "$r" bs256 $common --batch-size 256 --seq-len 128 --dataset-size 12800
    # shellcheck disable=SC2086
    pair_bert "$r" bs32_seq512 $common --batch-size 32 --seq-len 512 --dataset-size 3200
    # shellcheck disable=SC2086
    run_gb "gpubench_bs128_graph_r$r" bert-base $BERT_BS128 --cuda-graph
  done
  "$PY" scripts/compare_pytorch.py "$OUT/records" --json "$OUT/records/summary_bertperf.json" | tee "$OUT/summary_bertperf.md"
}

phase_bertperf2() {  # a second round of the main BERT targets, and seq 512 at batch 128
  # shellcheck disable=SC2086
  pair_bert 2 bs128_eager $BERT_BS128
  pair_bert 2 bs128_seq512 --precision bf16 --warmup-steps 15 --batch-size 128 --seq-len 512 --dataset-size 6400
  # shellcheck disable=SC2086
  run_gb "gpubench_bs128_graph_r2" bert-base $BERT_BS128 --cuda-graph
  "$PY" scripts/compare_pytorch.py "$OUT/records" --json "$OUT/records/summary_bertperf2.json" | tee "$OUT/summary_bertperf2.md"
}

phase_unet() {  # the SD v1.5 UNet against diffusers' UNet2DConditionModel (wheels carried in .whl/)
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
      >> "$OUT/session.log" 2>&1 || { log "diffusers install failed"; return 0; }
  local spec name flags
  for spec in "unet_bs8|--batch-size 8 --dataset-size 320 --warmup-steps 5" \
              "unet_bs32|--batch-size 32 --dataset-size 640 --warmup-steps 5"; do
    name="${spec%%|*}"
    flags="${spec#*|}"
    # shellcheck disable=SC2086
    run_gb "gpubench_${name}_r1" sd-unet --precision bf16 $flags
    # shellcheck disable=SC2086
    PYTHONPATH=/tmp/site run_pt "pytorch_${name}_r1" --model sd-unet --precision bf16 $flags --fused
  done
  "$PY" scripts/compare_pytorch.py "$OUT/records" --json "$OUT/records/summary_unet.json" | tee "$OUT/summary_unet.md"
}

# Issue #18: gpubench and PyTorch (transformers/diffusers) on the same flags, alternating; PyTorch with fused AdamW.
pair_model() {  # rep, name, model, flags...
  local r="$1" name="$2" model="$3"
  shift 3
  run_gb "gpubench_${name}_r$r" "$model" "$@"
  run_pt "pytorch_${name}_r$r" --model "$model" "$@" --fused
}

phase_llm_train() {
  local gpt2="--precision bf16 --batch-size 8 --seq-len 1024 --dataset-size 1600 --warmup-steps 10"
  local llama="--precision bf16 --batch-size 4 --seq-len 2048 --dataset-size 320 --warmup-steps 5" r
  for r in $(seq 1 "$REPS"); do
    # shellcheck disable=SC2086
    pair_model "$r" gpt2_train_eager gpt2 $gpt2
    # shellcheck disable=SC2086
    run_gb "gpubench_gpt2_train_graph_r$r" gpt2 $gpt2 --cuda-graph
    # shellcheck disable=SC2086
    pair_model "$r" llama_train_eager llama $llama
  done
  # shellcheck disable=SC2086
  run_gb "gpubench_llama_train_graph_r1" llama $llama --cuda-graph
  "$PY" scripts/compare_pytorch.py "$OUT/records" --json "$OUT/records/summary_llm_train.json" | tee "$OUT/summary_llm_train.md"
}

# Where the time goes: one --profile run of gpt2 and llama training each, PyTorch's torch.profiler trace of the same
# steps, and `gpubench trace` of the two, kernel by kernel.
phase_llm_profile() {
  local spec name model flags
  for spec in "gpt2|gpt2|--precision bf16 --batch-size 8 --seq-len 1024 --dataset-size 400 --warmup-steps 10" \
              "llama|llama|--precision bf16 --batch-size 4 --seq-len 2048 --dataset-size 80 --warmup-steps 5"; do
    IFS='|' read -r name model flags <<< "$spec"
    log "gpubench $name --profile"
    # shellcheck disable=SC2086
    "$GB" run "$model" $flags --profile --output "$OUT/records/gpubench_${name}_profile_r1.json" \
        > "$OUT/records/console_gpubench_${name}_profile.txt" 2>> "$OUT/session.log"
    # shellcheck disable=SC2086
    run_pt "pytorch_${name}_profile_r1" --model "$model" $flags --fused --trace "$OUT/records/pytorch_${name}.trace.json"
    "$GB" trace "$OUT/records/pytorch_${name}.trace.json" "$OUT/records/gpubench_${name}_profile_r1.trace.json" --top 30 \
        > "$OUT/summary_trace_diff_${name}.txt" 2>&1
  done
  grep -h "^bounded by\|^profile (" "$OUT"/records/console_gpubench_*_profile.txt | tee -a "$OUT/summary_trace_diff_gpt2.txt"
  rm -f "$OUT"/records/*.trace.json  # tens of MB each: the diffs above are what comes back
}

# On nvidia-h200-x2: gpt2 and llama data parallel over two GPUs (gpt2 also on one, for the efficiency), gpt2 inference
# on two ranks, and seed 004's sampling step in fp16 at batch 1 (configs/sd-unet-seed004-sampling.yaml) with its
# published comparison.
phase_llm_multi() {
  local gpt2="--precision bf16 --batch-size 8 --seq-len 1024 --dataset-size 3200 --warmup-steps 10"
  # shellcheck disable=SC2086
  run_gb gpubench_gpt2_train_1gpu_r1 gpt2 $gpt2
  # shellcheck disable=SC2086
  run_gb gpubench_gpt2_train_2gpu_r1 gpt2 $gpt2 --nproc-per-node 2
  run_gb gpubench_llama_train_2gpu_r1 llama --precision bf16 --batch-size 4 --seq-len 2048 --dataset-size 640 \
      --warmup-steps 5 --nproc-per-node 2
  run_gb gpubench_gpt2_infer_bs32_2gpu_r1 gpt2 --mode inference --precision bf16 --batch-size 32 --dataset-size 3840 \
      --warmup-steps 5 --nproc-per-node 2
  run_gb gpubench_sd_seed004_fp16_bs1_r1 --config configs/sd-unet-seed004-sampling.yaml
  "$GB" compare published/seed004-rtx4070-sd "$OUT/records/gpubench_sd_seed004_fp16_bs1_r1.json" \
      > "$OUT/summary_seed004.md" 2>&1
  "$PY" - "$OUT/records" <<'PYEOF' | tee "$OUT/summary_llm_multi.md"
import glob, json, os, sys
for p in sorted(glob.glob(os.path.join(sys.argv[1], "gpubench_*.json"))):
    r = json.load(open(p))
    s = r["summary"]
    d = r.get("distributed") or {}
    print(f"| {os.path.basename(p)} | {r['status']} {r.get('reason', '')[:80]} | {d.get('world_size', 1)} GPUs | "
          f"{s['samples_per_s']:.1f} samples/s | {s['tokens_per_s']:.0f} tok/s | {s['steps_per_s']:.2f} it/s | "
          f"median {s['step_time']['median_ms']:.2f} ms | energy {s.get('joules_per_sample')} J/sample |")
PYEOF
}

phase_llm_infer() {
  local inf="--mode inference --precision bf16" r
  for r in $(seq 1 "$REPS"); do
    # shellcheck disable=SC2086
    pair_model "$r" gpt2_infer_bs1_eager gpt2 $inf --batch-size 1 --dataset-size 300 --warmup-steps 20
    # shellcheck disable=SC2086
    pair_model "$r" gpt2_infer_bs32 gpt2 $inf --batch-size 32 --dataset-size 1920 --warmup-steps 5
    # shellcheck disable=SC2086
    pair_model "$r" llama_infer_bs1_eager llama $inf --batch-size 1 --dataset-size 150 --warmup-steps 10
    # shellcheck disable=SC2086
    pair_model "$r" llama_infer_bs32 llama $inf --batch-size 32 --dataset-size 640 --warmup-steps 3
  done
  # shellcheck disable=SC2086
  run_gb "gpubench_gpt2_infer_bs1_graph_r1" gpt2 $inf --batch-size 1 --dataset-size 300 --warmup-steps 20 --cuda-graph
  # shellcheck disable=SC2086
  run_gb "gpubench_llama_infer_bs1_graph_r1" llama $inf --batch-size 1 --dataset-size 150 --warmup-steps 10 --cuda-graph
  "$PY" scripts/compare_pytorch.py "$OUT/records" --json "$OUT/records/summary_llm_infer.json" | tee "$OUT/summary_llm_infer.md"
}

phase_unet_infer() {
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
      >> "$OUT/session.log" 2>&1 || { log "diffusers install failed"; return 0; }
  local inf="--mode inference --precision bf16"
  # shellcheck disable=SC2086
  PYTHONPATH=/tmp/site pair_model 1 unet_infer_bs1_eager sd-unet $inf --batch-size 1 --dataset-size 150 --warmup-steps 10
  # shellcheck disable=SC2086
  PYTHONPATH=/tmp/site pair_model 1 unet_infer_bs32 sd-unet $inf --batch-size 32 --dataset-size 640 --warmup-steps 3
  # shellcheck disable=SC2086
  run_gb "gpubench_unet_infer_bs1_graph_r1" sd-unet $inf --batch-size 1 --dataset-size 150 --warmup-steps 10 --cuda-graph
  "$PY" scripts/compare_pytorch.py "$OUT/records" --json "$OUT/records/summary_unet_infer.json" | tee "$OUT/summary_unet_infer.md"
}

# Issue #16: the JPEG pipeline against PyTorch's standard recipe (ImageFolder + PIL + DataLoader) on one generated
# folder (page cache warm), alternating. data_setup generates the folder and runs what both data phases share: one
# core of each, and each loader alone.
DS=/tmp/gpubench-imagenet-like
data_gb() { local name="$1"; shift; timeout 150 "$GB" run resnet50 --epochs 1 --output "$OUT/records/$name.json" "$@" > "$OUT/$name.log" 2>&1; log "$name rc $? $(grep -E '^total|bottleneck' "$OUT/$name.log" | tr '\n' ' ')"; }
data_pt() { local name="$1"; shift; timeout 150 "$PY" scripts/pytorch_input_reference.py "$DS" "$@" > "$OUT/records/$name.json" 2> "$OUT/$name.log"; log "$name rc $? $(cat "$OUT/records/$name.json")"; }
data_setup() {
  N="${DATA_IMAGES:-25600}" W="${DATA_WORKERS:-15}" FOLDER=(--data folder --data-path "$DS")
  log "data: generating $N images"
  rm -rf "$DS"
  "$GB" dataset make --images "$N" --classes 100 --out "$DS" --seed 0 2>&1 | tee "$OUT/summary_data_dataset.txt"
  cat "$DS"/*/* > /dev/null  # warm the page cache, as the anchors were measured
  data_pt pytorch_percore --mode per-core --images 1500
  data_gb gpubench_percore_cpu "${FOLDER[@]}" --data-only --decode cpu --data-workers 1 --batch-size 64 --dataset-size 4096 --warmup-steps 2
  data_pt pytorch_loader --mode loader --workers "$W"
  data_gb gpubench_loader_cpu "${FOLDER[@]}" --data-only --decode cpu --data-workers "$W" --batch-size 256 --warmup-steps 5
  data_gb gpubench_loader_gpu "${FOLDER[@]}" --data-only --decode gpu --data-workers "$W" --batch-size 256 --warmup-steps 5
}
# ResNet-50 bs 256 `decode` (gpu, cpu or synthetic) in `precision`, repeat `r`.
data_train() {
  local decode="$1" p="$2" r="$3"
  if [ "$decode" = synthetic ]; then
    data_gb "gpubench_synthetic_${p}_r$r" --precision "$p" --batch-size 256 --warmup-steps 15 --dataset-size "$N"
  else
    data_gb "gpubench_${decode}_${p}_r$r" "${FOLDER[@]}" --precision "$p" --batch-size 256 --warmup-steps 15 \
        --decode "$decode" --data-workers "$W"
  fi
}

# Then training end to end, alternating: bf16 (synthetic, GPU decode, PyTorch's recipe, CPU decode) and fp16
# (synthetic, GPU decode), $REPS rounds.
phase_data() {
  data_setup
  for r in $(seq 1 "${REPS:-1}"); do
    data_train synthetic bf16 "$r"
    data_train gpu bf16 "$r"
    data_pt "pytorch_train_bf16_r$r" --mode train --precision bf16 --workers "$W"
    data_train cpu bf16 "$r"
    data_train synthetic fp16 "$r"
    data_train gpu fp16 "$r"
  done
  "$PY" scripts/compare_input.py "$OUT/records" | tee "$OUT/summary_data.md"
}

# A shorter round (no PyTorch training runs): synthetic, GPU and CPU decoding in bf16 and in fp16.
phase_data_quick() {
  data_setup
  for p in bf16 fp16; do
    for decode in synthetic gpu cpu; do data_train "$decode" "$p" 1; done
  done
  "$PY" scripts/compare_input.py "$OUT/records" | tee "$OUT/summary_data.md"
}

phase_pairs() {
  pair amp_bs256 "--precision amp --batch-size 256 --dataset-size 25600 --warmup-steps 15"
  pair amp_bs128 "--precision amp --batch-size 128 --dataset-size 19200 --warmup-steps 15"
  pair fp32_bs128 "--precision fp32 --memory-format channels_last --batch-size 128 --dataset-size 6400 --warmup-steps 10"
  pair fp32_bs256 "--precision fp32 --memory-format channels_last --batch-size 256 --dataset-size 12800 --warmup-steps 10"
  "$PY" scripts/compare_pytorch.py "$OUT/records" --json "$OUT/summary.json" | tee "$OUT/summary.md"
}

for phase in "$@"; do
  "phase_$phase" || { bundle; rm -rf "$OUT/records"; exit 1; }
  bundle
done
rm -rf "$OUT/records"
log "done"
# The device tool brings back at most 8 files: the records, the summaries, the session log, and the rest in one archive.
(cd "$OUT" && find . -maxdepth 1 -type f ! -name records.tar.gz ! -name 'summary_*' ! -name session.log -printf '%P\n' |
    tar -czf logs.tar.gz -T - --remove-files 2>/dev/null)
