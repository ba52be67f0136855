#!/usr/bin/env bash
# One device call: this tree built with C++20 (build-device: binary and tests; the *_CUDA tests run) against the
# C++17 build of the commit before it (c48e6ed, unpacked by `git archive` into .abold/, carried), both against the
# machine's torch 2.11.0, then the README's main job and a `--kernels fused` run of each build, alternated, two rounds.
# Three calls of the device tool (each under its 10-minute limit), carry [".deps", ".abold"]:
#   OUT=... GPUBENCH_GIT_REVISION=<commit> bash results/2026-12-05-h200-cxx20/run.sh build     # both builds
#   OUT=... GPUBENCH_GIT_REVISION=<commit> bash results/2026-12-05-h200-cxx20/run.sh cudatest  # *_CUDA tests (C++20)
#   OUT=... GPUBENCH_GIT_REVISION=<commit> bash results/2026-12-05-h200-cxx20/run.sh ab        # the runs
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT="${OUT:-$PWD/device-out}"
mkdir -p "$OUT/records"
if [ "${1:-}" = build ]; then
  GPUBENCH_WITH_TESTS=ON scripts/device_run.sh build || exit 1
  jpeg="-DJPEG_INCLUDE_DIR=$PWD/.deps/jpeg/include -DJPEG_LIBRARY=$PWD/.deps/jpeg/lib/libjpeg.a"
  start=$SECONDS
  (cd .abold && GPUBENCH_NO_APT=1 GPUBENCH_BUILD_DIR="$PWD/build-old" GPUBENCH_WITH_TESTS=OFF GPUBENCH_BUILD_TARGETS=gpubench \
     GPUBENCH_NEED_REFERENCE=0 GPUBENCH_GIT_REVISION=c48e6ed GPUBENCH_CMAKE_ARGS="$jpeg" scripts/bootstrap.sh) \
     > "$OUT/build_old.log" 2>&1 || { tail -30 "$OUT/build_old.log"; exit 1; }
  echo "== old build (C++17, c48e6ed) took $((SECONDS - start)) s"
  grep -m3 -E "std=c\+\+(17|20)" .abold/build-old/compile_commands.json build-device/compile_commands.json | cut -c1-80
  exit 0
fi
if [ "${1:-}" = cudatest ]; then
  CUDATEST_TIMEOUT=540 scripts/device_run.sh cudatest
  exit $?
fi
declare -A bin=([cxx17]="$PWD/.abold/build-old/gpubench" [cxx20]="$PWD/build-device/gpubench")
for round in 1 2; do
  for what in main fused; do
    for b in cxx17 cxx20; do
      flags=(run resnet50 --amp)
      [ "$what" = fused ] && flags+=(--kernels fused)
      "${bin[$b]}" "${flags[@]}" --output "$OUT/records/${what}_${b}_r${round}.json" > "$OUT/records/${what}_${b}_r${round}.txt" 2>&1
      echo "== round $round $what $b exit $?: $(grep -m1 -E 'images/s' "$OUT/records/${what}_${b}_r${round}.txt" | head -c 200)"
    done
  done
done
python3 - "$OUT/records" <<'PY' | tee "$OUT/summary.md"
import json, sys, glob, os, statistics
rows = {}
for f in sorted(glob.glob(os.path.join(sys.argv[1], "*.json"))):
    r = json.load(open(f))
    name = os.path.basename(f)[:-5]
    what, build, rnd = name.split("_")
    s = r["summary"]
    rows.setdefault((what, build), []).append((s["samples_per_s"], s["step_time"]["median_ms"] if "step_time" in s else None, r["status"], r["environment"]["compiler"]))
print("| run | build | images/s (rounds) | median step ms | status |")
print("| --- | --- | --- | --- | --- |")
for (what, build), v in sorted(rows.items()):
    print(f"| {what} | {build} | {', '.join(f'{x[0]:.1f}' for x in v)} | {', '.join(str(x[1]) for x in v)} | {', '.join(x[2] for x in v)} |")
for what in ("main", "fused"):
    a = rows.get((what, "cxx17"), []); b = rows.get((what, "cxx20"), [])
    if a and b:
        med = lambda v: statistics.median(x[1] for x in v if x[1] is not None)
        print(f"{what}: C++20 / C++17 images/s, ratio of totals {sum(x[0] for x in b)/sum(x[0] for x in a):.4f}; "
              f"C++17 / C++20 median step (speed ratio of medians) {med(a)/med(b):.4f}")
PY
tar -C "$OUT" -czf "$OUT/records.tar.gz" records
