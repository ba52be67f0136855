#!/usr/bin/env bash
# One device call (carry [".deps", ".abold"]): this tree's gpubench built with C++20 (build-device/) and the C++17
# build of the commit before C++20 (c48e6ed, unpacked by `git archive` into .abold/), both against the machine's torch
# 2.11.0; then the README's main job and a `--kernels fused` ResNet-50 run of each build, alternated, as many rounds
# (at most 2) as fit before DEADLINE seconds (default 570) from the start.
#   OUT=... GPUBENCH_GIT_REVISION=<commit> bash results/2026-12-05-h100-cxx20/run.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT="${OUT:-$PWD/device-out}"
DEADLINE="${DEADLINE:-570}"
mkdir -p "$OUT/records"
jpeg="-DJPEG_INCLUDE_DIR=$PWD/.deps/jpeg/include -DJPEG_LIBRARY=$PWD/.deps/jpeg/lib/libjpeg.a"
start=$SECONDS
GPUBENCH_WITH_TESTS=OFF GPUBENCH_BUILD_TARGETS=gpubench scripts/device_run.sh build || exit 1
(cd .abold && GPUBENCH_NO_APT=1 GPUBENCH_BUILD_DIR="$PWD/build-old" GPUBENCH_WITH_TESTS=OFF GPUBENCH_BUILD_TARGETS=gpubench \
   GPUBENCH_NEED_REFERENCE=0 GPUBENCH_GIT_REVISION=c48e6ed GPUBENCH_CMAKE_ARGS="$jpeg" scripts/bootstrap.sh) \
   > "$OUT/build_old.log" 2>&1 || { tail -30 "$OUT/build_old.log"; exit 1; }
echo "== both builds took $((SECONDS - start)) s"
grep -m1 -o -E "std=c\+\+(17|20)" .abold/build-old/compile_commands.json; grep -m1 -o -E "std=c\+\+(17|20)" build-device/compile_commands.json
declare -A bin=([cxx17]="$PWD/.abold/build-old/gpubench" [cxx20]="$PWD/build-device/gpubench")
for round in 1 2; do
  for what in main fused; do
    for b in cxx17 cxx20; do
      if [ $((SECONDS - start)) -gt $((DEADLINE - 50)) ]; then echo "== out of time before round $round $what $b"; break 3; fi
      flags=(run resnet50 --amp)
      [ "$what" = fused ] && flags+=(--kernels fused)
      "${bin[$b]}" "${flags[@]}" --output "$OUT/records/${what}_${b}_r${round}.json" > "$OUT/records/${what}_${b}_r${round}.txt" 2>&1
      echo "== $((SECONDS - start)) s round $round $what $b exit $?: $(grep -m1 -E '^total' "$OUT/records/${what}_${b}_r${round}.txt" | cut -c1-90)"
    done
  done
done
python3 - "$OUT/records" <<'PY' | tee "$OUT/summary.md"
import json, sys, glob, os, statistics
rows = {}
for f in sorted(glob.glob(os.path.join(sys.argv[1], "*.json"))):
    r = json.load(open(f))
    what, build, rnd = os.path.basename(f)[:-5].split("_")
    s = r["summary"]
    rows.setdefault((what, build), []).append((s["samples_per_s"], s["step_time"]["median_ms"], r["status"]))
print("| run | build | images/s (rounds) | median step ms | status |")
print("| --- | --- | --- | --- | --- |")
for (what, build), v in sorted(rows.items()):
    print(f"| {what} | {build} | {', '.join(f'{x[0]:.1f}' for x in v)} | {', '.join(f'{x[1]:.2f}' for x in v)} | {', '.join(x[2] for x in v)} |")
for what in ("main", "fused"):
    a = rows.get((what, "cxx17"), []); b = rows.get((what, "cxx20"), [])
    if a and b:
        med = lambda v: statistics.median(x[1] for x in v)
        print(f"{what}: C++20 / C++17 images/s, ratio of totals {sum(x[0] for x in b)/sum(x[0] for x in a):.4f}; "
              f"ratio of median steps (C++17 / C++20) {med(a)/med(b):.4f}")
PY
tar -C "$OUT" -czf "$OUT/records.tar.gz" records
