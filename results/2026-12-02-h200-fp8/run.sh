#!/usr/bin/env bash
# precision: fp8 on the H200 (issue #30): build, FP8's CUDA tests (the layer, 300-step loss curves, the record of a
# run), then TinyLlama bs 4 x 2048 in FP8 and bf16 (kernels: fused) against torchao's float8 training + torch.compile
# (configs/bench/llama-fp8.yaml). torchao travels as a wheel: carry [".deps", ".whl"] (`pip download --no-deps
# --only-binary=:all: -d .whl torchao==0.18.0`).
# Run from the repository root: OUT=... GPUBENCH_GIT_REVISION=<commit> results/2026-12-02-h200-fp8/run.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT="${OUT:-$PWD/device-out}"
mkdir -p "$OUT/records"
log() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$OUT/session.log"; }
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site && log "torchao installed into /tmp/site"
GPUBENCH_BUILD_TARGETS="gpubench engine_tests" OUT="$OUT" scripts/device_run.sh build || exit 1
log "FP8 CUDA tests"
timeout 150 build-device/tests/engine_tests --gtest_filter='Fp8Test.*_CUDA' > "$OUT/fp8_cuda.log" 2>&1
log "exit $?"
grep -E "^\[       OK|FAILED|largest|Failure|Expected|Which is|error" "$OUT/fp8_cuda.log" | head -30 | tee -a "$OUT/session.log"
OUT="$OUT" scripts/device_run.sh bench configs/bench/llama-fp8.yaml
