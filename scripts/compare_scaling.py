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
    out = {}
    for path in glob.glob(os.path.join(folder, "scaling_*", "*_gpus*.json")):
        name = os.path.basename(os.path.dirname(path))[len("scaling_"):]
        n = int(re.search(r"_gpus(\d+)\.json$", path).group(1))
        j = json.load(open(path))
        rate = j["summary"]["samples_per_s"] if j["status"] == "ok" else None
        wait = None
        if j.get("distributed"):
            d = j["distributed"]
            wait = sum(e[0] for e in d["rank_comm_wait_seconds"]) / max(j["summary"]["seconds"], 1e-9)
        out.setdefault(name, {}).setdefault("gpubench", {})[n] = {"rate": rate, "comm_wait_fraction": wait,
                                                                  "status": j["status"], "reason": j.get("reason")}
    for path in glob.glob(os.path.join(folder, "pytorch_*gpu.json")):
        m = re.match(r"pytorch_(.+)_(\d+)gpu\.json$", os.path.basename(path))
        j = json.load(open(path))
        out.setdefault(m.group(1), {}).setdefault("pytorch", {})[int(m.group(2))] = {"rate": j["samples_per_s"]}
    return out


def efficiency(points, n):
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
            ge, te = efficiency(g, n), efficiency(t, n)
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
