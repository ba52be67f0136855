#!/usr/bin/env bash
# One device call (carry [".deps"]): a CUDA graph's working set in the record's peak allocated memory.
# Builds gpubench and the engine tests; runs the graph CUDA tests through ctest (the new
# GraphModePeakMemoryCountsTheCapturedStepsWorkingSet_CUDA among them); then records whose peaks show it:
# ResNet-50 bf16 training at batch 256 eager and --cuda-graph true, TinyLlama generate at batch 32 with the prefill
# graph and without. One archive, $OUT/<CALL>-<time>.tar.gz.
#   OUT=... CALL=memory GPUBENCH_GIT_REVISION=<commit> results/2026-12-03-h200-graph-memory/run.sh
# BUILD_TARGETS, CTEST_R and CTEST_TIMEOUT override the build's targets and the tests' regex and limit; EXTRA="name=model:batch
# ..." adds generate runs (bf16, fused) after the others.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT="${OUT:-$PWD/device-out}"
C="${CALL:-memory}-$(date -u +%H%M%S)"
W="$OUT/$C"
mkdir -p "$W/records"
log() { echo "== $(date -u +%H:%M:%S) [${SECONDS}s] $*" | tee -a "$W/session.log"; }
finish() { tar -C "$OUT" -czf "$OUT/$C.tar.gz" "$C" && rm -rf "$W"; }
trap finish EXIT
LIMIT="${LIMIT:-300}"
GPUBENCH_BUILD_TARGETS="${BUILD_TARGETS:-gpubench engine_tests}" OUT="$W" scripts/device_run.sh build > "$W/build_phase.log" 2>&1 \
  || { tail -40 "$W/build.log"; exit 1; }
rm -f "$W/records.tar.gz"
log "build done"
GB="$PWD/build-device/gpubench"
(cd build-device && timeout "${CTEST_TIMEOUT:-60}" ctest --output-on-failure \
  -R "${CTEST_R:-(WorkingSet|GenerateTest|CudaGraphCaptures|DecodersInferAndTrainOnTheGpuWithGraphs).*_CUDA}" \
  > "$W/ctest_cuda.log" 2>&1)
log "ctest exit $?"
grep -E "tests passed|tests failed|\(Failed\)|_CUDA .*(Passed|Failed)|graph .* B, eager" "$W/ctest_cuda.log" | tail -32 \
  | tee -a "$W/session.log"
gpubench() {  # NAME ARGS...
  local name="$1"; shift
  [ "$SECONDS" -gt "$LIMIT" ] && { log "$name: no time left"; return; }
  log "gpubench $name: $*"
  timeout 40 "$GB" run "$@" --output "$W/records/gpubench_$name.json" > "$W/records/console_gpubench_$name.txt" 2>&1
  log "exit $?"
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); s=d['summary']; \
print(d['status'], d['execution']['mode'], 'peak allocated %.2f GiB, reserved %.2f GiB' % \
(s['peak_allocated_bytes'] / 2**30, s['peak_reserved_bytes'] / 2**30))" "$W/records/gpubench_$name.json" 2>&1 \
    | tee -a "$W/session.log"
}
r=(resnet50 --precision bf16 --batch-size 256 --dataset-size 5120 --epochs 1 --warmup-steps 5)
gpubench resnet_bs256_eager "${r[@]}"
gpubench resnet_bs256_graph "${r[@]}" --cuda-graph true
g=(llama --mode generate --precision bf16 --batch-size 32 --kernels fused --epochs 2)
gpubench llama_bs32 "${g[@]}"
GPUBENCH_PREFILL_GRAPH=0 gpubench llama_bs32_eager_prefill "${g[@]}"
for extra in ${EXTRA:-}; do  # name=model:batch (generate, bf16, fused): decode records of this build
  IFS='=:' read -r name model batch <<< "$extra"
  gpubench "$name" "$model" --mode generate --precision bf16 --batch-size "$batch" --kernels fused
  python3 results/2026-12-03-h200-prefill-graph/summarize.py --one "$W/records/gpubench_$name.json" 2>&1 \
    | tee -a "$W/session.log"
done
log "done"
