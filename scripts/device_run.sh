#!/usr/bin/env bash
# One GPU-machine session: `scripts/device_run.sh build test bench configs/bench/gpt2-bs8.yaml configs/bench/llama-bs4.yaml`
#   build     bootstrap without apt (the machine has everything but libjpeg's headers: carry .deps, see below), a
#             Release build of the binary and the tests in build-device/
#   test      the whole ctest suite, *_CUDA tests included
#   cudatest  only the *_CUDA tests (the CPU suite runs in CI)
#   main      the README's main job: gpubench run resnet50 --amp (one full 100k-sample epoch), its console kept
#   options   a fused ResNet-50 run, and TinyLlama's decode with kernel_options by default, by flag and by variable
#   bench F…  the bench files F… (configs/bench/*.yaml: a gpubench scenario and its PyTorch reference variants),
#             alternating round by round, with scripts/bench.py's table of ratios (summary.md)
#   info      gpubench info --measure-peak (the device's measured matmul and copy ceilings)
# Everything after `bench` up to the next phase name is a bench file; ROUNDS=N overrides their rounds, SKIP="tool:variant
# ..." leaves variants out. Logs and records go to $OUT (the device tool
# brings them back); records are bundled into records.tar.gz. Pass GPUBENCH_GIT_REVISION=<the commit here>: the copy
# there carries an earlier commit's .git, so without it the records would name that commit (with -dirty).
# Python wheels the machine lacks (diffusers, torchao) travel in .whl/ (carry [".whl"]) and are installed first.
# The device tool brings back only a handful of files from $OUT (eight on 2026-12-02, top level first): the records
# travel in records.tar.gz; a wrapper script with many logs should bundle them too (f77cd0e:results/2026-12-02-h200-fp8-kernels/run2.sh).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-$PWD/device-out}"
mkdir -p "$OUT/records"
export GPUBENCH_NO_APT=1 GPUBENCH_BUILD_DIR="$PWD/build-device" NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
GB="$GPUBENCH_BUILD_DIR/gpubench"
export GPUBENCH_BINARY="$GB"

bundle() { tar -C "$OUT" -czf "$OUT/records.tar.gz" records scenarios 2>/dev/null || tar -C "$OUT" -czf "$OUT/records.tar.gz" records; }
log() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$OUT/session.log"; }

phase_build() {
  log "build"
  nvidia-smi > "$OUT/nvidia-smi.txt" 2>&1
  if compgen -G ".whl/*.whl" > /dev/null; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
      && export PYTHONPATH=/tmp/site && log "wheels from .whl installed into /tmp/site"
  fi
  # libjpeg-turbo's headers: the GPU machine may lack them (no apt there); Debian's libjpeg62-turbo(-dev), unpacked
  # into .deps/jpeg on the dev machine (`apt-get download libjpeg62-turbo libjpeg62-turbo-dev`, `dpkg -x`), travel
  # with carry [".deps"] and are linked statically.
  if [ ! -f /usr/include/jpeglib.h ] && [ -f .deps/jpeg/include/jpeglib.h ]; then
    export GPUBENCH_CMAKE_ARGS="-DJPEG_INCLUDE_DIR=$PWD/.deps/jpeg/include -DJPEG_LIBRARY=$PWD/.deps/jpeg/lib/libjpeg.a"
    log "libjpeg from .deps/jpeg (static)"
  fi
  local start=$SECONDS
  GPUBENCH_WITH_TESTS="${GPUBENCH_WITH_TESTS:-ON}" scripts/bootstrap.sh > "$OUT/build.log" 2>&1 \
    || { tail -40 "$OUT/build.log"; log "BUILD FAILED"; return 1; }
  tail -3 "$OUT/build.log"
  log "build of ${GPUBENCH_BUILD_TARGETS:-everything} took $((SECONDS - start)) s ($(nproc) cores)"
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

phase_main() {
  log "main: gpubench run resnet50 --amp"
  "$GB" run resnet50 --amp --output "$OUT/records/main_resnet50_amp.json" > "$OUT/console_main.txt" 2>&1
  tail -8 "$OUT/console_main.txt"
  bundle
}

# The kernel options in force: a fused ResNet-50 epoch, then TinyLlama's batch-1 decode with the defaults, with the
# run and streamed GEMVs off by flag, and off by the old variables (the records' kernel_options and fusion notes say
# which ran; the two off runs must agree).
phase_options() {
  log "options"
  "$GB" run resnet50 --amp --kernels fused --output "$OUT/records/fused_resnet50_amp.json" 2>&1 | tail -4
  local gen=(run llama --mode generate --precision bf16 --kernels fused)
  "$GB" "${gen[@]}" --output "$OUT/records/generate_default.json" 2>&1 | tail -3
  "$GB" "${gen[@]}" --decode-run off --decode-stream off --output "$OUT/records/generate_flags_off.json" 2>&1 | tail -3
  GPUBENCH_DECODE_RUN=0 GPUBENCH_DECODE_STREAM=0 "$GB" "${gen[@]}" --output "$OUT/records/generate_env_off.json" \
    2>&1 | tail -3
  bundle
}

phase_info() {
  log "info --measure-peak"
  "$GB" info --measure-peak 2>&1 | tee "$OUT/measure_peak.txt" | grep -E "matmul|copy|table"
}

phase_bench() {
  log "bench $*"
  local skips=()
  for s in ${SKIP:-}; do skips+=(--skip "$s"); done
  python3 scripts/bench.py "$@" ${ROUNDS:+--rounds "$ROUNDS"} "${skips[@]}" --out "$OUT" --gpubench "$GB" 2>&1 | tee -a "$OUT/session.log" | grep -vE "^== " 
  bundle
}

phases=(build test cudatest main options info bench)
while [ $# -gt 0 ]; do
  phase="$1"
  shift
  if [ "$phase" = bench ]; then
    files=()
    while [ $# -gt 0 ] && [[ ! " ${phases[*]} " =~ " $1 " ]]; do files+=("$1"); shift; done
    phase_bench "${files[@]}"
  elif [[ " ${phases[*]} " =~ " $phase " ]]; then
    "phase_$phase" || exit 1
  else
    echo "unknown phase '$phase' (phases: ${phases[*]})" >&2
    exit 2
  fi
done
bundle
