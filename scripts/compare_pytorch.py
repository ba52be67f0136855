#!/usr/bin/env python3
"""Table of gpubench vs PyTorch from a folder of records made by scripts/device_run.sh (phase `pairs`).

Files: gpubench_<name>_r<k>.json (gpubench run records) and pytorch_<name>_r<k>.json (scripts/pytorch_reference.py).
For each <name>: throughput of each repeat, the ratio gpubench / PyTorch per repeat pair (mean, min-max), peak memory.
"""
import argparse
import glob
import json
import os
import re
import statistics
import sys


def load(folder):
    runs = {}
    for path in sorted(glob.glob(os.path.join(folder, "*.json"))):
        m = re.match(r"(gpubench|pytorch)_(.+)_r(\d+)\.json$", os.path.basename(path))
        if not m:
            continue
        tool, name, rep = m.group(1), m.group(2), int(m.group(3))
        with open(path) as f:
            j = json.load(f)
        if tool == "gpubench":
            ok = j["status"] == "ok"
            rate = j["summary"]["samples_per_s"] if ok else None
            peak = j["summary"].get("peak_allocated_bytes")
        else:
            rate, peak = j["samples_per_s"], j["peak_allocated_bytes"]
        runs.setdefault(name, {}).setdefault(rep, {})[tool] = {"rate": rate, "peak": peak}
    return runs


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("folder")
    p.add_argument("--json", help="write the summary here too")
    a = p.parse_args(argv)
    runs = load(a.folder)
    rows = []
    print("| scenario | gpubench samples/s | PyTorch samples/s | ratio gpubench/PyTorch (min-max) | peak alloc GiB gpubench / PyTorch |")
    print("| --- | --- | --- | --- | --- |")
    for name, reps in runs.items():
        pairs = [(r["gpubench"]["rate"], r["pytorch"]["rate"]) for r in reps.values()
                 if "gpubench" in r and "pytorch" in r and r["gpubench"]["rate"] and r["pytorch"]["rate"]]
        if not pairs:
            print(f"| {name} | incomplete | | | |")
            continue
        ratios = [g / t for g, t in pairs]
        last = list(reps.values())[-1]
        gib = lambda b: f"{b / 2**30:.1f}" if b else "-"
        row = {"scenario": name, "gpubench": [g for g, _ in pairs], "pytorch": [t for _, t in pairs],
               "ratio_mean": statistics.mean(ratios), "ratio_min": min(ratios), "ratio_max": max(ratios),
               "peak_gpubench_bytes": last.get("gpubench", {}).get("peak"),
               "peak_pytorch_bytes": last.get("pytorch", {}).get("peak")}
        rows.append(row)
        print(f"| {name} | {', '.join(f'{g:.0f}' for g, _ in pairs)} | {', '.join(f'{t:.0f}' for _, t in pairs)} | "
              f"{row['ratio_mean']:.3f} ({row['ratio_min']:.3f}-{row['ratio_max']:.3f}) | "
              f"{gib(row['peak_gpubench_bytes'])} / {gib(row['peak_pytorch_bytes'])} |")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
