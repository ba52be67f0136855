#!/usr/bin/env python3
"""Charts for `gpubench report`: PNG files drawn with matplotlib from gpubench run records (JSON).

  python3 scripts/plot_results.py --out DIR RECORD.json ... [--compare COMPARE.json]

Writes, where the records have the data:
  throughput.png   samples/s per run (bars)
  epoch_time.png   seconds per epoch for each run (lines over epochs)
  telemetry.png    power, SM clock and temperature over time, from the runs' telemetry traces (CSV)
  batch_size.png   throughput against batch size, for runs that differ only in batch size (sweeps)
  profile.png      kernel time per step by category (GEMM/conv, attention, normalisation, ...), one stacked bar per
                   run profiled with --profile, with the run's bottleneck verdict
  compare.png      throughput ratio per scenario with its 95 % interval (from `gpubench compare --json`)
  trend.png        a metric over time, one line per scenario and GPU model, dotted where the driver, LibTorch or
                   gpubench revision changed (from `gpubench report --db`: --trend CSV)
and prints the names of the files it wrote, one per line. Needs matplotlib (Debian: python3-matplotlib).
"""
import argparse
import csv
import json
import os
import sys


def load_records(paths):
    runs = []
    for p in paths:
        with open(p) as f:
            j = json.load(f)
        if j.get("schema") != "gpubench.run":
            continue
        runs.append((p, j))
    return runs


def label(path, j):
    s = j["scenario"]
    gpus = j.get("distributed") or {}
    extra = f" x{gpus['world_size']}" if gpus.get("world_size", 1) > 1 else ""
    mode = " graph" if (j.get("execution") or {}).get("mode") == "cuda_graph" else ""
    return f"{s['model']} bs{s.get('batch_size')} {j['precision'].get('resolved', s['precision'])}{mode}{extra}"


def plot_all(runs, out, compare=None, trend=None, sweeps=None):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []

    def save(fig, name):
        fig.tight_layout()
        fig.savefig(os.path.join(out, name), dpi=110)
        plt.close(fig)
        written.append(name)

    ok = [(p, j) for p, j in runs if j["status"] == "ok" and j["summary"]["samples_per_s"] > 0]
    if ok:
        fig, ax = plt.subplots(figsize=(min(14, max(5, 0.5 * len(ok))), 4))
        names = [label(p, j) for p, j in ok]
        rates = [j["summary"]["samples_per_s"] for _, j in ok]
        ax.bar(range(len(ok)), rates, color="#3b75af")
        ax.set_xticks(range(len(ok)), names, rotation=30, ha="right", fontsize=8)
        units = {j["model"].get("sample_unit") or "samples" for _, j in ok}
        ax.set_ylabel(f"{units.pop()}/s" if len(units) == 1 else "samples/s")
        ax.set_title("Throughput per run")
        save(fig, "throughput.png")

        fig, ax = plt.subplots(figsize=(6, 3.6))
        for p, j in ok:
            secs = [e["seconds"] for e in j["epochs"]]
            ax.plot(range(1, len(secs) + 1), secs, marker="o", label=label(p, j))
        ax.set_xlabel("epoch")
        ax.set_ylabel("seconds")
        ax.set_title("Epoch time")
        ax.legend(fontsize=7)
        save(fig, "epoch_time.png")

    traces = []
    for p, j in runs:
        t = (j.get("telemetry") or {}).get("trace_path")
        if t and not os.path.exists(t):
            # The path as the run wrote it (absolute or relative to where it ran) is gone once records are moved or
            # committed: the trace travels beside its record, so look there by name.
            t = os.path.join(os.path.dirname(p), os.path.basename(t))
        if t and os.path.exists(t):
            traces.append((label(p, j), t))
    if traces:
        fig, axes = plt.subplots(3, 1, figsize=(7, 6.5), sharex=True)
        for name, t in traces:
            with open(t) as f:
                rows = list(csv.DictReader(f))
            ts = [float(r["t_s"]) for r in rows]
            for ax, col, unit in zip(axes, ("power_w", "sm_clock_mhz", "temperature_c"), ("W", "MHz", "°C")):
                vals = [float(r[col]) if r.get(col) else float("nan") for r in rows]
                ax.plot(ts, vals, label=name, linewidth=0.9)
                ax.set_ylabel(f"{col.split('_')[0]} ({unit})")
        axes[0].legend(fontsize=7)
        axes[-1].set_xlabel("seconds since the sampler started")
        axes[0].set_title("Telemetry over time")
        save(fig, "telemetry.png")

    profiled = [(p, j) for p, j in runs if (j.get("profile") or {}).get("categories")]
    if profiled:
        cats = []  # categories in the order the records list them (gpubench's display order)
        for _, j in profiled:
            for c in j["profile"]["categories"]:
                if c["category"] not in cats:
                    cats.append(c["category"])
        fig, ax = plt.subplots(figsize=(8, max(2.2, 0.6 * len(profiled) + 1.4)))
        colours = plt.get_cmap("tab10")
        names = []
        for i, (p, j) in enumerate(profiled):
            left = 0.0
            per = {c["category"]: c["ms_per_step"] for c in j["profile"]["categories"]}
            for k, cat in enumerate(cats):
                w = per.get(cat, 0.0)
                ax.barh(i, w, left=left, color=colours(k % 10), label=cat if i == 0 else None)
                left += w
            verdict = (j.get("summary") or {}).get("bounded_by") or "no verdict"
            ax.text(left, i, f"  {verdict}", va="center", fontsize=7)
            names.append(label(p, j))
        ax.set_yticks(range(len(profiled)), names, fontsize=8)
        ax.invert_yaxis()
        ax.set_xlabel("kernel time per step (ms)")
        ax.set_title("Where the step's time goes (--profile)")
        ax.legend(fontsize=7, ncol=3, loc="lower right")
        save(fig, "profile.png")

    # Which runs form a batch-size sweep is gpubench's decision (the report's scenario grouping, passed as --groups);
    # this script only draws it.
    by_path = {p: j for p, j in ok}
    sweeps = [[by_path[p] for p in group if p in by_path] for group in (sweeps or [])]
    sweeps = [g for g in sweeps if len(g) > 1]
    if sweeps:
        fig, ax = plt.subplots(figsize=(6, 3.6))
        for g in sweeps:
            s = g[0]
            ax.plot([j["scenario"]["batch_size"] for j in g], [j["summary"]["samples_per_s"] for j in g], marker="o",
                    label=f"{s['scenario']['model']} {s['precision'].get('resolved', '')}")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("batch size")
        ax.set_ylabel("samples/s")
        ax.set_title("Throughput against batch size")
        ax.legend(fontsize=7)
        save(fig, "batch_size.png")

    if compare:
        rows = [c for c in compare.get("comparisons", []) if c.get("ratio")]
        if rows:
            fig, ax = plt.subplots(figsize=(max(5, 1.2 * len(rows)), 3.6))
            mid = [c["ratio"] for c in rows]
            err = [[c["ratio"] - c["ci_low"] for c in rows], [c["ci_high"] - c["ratio"] for c in rows]]
            colors = ["#c0392b" if c.get("verdict") == "regression" else "#3b75af" for c in rows]
            ax.bar(range(len(rows)), mid, yerr=err, capsize=4, color=colors)
            ax.axhline(1.0, color="black", linewidth=0.8)
            ax.set_xticks(range(len(rows)), [c.get("label", "?") for c in rows], rotation=30, ha="right", fontsize=8)
            ax.set_ylabel("throughput new / base")
            ax.set_title("Comparison with 95 % intervals")
            save(fig, "compare.png")
    if trend:
        series = {}
        for r in trend["rows"]:
            if r.get("value") not in (None, ""):
                series.setdefault(r["series"], []).append((r["start_time_utc"], float(r["value"]), r))
        if series:
            from datetime import datetime

            def when(text):
                return datetime.fromisoformat(text.replace("Z", "+00:00")) if text else None

            fig, ax = plt.subplots(figsize=(8, 4))
            for name, points in sorted(series.items()):
                points = [(when(t), v, r) for t, v, r in points if when(t) is not None]
                if not points:
                    continue
                ax.plot([t for t, _, _ in points], [v for _, v, _ in points], marker="o", markersize=3, label=name)
                # Where the software changed between two runs of a series: a dotted line, named.
                for (_, _, a), (t, v, b) in zip(points, points[1:]):
                    what = [k.split("_")[0] for k in ("driver_version", "libtorch_version", "git_revision")
                            if a.get(k) != b.get(k)]
                    if what:
                        ax.axvline(t, color="grey", linestyle=":", linewidth=0.8)
                        ax.annotate(", ".join(what), (t, v), fontsize=6, rotation=90, va="bottom", color="grey")
            ax.set_ylabel(trend["metric"])
            ax.set_title(f"{trend['metric']} over time")
            ax.legend(fontsize=7)
            fig.autofmt_xdate()
            save(fig, "trend.png")
    return written


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True)
    p.add_argument("--compare", help="JSON written by `gpubench compare --json`")
    p.add_argument("--trend", help="CSV written by `gpubench report --db` (series, start_time_utc, value, ...)")
    p.add_argument("--trend-metric", default="value", help="axis label for --trend")
    p.add_argument("--groups", help="JSON written by `gpubench report`: {\"sweeps\": [[record path, ...], ...]}, each "
                   "list one scenario's runs in batch-size order")
    p.add_argument("records", nargs="*")
    a = p.parse_args(argv)
    os.makedirs(a.out, exist_ok=True)
    compare = json.load(open(a.compare)) if a.compare else None
    trend = None
    if a.trend:
        with open(a.trend) as f:
            trend = {"metric": a.trend_metric, "rows": list(csv.DictReader(f))}
    sweeps = json.load(open(a.groups)).get("sweeps") if a.groups else None
    for name in plot_all(load_records(a.records), a.out, compare, trend, sweeps):
        print(name, file=sys.stderr)  # standard output is gpubench's: `report --format json` prints one document
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
