#!/usr/bin/env python3
"""Charts for `gpubench report`: PNG files drawn with matplotlib from gpubench run records (JSON).

  python3 scripts/plot_results.py --out DIR [--groups GROUPS.json] [--compare COMPARE.json] [--trend TREND.csv] RECORD.json ...

What belongs together is gpubench's decision, passed in --groups (the report writes it): each scenario identity with
its label (distinct), unit, mode, mean over runs, 95 % interval and record paths, and the batch-size sweeps. This
script only draws. Without --groups every record is its own scenario. Writes, where the records have the data:
  throughput.png   mean throughput per scenario with its 95 % interval and value, horizontal bars sorted by value,
                   one panel per (training | inference, unit): images/s and sequences/s never share an axis
  step_time.png    distribution of every timed step per scenario (box plots, log scale), one panel per mode
  epoch_time.png   seconds per epoch over epochs, only for runs of two epochs or more
  telemetry.png    power, SM clock and temperature over time, one trace per scenario (the first run's), from the
                   telemetry traces (CSV) found where the record says or beside the record
  batch_size.png   throughput against batch size for the sweeps, one panel per unit
  profile.png      kernel time per step by category, one stacked bar per profiled run, with its bottleneck verdict
  compare.png      change in % per scenario with its 95 % interval around 0, the verdict threshold shaded
                   (from `gpubench compare --json`)
  trend.png        a metric over time per scenario and GPU model, one panel per unit, software changes marked and
                   named above the plot
                   (from `gpubench report --db`: --trend CSV)
and charts.json: each chart's labels (bars, series, panels) as drawn, so a test can check that none is printed twice.
Prints the names of the files it wrote to standard error. Exit 3 when matplotlib is missing (Debian:
python3-matplotlib).
"""
import argparse
import csv
import json
import math
import os
import sys

NO_MATPLOTLIB = 3
BLUE, RED, GREY, GREEN = "#3b75af", "#c0392b", "#7f8c8d", "#2e8b57"


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
    """A run's label when gpubench gave no groups (the script run by hand)."""
    s = j["scenario"]
    gpus = j.get("distributed") or {}
    extra = f", {gpus['world_size']} GPUs" if gpus.get("world_size", 1) > 1 else ""
    mode = " graph" if (j.get("execution") or {}).get("mode") == "cuda_graph" else ""
    return (f"{s['model']} bs{s.get('batch_size')} {j['precision'].get('resolved', s['precision'])} "
            f"{s.get('mode', 'train')}{mode}{extra}")


def unit_of(j):
    return f"{(j.get('model') or {}).get('sample_unit') or 'samples'}/s"


def fallback_groups(runs):
    """One scenario per distinct label when no --groups was given."""
    groups = {}
    for p, j in runs:
        g = groups.setdefault(label(p, j), {"label": label(p, j), "unit": unit_of(j),
                                            "mode": j["scenario"].get("mode", "train"), "paths": [], "ok_paths": [],
                                            "values": []})
        g["paths"].append(p)
        if j["status"] == "ok" and j["summary"]["samples_per_s"] > 0:
            g["ok_paths"].append(p)
            g["values"].append(j["summary"]["samples_per_s"])
    for g in groups.values():
        v = g["values"]
        g["n"] = len(v)
        g["mean"] = sum(v) / len(v) if v else 0.0
        g["half_width_95"] = None
        if len(v) > 1:  # normal quantile: an approximation, only for the script run by hand
            sd = math.sqrt(sum((x - g["mean"]) ** 2 for x in v) / (len(v) - 1))
            g["half_width_95"] = 1.96 * sd / math.sqrt(len(v))
    return list(groups.values())


MODE_ORDER = {"train": 0, "inference": 1, "generate": 2}


def mode_name(mode):
    return {"inference": "inference", "generate": "generation"}.get(mode, "training")


def panel_figure(ch, panels):
    """One row of axes per panel key (sorted: training first), each as tall as its bars: (figure, [(axes, key)])."""
    keys = sorted(panels, key=lambda k: (MODE_ORDER.get(k[0], 9),) + tuple(k[1:]))
    heights = [bar_height(len(panels[k])) for k in keys]
    fig, axes = ch.plt.subplots(len(keys), 1, figsize=(12, sum(heights) + 0.3 * len(keys)), squeeze=False,
                                gridspec_kw={"height_ratios": heights}, layout="constrained")
    return fig, list(zip(axes[:, 0], keys))


def fmt_rate(v):
    return f"{v:,.0f}" if v >= 100 else f"{v:,.1f}" if v >= 10 else f"{v:.3g}"


class Charts:
    """Draws and saves figures, keeping each chart's labels for charts.json."""

    def __init__(self, plt, out):
        self.plt, self.out, self.written, self.labels = plt, out, [], {}
        self.device = None  # the one GPU model of every chart, said in the titles

    def title(self, text):
        return f"{text} ({self.device})" if self.device else text

    def save(self, fig, name, labels):
        fig.savefig(os.path.join(self.out, name), dpi=100, bbox_inches="tight")
        self.plt.close(fig)
        self.written.append(name)
        self.labels[name] = list(labels)


def bar_height(n):
    return 0.32 * n + 1.1


def draw_throughput(ch, groups):
    """One panel per (training | inference, unit, model): each model on its own scale, no unit shared by two."""
    panels = {}
    for g in groups:
        if g["n"] > 0:
            panels.setdefault((g["mode"], g["unit"], g.get("model", "")), []).append(g)
    if not panels:
        return
    fig, cells = panel_figure(ch, panels)
    labels = []
    for ax, key in cells:
        gs = sorted(panels[key], key=lambda g: g["mean"])
        y = range(len(gs))
        err = [g["half_width_95"] or 0.0 for g in gs]
        ax.barh(y, [g["mean"] for g in gs], xerr=err, color=BLUE, capsize=3, height=0.7,
                error_kw={"elinewidth": 1, "ecolor": "black"})
        names = [g["label"] for g in gs]
        ax.set_yticks(list(y), names, fontsize=8)
        top = max(g["mean"] + e for g, e in zip(gs, err))
        for i, g in enumerate(gs):
            text = fmt_rate(g["mean"]) + (f" ± {fmt_rate(g['half_width_95'])}" if g["half_width_95"] else "")
            ax.text(g["mean"] + err[i] + top * 0.01, i, f"{text}  (n={g['n']})", va="center", fontsize=7)
        ax.set_xlim(0, top * 1.3)
        ax.set_xlabel(key[1])
        mode = mode_name(key[0])
        ax.set_title(ch.title(f"{key[2]}: {mode}, {key[1]}" if key[2] else f"{mode.capitalize()}, {key[1]}"),
                     fontsize=10, loc="left")
        ax.grid(axis="x", alpha=0.3)
        labels += names
    ch.save(fig, "throughput.png", labels)


def step_times(j, cap=4000):
    out = []
    for e in j.get("epochs") or []:
        out += e.get("step_times_ms") or []
    if len(out) > cap:  # every k-th step keeps the shape of the distribution
        k = math.ceil(len(out) / cap)
        out = out[::k]
    return out


def draw_step_times(ch, groups, by_path):
    panels = {}
    for g in groups:
        steps = []
        for p in g["ok_paths"]:
            if p in by_path:
                steps += step_times(by_path[p])
        if len(steps) >= 2:
            panels.setdefault((g["mode"],), []).append((g, steps))
    if not panels:
        return
    fig, cells = panel_figure(ch, panels)
    labels = []
    for ax, key in cells:
        rows = sorted(panels[key], key=lambda r: sorted(r[1])[len(r[1]) // 2])
        ax.boxplot([r[1] for r in rows], vert=False, widths=0.6, showfliers=True, whis=(1, 99),
                   flierprops={"markersize": 2, "alpha": 0.4}, medianprops={"color": RED})
        names = [r[0]["label"] for r in rows]
        ax.set_yticks(range(1, len(rows) + 1), names, fontsize=8)
        ax.set_xscale("log")
        right = max(max(r[1]) for r in rows)
        ax.set_xlim(min(min(r[1]) for r in rows) * 0.9, right * 2.2)  # room on the right for the figures
        for i, (_, steps) in enumerate(rows, start=1):
            s = sorted(steps)
            p50, p99 = s[len(s) // 2], s[min(len(s) - 1, int(0.99 * len(s)))]
            ax.text(right * 1.15, i, f"p50 {p50:.3g} ms, p99 {p99:.3g} ms", va="center", fontsize=7)
        ax.set_xlabel("step time (ms, log scale); box: quartiles, whiskers: 1st-99th percentile")
        ax.set_title(ch.title(f"{mode_name(key[0]).capitalize()}: every timed step"), fontsize=10, loc="left")
        ax.grid(axis="x", alpha=0.3, which="both")
        labels += names
    ch.save(fig, "step_time.png", labels)


def draw_epochs(ch, groups, by_path):
    lines = []
    for g in groups:
        for k, p in enumerate(g["ok_paths"]):
            j = by_path.get(p)
            if j and len(j.get("epochs") or []) >= 2:
                lines.append((g, k, [e["seconds"] for e in j["epochs"]]))
    if not lines:
        return
    fig, ax = ch.plt.subplots(figsize=(10, 4.2))
    colours = ch.plt.get_cmap("tab10")
    labels, seen = [], {}
    for g, k, secs in lines:
        c = seen.setdefault(g["label"], len(seen))
        first = k == 0 or g["label"] not in labels
        ax.plot(range(1, len(secs) + 1), secs, marker="o", markersize=3, color=colours(c % 10),
                label=g["label"] if first else None, linewidth=1)
        if first:
            labels.append(g["label"])
    ax.set_xlabel("epoch")
    ax.set_ylabel("seconds")
    ax.xaxis.get_major_locator().set_params(integer=True)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    ch.save(fig, "epoch_time.png", labels)


def trace_of(path, j):
    t = (j.get("telemetry") or {}).get("trace_path")
    if not t:
        return None
    if not os.path.exists(t):
        # The path as the run wrote it (absolute or relative to where it ran) is gone once records are moved or
        # committed: the trace travels beside its record, so look there by name.
        t = os.path.join(os.path.dirname(path), os.path.basename(t))
    return t if os.path.exists(t) else None


def draw_telemetry(ch, groups, by_path, limit=10):
    traces = []
    for g in groups:
        for p in g["ok_paths"] or g["paths"]:
            t = trace_of(p, by_path[p]) if p in by_path else None
            if t:
                traces.append((g["label"], t))
                break  # one trace per scenario: the first run that has one
    if not traces:
        return
    shown = traces[:limit]
    fig, axes = ch.plt.subplots(3, 1, figsize=(11, 7), sharex=True)
    for name, t in shown:
        with open(t) as f:
            rows = list(csv.DictReader(f))
        ts = [float(r["t_s"]) for r in rows]
        for ax, col in zip(axes, ("power_w", "sm_clock_mhz", "temperature_c")):
            vals = [float(r[col]) if r.get(col) else float("nan") for r in rows]
            ax.plot(ts, vals, label=name if ax is axes[0] else None, linewidth=0.9)
    for ax, unit in zip(axes, ("power (W)", "SM clock (MHz)", "temperature (°C)")):
        ax.set_ylabel(unit)
        ax.grid(alpha=0.3)
    title = "one trace per scenario"
    if len(traces) > limit:
        title += f" ({limit} of {len(traces)} shown)"
    axes[0].set_title(ch.title(title), fontsize=10, loc="left")
    axes[0].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    axes[-1].set_xlabel("seconds since the sampler started")
    ch.save(fig, "telemetry.png", [n for n, _ in shown])


def draw_profile(ch, runs, name_of):
    profiled = [(p, j) for p, j in runs if (j.get("profile") or {}).get("categories")]
    if not profiled:
        return
    cats = []  # categories in the order the records list them (gpubench's display order)
    for _, j in profiled:
        for c in j["profile"]["categories"]:
            if c["category"] not in cats:
                cats.append(c["category"])
    fig, ax = ch.plt.subplots(figsize=(11, bar_height(len(profiled)) + 0.6))
    colours = ch.plt.get_cmap("tab10")
    names = []
    for i, (p, j) in enumerate(profiled):
        left = 0.0
        per = {c["category"]: c["ms_per_step"] for c in j["profile"]["categories"]}
        for k, cat in enumerate(cats):
            w = per.get(cat, 0.0)
            ax.barh(i, w, left=left, color=colours(k % 10), label=cat if i == 0 else None, height=0.7)
            left += w
        verdict = (j.get("summary") or {}).get("bounded_by") or "no verdict"
        ax.text(left, i, f"  {left:.1f} ms, {verdict}", va="center", fontsize=7)
        names.append(name_of(p, j))
    # Several profiled runs of one scenario: number them, so no label is printed twice.
    counts = {n: names.count(n) for n in names}
    seen = {}
    for i, n in enumerate(names):
        if counts[n] > 1:
            seen[n] = seen.get(n, 0) + 1
            names[i] = f"{n} #{seen[n]}"
    ax.set_yticks(range(len(profiled)), names, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(0, ax.get_xlim()[1] * 1.2)
    ax.set_xlabel("kernel time per step (ms)")
    ax.grid(axis="x", alpha=0.3)
    ax.legend(fontsize=7, ncol=min(len(cats), 5), loc="upper center", bbox_to_anchor=(0.5, -0.18), frameon=False)
    ch.save(fig, "profile.png", names + cats)


def draw_sweeps(ch, sweeps, name_of):
    """Throughput against batch size, one panel per unit: the mean per batch size, the runs' range as error bars."""
    from matplotlib.ticker import FuncFormatter

    panels = {}
    for g in sweeps:
        panels.setdefault(unit_of(g[0][1]), []).append(g)
    if not panels:
        return
    fig, axes = ch.plt.subplots(1, len(panels), figsize=(6.5 * len(panels), 4.6), squeeze=False, layout="constrained")
    labels = []
    for ax, (unit, gs) in zip(axes[0], sorted(panels.items())):
        for g in gs:
            _, s = g[0]
            gpus = (s.get("distributed") or {}).get("world_size", 1)
            name = (f"{s['scenario']['model']} {s['precision'].get('resolved', '')} {s['scenario'].get('mode', 'train')}"
                    + (f", {gpus} GPUs" if gpus > 1 else ""))
            k = 2
            while name in labels:  # two sweeps of one model and precision (another recipe): numbered
                name = f"{name.split(' #')[0]} #{k}"
                k += 1
            by_batch = {}
            for _, j in g:
                by_batch.setdefault(j["scenario"]["batch_size"], []).append(j["summary"]["samples_per_s"])
            xs = sorted(by_batch)
            mean = [sum(by_batch[x]) / len(by_batch[x]) for x in xs]
            err = [[m - min(by_batch[x]) for m, x in zip(mean, xs)], [max(by_batch[x]) - m for m, x in zip(mean, xs)]]
            ax.errorbar(xs, mean, yerr=err, marker="o", markersize=4, capsize=3, label=name)
            labels.append(name)
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.set_xlabel("batch size")
        ax.set_ylabel(unit)
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.set_title(ch.title(unit), fontsize=10, loc="left")
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.15), frameon=False, ncol=2)
    ch.save(fig, "batch_size.png", labels)


def draw_compare(ch, compare):
    rows = [c for c in compare.get("comparisons", []) if c.get("ratio")]
    if not rows:
        return
    threshold = float(compare.get("threshold") or 0) * 100
    fig, ax = ch.plt.subplots(figsize=(11, bar_height(len(rows)) + 0.4))
    names = []
    for i, c in enumerate(rows):
        mid = (c["ratio"] - 1) * 100
        lo, hi = (c.get("ci_low", c["ratio"]) - 1) * 100, (c.get("ci_high", c["ratio"]) - 1) * 100
        verdict = c.get("verdict", "")
        colour = RED if "regression" in verdict else GREEN if "improvement" in verdict else GREY
        ax.errorbar(mid, i, xerr=[[mid - lo], [hi - mid]], fmt="o", color=colour, capsize=4, markersize=6)
        ax.text(hi, i, f"  {mid:+.2f} % [{lo:+.2f}, {hi:+.2f}]  {verdict}", va="center", fontsize=7)
        names.append(c.get("label", "?"))
    if threshold > 0:
        ax.axvspan(-threshold, threshold, color=GREY, alpha=0.2)
    ax.axvline(0, color="black", linewidth=0.8)
    ax.set_yticks(range(len(rows)), names, fontsize=8)
    ax.invert_yaxis()
    lo_all = min((c.get("ci_low", c["ratio"]) - 1) * 100 for c in rows)
    hi_all = max((c.get("ci_high", c["ratio"]) - 1) * 100 for c in rows)
    span = max(abs(lo_all), abs(hi_all), threshold, 0.5) * 1.3
    ax.set_xlim(-span, span * 1.9)  # room on the right for the values
    metric = compare.get("metric") or "throughput"
    ax.set_xlabel(f"{metric}: change new vs base (%), with its 95 % interval"
                  + (f"; shaded: the ±{threshold:g} % verdict threshold" if threshold > 0 else ""))
    ax.grid(axis="x", alpha=0.3)
    ch.save(fig, "compare.png", names)


def draw_trend(ch, trend):
    # One panel per unit: images/s and sequences/s never share an axis.
    series, units = {}, {}
    for r in trend["rows"]:
        if r.get("value") not in (None, ""):
            series.setdefault(r["series"], []).append((r["start_time_utc"], float(r["value"]), r))
            units.setdefault(r.get("unit") or "", set()).add(r["series"])
    if not series:
        return
    from datetime import datetime

    def when(text):
        return datetime.fromisoformat(text.replace("Z", "+00:00")) if text else None

    def short(v):  # a git revision's first 8 hex digits; versions as they are
        v = v or "?"
        return v[:8] if len(v) == 40 else v

    panels = sorted(units.items())
    fig, axes = ch.plt.subplots(len(panels), 1, figsize=(11, 4.5 * len(panels)), sharex=True, squeeze=False)
    labels, changes = [], {}
    for (unit, names), row in zip(panels, axes):
        ax = row[0]
        for name in sorted(names):
            points = [(when(t), v, r) for t, v, r in series[name] if when(t) is not None]
            if not points:
                continue
            ax.plot([t for t, _, _ in points], [v for _, v, _ in points], marker="o", markersize=3, label=name)
            labels.append(name)
            # Where the software changed between two runs of a series: a line at the first run after it, named above.
            for (_, _, a), (t, _, b) in zip(points, points[1:]):
                what = [f"{what_name} {short(a.get(k))} → {short(b.get(k))}"
                        for k, what_name in (("driver_version", "driver"), ("libtorch_version", "LibTorch"),
                                             ("git_revision", "gpubench"))
                        if a.get(k) != b.get(k)]
                if what:
                    changes.setdefault(t, set()).update(what)
        ax.set_ylabel(f"{trend['metric']} ({unit})" if unit else trend["metric"])
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    top = axes[0][0]
    for n, (t, what) in enumerate(sorted(changes.items())):
        for row in axes:
            row[0].axvline(t, color=RED, linestyle="--", linewidth=1)
        top.annotate(", ".join(sorted(what)), (t, 1.0), xycoords=("data", "axes fraction"),
                     xytext=(0, 4 + 11 * (n % 3)), textcoords="offset points", ha="center", fontsize=8, color=RED,
                     bbox={"boxstyle": "round,pad=0.2", "fc": "white", "ec": RED, "lw": 0.6})
    fig.autofmt_xdate()
    ch.save(fig, "trend.png", labels + [f"axis: {trend['metric']} ({u})" if u else f"axis: {trend['metric']}"
                                        for u, _ in panels])


def plot_all(runs, out, compare=None, trend=None, sweeps=None, groups=None):
    try:
        import matplotlib
    except ImportError:
        print("plot_results.py: matplotlib is not installed for this python3 (Debian: apt-get install "
              "python3-matplotlib)", file=sys.stderr)
        raise SystemExit(NO_MATPLOTLIB)
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ch = Charts(plt, out)
    by_path = {p: j for p, j in runs}
    groups = [dict(g) for g in (groups if groups is not None else fallback_groups(runs))]
    # One GPU model for every scenario: it goes into the titles, not at the end of every label.
    devices = {g.get("device_model") for g in groups}
    device = devices.pop() if len(devices) == 1 else None
    if device:
        for g in groups:  # "..., NVIDIA H200" or "..., NVIDIA H200 [key=value]" (gpubench's distinct labels)
            g["label"] = g["label"].replace(", " + device + " [", " [")
            if g["label"].endswith(", " + device):
                g["label"] = g["label"][: -len(", " + device)]
        ch.device = device
    name_by_path = {p: g["label"] for g in groups for p in g.get("paths", [])}

    def name_of(p, j):
        return name_by_path.get(p) or label(p, j)

    draw_throughput(ch, groups)
    draw_step_times(ch, groups, by_path)
    draw_epochs(ch, groups, by_path)
    draw_telemetry(ch, groups, by_path)
    # Which runs form a batch-size sweep is gpubench's decision (the report's --groups); this script only draws it.
    ok = {p: j for p, j in runs if j["status"] == "ok" and j["summary"]["samples_per_s"] > 0}
    sweeps = [[(p, ok[p]) for p in group if p in ok] for group in (sweeps or [])]
    draw_sweeps(ch, [g for g in sweeps if len(g) > 1], name_of)
    draw_profile(ch, runs, name_of)
    if compare:
        draw_compare(ch, compare)
    if trend:
        draw_trend(ch, trend)
    with open(os.path.join(out, "charts.json"), "w") as f:
        json.dump(ch.labels, f, indent=1)
    return ch.written


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True)
    p.add_argument("--compare", help="JSON written by `gpubench compare --json`")
    p.add_argument("--trend", help="CSV written by `gpubench report --db` (series, start_time_utc, value, ...)")
    p.add_argument("--trend-metric", default="value", help="axis label for --trend")
    p.add_argument("--groups", help="JSON written by `gpubench report`: {\"sweeps\": [[record path, ...], ...], "
                   "\"scenarios\": [{label, unit, mode, n, mean, half_width_95, paths, ok_paths, ...}, ...]}")
    p.add_argument("records", nargs="*")
    a = p.parse_args(argv)
    os.makedirs(a.out, exist_ok=True)
    with open(a.compare) if a.compare else open(os.devnull) as f:
        compare = json.load(f) if a.compare else None
    trend = None
    if a.trend:
        with open(a.trend) as f:
            trend = {"metric": a.trend_metric, "rows": list(csv.DictReader(f))}
    sweeps = groups = None
    if a.groups:
        with open(a.groups) as f:
            g = json.load(f)
        sweeps, groups = g.get("sweeps"), g.get("scenarios")
    for name in plot_all(load_records(a.records), a.out, compare, trend, sweeps, groups):
        print(name, file=sys.stderr)  # standard output is gpubench's: `report --format json` prints one document
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
