#!/usr/bin/env bash
# precision: fp8 on the H200 after the FP8 cast kernels (issue #30): build, FP8's CUDA tests (the kernels' bytes
# against ATen's cast, the layer, 300-step loss curves, the record of a run), TinyLlama bs 4 x 2048 in FP8 and bf16
# (kernels: fused) alternating with torchao's float8 training + torch.compile and PyTorch bf16 + torch.compile
# (configs/bench/llama-fp8.yaml, ROUNDS rounds), then one profiled FP8 run (kernel categories, top kernels).
# torchao travels as a wheel: carry [".deps", ".whl"] (`pip download --no-deps --only-binary=:all: -d .whl
# torchao==0.18.0`).
# Run from the repository root: OUT=... ROUNDS=2 GPUBENCH_GIT_REVISION=<commit> results/2026-12-02-h200-fp8-kernels/run.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT="${OUT:-$PWD/device-out}"
mkdir -p "$OUT/records"
log() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$OUT/session.log"; }
GPUBENCH_BUILD_TARGETS="gpubench engine_tests" OUT="$OUT" scripts/device_run.sh build || exit 1
export PYTHONPATH=/tmp/site
log "FP8 CUDA tests"
timeout 200 build-device/tests/engine_tests --gtest_filter='Fp8Test.*_CUDA' > "$OUT/fp8_cuda.log" 2>&1
log "exit $?"
grep -E "^\[       OK|FAILED|largest|Failure|Expected|Which is|error" "$OUT/fp8_cuda.log" | head -30 | tee -a "$OUT/session.log"
OUT="$OUT" ROUNDS="${ROUNDS:-2}" scripts/device_run.sh bench configs/bench/llama-fp8.yaml
log "profiled FP8 run"
build-device/gpubench run --config "$OUT/scenarios/llama-fp8.yaml" --kernels fused --dataset-size 64 --profile true \
  --quiet --output "$OUT/records/profile_fp8.json" > "$OUT/profile_run.log" 2>&1
log "exit $?"
for t in "$OUT"/records/profile_fp8*trace*; do
  [ -f "$t" ] && build-device/gpubench trace "$t" > "$OUT/profile_fp8_kernels.txt" 2>&1
done
head -60 "$OUT/profile_fp8_kernels.txt" 2>/dev/null
tar -C "$OUT" -czf "$OUT/records.tar.gz" records scenarios 2>/dev/null
