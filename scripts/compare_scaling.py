#!/usr/bin/env python3
"""Scaling efficiency of gpubench and PyTorch DDP from one device session (scripts/device_run.sh phase `ddp`).

Reads <folder>/scaling_<name>/<model>_gpus<N>.json (gpubench scaling) and <folder>/pytorch_<name>_<N>gpu.json
(scripts/pytorch_reference.py, under torchrun for N > 1). Efficiency = throughput on N / (N x throughput on 1).
"""
import argparse
import glob
import json
import os
import re
import sys


def load(folder):
    """gpubench's side as `gpubench scaling` computed it (its scaling.json: throughput, efficiency, exposed
    communication per rank count); PyTorch's from the reference script's JSON."""
    out = {}
    for path in glob.glob(os.path.join(folder, "scaling_*", "scaling.json")):
        name = os.path.basename(os.path.dirname(path))[len("scaling_"):]
        for row in json.load(open(path)).get("points", []):
            out.setdefault(name, {}).setdefault("gpubench", {})[row["ranks"]] = {
                "rate": row.get("samples_per_s") if row.get("status") == "ok" else None,
                "efficiency": row.get("scaling_efficiency"),
                "comm_wait_fraction": row.get("comm_wait_fraction_rank0"),
                "status": row.get("status"), "reason": None}
    for path in glob.glob(os.path.join(folder, "pytorch_*gpu.json")):
        m = re.match(r"pytorch_(.+)_(\d+)gpu\.json$", os.path.basename(path))
        j = json.load(open(path))
        out.setdefault(m.group(1), {}).setdefault("pytorch", {})[int(m.group(2))] = {"rate": j["samples_per_s"]}
    return out


def efficiency(points, n):
    """PyTorch's efficiency, by the definition gpubench's scaling.json uses for its own: rate on n / (n x rate on 1)."""
    one, many = points.get(1, {}).get("rate"), points.get(n, {}).get("rate")
    return many / (n * one) if one and many else None


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("folder")
    p.add_argument("--json")
    a = p.parse_args(argv)
    data = load(a.folder)
    rows = []
    print("| scenario | GPUs | gpubench samples/s | gpubench efficiency | PyTorch DDP samples/s | PyTorch efficiency | gpubench / PyTorch | gpubench exposed comm |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for name, tools in sorted(data.items()):
        g, t = tools.get("gpubench", {}), tools.get("pytorch", {})
        for n in sorted(set(g) | set(t)):
            gr, tr = g.get(n, {}).get("rate"), t.get(n, {}).get("rate")
            ge, te = g.get(n, {}).get("efficiency"), efficiency(t, n)
            w = g.get(n, {}).get("comm_wait_fraction")
            row = {"scenario": name, "gpus": n, "gpubench": gr, "pytorch": tr, "gpubench_efficiency": ge,
                   "pytorch_efficiency": te, "gpubench_status": g.get(n, {}).get("status"),
                   "gpubench_reason": g.get(n, {}).get("reason"), "comm_wait_fraction": w}
            rows.append(row)
            f = lambda v, s="{:.0f}": s.format(v) if v is not None else "-"
            print(f"| {name} | {n} | {f(gr)} | {f(ge and ge * 100, '{:.1f}%')} | {f(tr)} | {f(te and te * 100, '{:.1f}%')} | "
                  f"{f(gr / tr if gr and tr else None, '{:.3f}')} | {f(w and w * 100, '{:.1f}%')} |")
    if a.json:
        json.dump(rows, open(a.json, "w"), indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
