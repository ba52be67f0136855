#!/usr/bin/env bash
# The backend seam (issue 72) on the GPU: this tree (build-device/, with its tests) against the commit before the seam
# (OLD, default abad8e1, unpacked by `git archive` into .abold/), both built there against the machine's torch 2.11.0.
#   build  both builds, then every *_CUDA test of this tree (the old build while they run)
#   bench  the README's main job, a --kernels fused ResNet-50, GPT-2 fused training and TinyLlama batch-1 decode with
#          each build, alternated (old, new), as many rounds (at most ROUNDS, default 2) as fit before DEADLINE
#          seconds (default 560); summary.md has the ratios of totals and of median steps
# carry [".deps", ".abold"] on the build call (libjpeg-turbo's headers, scripts/device_run.sh, and the old tree); a
# bench call on the same warm machine carries nothing (a carried path replaces the one there, its build with it).
#   OUT=... GPUBENCH_GIT_REVISION=<commit> bash results/2026-12-07-h100-backend-seam/run.sh build
#   OUT=... bash results/2026-12-07-h100-backend-seam/run.sh bench
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT="${OUT:-$PWD/device-out}"
DEADLINE="${DEADLINE:-560}"
OLD="${OLD:-abad8e1}"
mkdir -p "$OUT/records"
jpeg="-DJPEG_INCLUDE_DIR=$PWD/.deps/jpeg/include -DJPEG_LIBRARY=$PWD/.deps/jpeg/lib/libjpeg.a"
start=$SECONDS
build_old() {
  (cd .abold && GPUBENCH_NO_APT=1 GPUBENCH_BUILD_DIR="$PWD/build-old" GPUBENCH_WITH_TESTS=OFF \
     GPUBENCH_BUILD_TARGETS=gpubench GPUBENCH_NEED_REFERENCE=0 GPUBENCH_GIT_REVISION="$OLD" \
     GPUBENCH_CMAKE_ARGS="$jpeg" scripts/bootstrap.sh) > "$OUT/build_old.log" 2>&1
}
case "${1:-}" in
  build)
    scripts/device_run.sh build || exit 1
    build_old &
    old=$!
    CUDATEST_TIMEOUT=$((DEADLINE - (SECONDS - start) - 20)) scripts/device_run.sh cudatest
    wait $old || { tail -30 "$OUT/build_old.log"; echo "== OLD BUILD FAILED"; exit 1; }
    echo "== both builds and the CUDA tests took $((SECONDS - start)) s"
    ;;
  bench)
    declare -A bin=([old]="$PWD/.abold/build-old/gpubench" [new]="$PWD/build-device/gpubench")
    # A later call that carries .abold again replaces it there, build and all: build it again where it is missing.
    [ -x "${bin[old]}" ] || { build_old || { tail -30 "$OUT/build_old.log"; exit 1; }; echo "== old build: $((SECONDS - start)) s"; }
    [ -x "${bin[new]}" ] || { echo "== no build-device/gpubench: run the build phase first"; exit 1; }
    declare -A job=(
      [main]="run resnet50 --amp"
      [fused]="run resnet50 --amp --kernels fused"
      [gpt2]="run gpt2 --precision bf16 --batch-size 8 --dataset-size 960 --warmup-steps 10 --kernels fused"
      [decode]="run llama --mode generate --precision bf16 --kernels fused --batch-size 1")
    for round in $(seq 1 "${ROUNDS:-2}"); do
      for what in main fused gpt2 decode; do
        for b in old new; do
          if [ $((SECONDS - start)) -gt $((DEADLINE - 45)) ]; then echo "== out of time before round $round $what $b"; break 3; fi
          # shellcheck disable=SC2086
          "${bin[$b]}" ${job[$what]} --output "$OUT/records/${what}_${b}_r${round}.json" > "$OUT/records/${what}_${b}_r${round}.txt" 2>&1
          echo "== $((SECONDS - start)) s round $round $what $b exit $?: $(grep -m1 -E '^total' "$OUT/records/${what}_${b}_r${round}.txt" | cut -c1-80)"
        done
      done
    done
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUT/records/gpu.txt"
    python3 - "$OUT/records" <<'PY' | tee "$OUT/summary.md"
import json, sys, glob, os, statistics
rows = {}
for f in sorted(glob.glob(os.path.join(sys.argv[1], "*.json"))):
    r = json.load(open(f))
    what, build, rnd = os.path.basename(f)[:-5].split("_")
    s = r["summary"]
    rows.setdefault((what, build), []).append((s["samples_per_s"], s["step_time"]["median_ms"], r["status"],
                                               r["environment"].get("backend", "")))
print("GPU:", open(os.path.join(sys.argv[1], "gpu.txt")).read().strip())
print()
print("| job | build | samples/s (rounds) | median step ms | status | environment.backend |")
print("| --- | --- | --- | --- | --- | --- |")
for (what, build), v in sorted(rows.items()):
    print(f"| {what} | {build} | {', '.join(f'{x[0]:.1f}' for x in v)} | {', '.join(f'{x[1]:.3f}' for x in v)} | "
          f"{', '.join(x[2] for x in v)} | {', '.join(x[3] or '-' for x in v)} |")
print()
for what in ("main", "fused", "gpt2", "decode"):
    a = rows.get((what, "old"), []); b = rows.get((what, "new"), [])
    if a and b:
        med = lambda v: statistics.median(x[1] for x in v)
        print(f"- {what}: new / old samples/s, ratio of totals {sum(x[0] for x in b)/sum(x[0] for x in a):.4f}; "
              f"ratio of median steps (old / new) {med(a)/med(b):.4f}")
PY
    tar -C "$OUT" -czf "$OUT/records.tar.gz" records
    ;;
  *) echo "usage: run.sh build|bench" >&2; exit 2 ;;
esac
