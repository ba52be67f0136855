#!/usr/bin/env python3
"""Table of gpubench vs PyTorch from a folder of records made by scripts/device_run.sh (phase `pairs`).

Files: gpubench_<name>_r<k>.json (gpubench run records) and pytorch_<name>_r<k>.json (scripts/pytorch_reference.py).
For each <name>: throughput of each repeat, the ratio gpubench / PyTorch per repeat pair (mean, min-max) of the totals
(samples/s) and of the median step times (PyTorch's median ms / gpubench's: above 1 means gpubench's typical step is
faster; a few slow outlier steps pull a total down but not a median), and peak memory.
Names ending in _eager and _graph (scripts/device_run.sh parity phases) also get the cross ratios of issue #5's targets:
gpubench graph / PyTorch eager, gpubench graph / gpubench eager and PyTorch graph / PyTorch eager, per round.
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
            median = (j["summary"].get("step_time") or {}).get("median_ms") if ok else None
        else:
            rate, peak, median = j["samples_per_s"], j["peak_allocated_bytes"], j.get("step_ms_median")
        runs.setdefault(name, {}).setdefault(rep, {})[tool] = {"rate": rate, "peak": peak, "median_ms": median}
    return runs


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("folder")
    p.add_argument("--json", help="write the summary here too")
    a = p.parse_args(argv)
    runs = load(a.folder)
    rows = []
    print("| scenario | gpubench samples/s | PyTorch samples/s | ratio of totals gpubench/PyTorch (min-max) | "
          "median step ms gpubench / PyTorch | ratio of medians PyTorch/gpubench (min-max) | "
          "peak alloc GiB gpubench / PyTorch |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for name, reps in runs.items():
        pairs = [(r["gpubench"]["rate"], r["pytorch"]["rate"]) for r in reps.values()
                 if "gpubench" in r and "pytorch" in r and r["gpubench"]["rate"] and r["pytorch"]["rate"]]
        if not pairs:
            print(f"| {name} | incomplete | | | | | |")
            continue
        ratios = [g / t for g, t in pairs]
        medians = [(r["gpubench"]["median_ms"], r["pytorch"]["median_ms"]) for r in reps.values()
                   if "gpubench" in r and "pytorch" in r and r["gpubench"].get("median_ms")
                   and r["pytorch"].get("median_ms")]
        median_ratios = [t / g for g, t in medians]
        last = list(reps.values())[-1]
        gib = lambda b: f"{b / 2**30:.1f}" if b else "-"
        row = {"scenario": name, "gpubench": [g for g, _ in pairs], "pytorch": [t for _, t in pairs],
               "ratio_mean": statistics.mean(ratios), "ratio_min": min(ratios), "ratio_max": max(ratios),
               "median_ms_gpubench": [g for g, _ in medians], "median_ms_pytorch": [t for _, t in medians],
               "median_ratio_mean": statistics.mean(median_ratios) if median_ratios else None,
               "median_ratio_min": min(median_ratios) if median_ratios else None,
               "median_ratio_max": max(median_ratios) if median_ratios else None,
               "peak_gpubench_bytes": last.get("gpubench", {}).get("peak"),
               "peak_pytorch_bytes": last.get("pytorch", {}).get("peak")}
        rows.append(row)
        print(f"| {name} | {', '.join(f'{g:.0f}' for g, _ in pairs)} | {', '.join(f'{t:.0f}' for _, t in pairs)} | "
              f"{row['ratio_mean']:.3f} ({row['ratio_min']:.3f}-{row['ratio_max']:.3f}) | "
              f"{', '.join(f'{g:.2f}' for g, _ in medians)} / {', '.join(f'{t:.2f}' for _, t in medians)} | "
              + (f"{row['median_ratio_mean']:.3f} ({row['median_ratio_min']:.3f}-{row['median_ratio_max']:.3f})"
                 if median_ratios else "-")
              + f" | {gib(row['peak_gpubench_bytes'])} / {gib(row['peak_pytorch_bytes'])} |")
    cross = cross_ratios(runs)
    if cross:
        print()
        print("| scenario | gpubench graph / PyTorch eager | gpubench graph / gpubench eager | PyTorch graph / PyTorch eager |")
        print("| --- | --- | --- | --- |")
        fmt = lambda v: f"{v['mean']:.3f} ({v['min']:.3f}-{v['max']:.3f})" if v else "-"
        for base, c in cross.items():
            print(f"| {base} | {fmt(c['gb_graph_over_pt_eager'])} | {fmt(c['gb_graph_over_gb_eager'])} | "
                  f"{fmt(c['pt_graph_over_pt_eager'])} |")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"pairs": rows, "cross": cross}, f, indent=2)
    return 0


def cross_ratios(runs):
    """Ratios across the _eager and _graph variants of one scenario, round by round."""
    out = {}
    for name in runs:
        if not name.endswith("_graph"):
            continue
        base = name[: -len("_graph")]
        eager, graph = runs.get(base + "_eager", {}), runs[name]

        def ratio(num_runs, num_tool, den_runs, den_tool):
            vals = [num_runs[r][num_tool]["rate"] / den_runs[r][den_tool]["rate"]
                    for r in num_runs if r in den_runs and num_runs[r].get(num_tool, {}).get("rate")
                    and den_runs[r].get(den_tool, {}).get("rate")]
            return {"mean": statistics.mean(vals), "min": min(vals), "max": max(vals), "n": len(vals)} if vals else None

        out[base] = {"gb_graph_over_pt_eager": ratio(graph, "gpubench", eager, "pytorch"),
                     "gb_graph_over_gb_eager": ratio(graph, "gpubench", eager, "gpubench"),
                     "pt_graph_over_pt_eager": ratio(graph, "pytorch", eager, "pytorch")}
    return out


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
