#!/usr/bin/env python3
"""The tables in README.md: each record's throughput (images/s over the timed epoch), median step time, the decoder
and, for decode: mixed, the workers' mean share of a batch; per call. Usage: python3 summarize.py [call1 call2 ...]"""
import glob
import json
import os
import sys


def row(path):
    j = json.load(open(path))
    if j.get("tool") == "pytorch":
        return j["samples_per_s"], j["step_ms_median"], f"torch.compile {j['precision_resolved']}", ""
    m = {x["tag"]: x["value"] for x in j["epochs"][-1]["metrics"]}
    data = j.get("data") or {}
    decode = f"{data['decode']}, {data['workers']} workers" if data else "synthetic"
    share = f"{m['cpu_share']:.3f}" if "cpu_share" in m else ""
    return m["samples_per_s"], m["step_time_median_ms"], decode, share


for call in sys.argv[1:] or sorted(d for d in os.listdir(".") if d.startswith("call")):
    print(f"\n{call}\n| record | images/s | median step (ms) | input | workers' share |\n| --- | ---: | ---: | --- | ---: |")
    for f in sorted(glob.glob(f"{call}/records/*.json")):
        tp, med, decode, share = row(f)
        print(f"| {os.path.basename(f)[:-5]} | {tp:,.1f} | {med:.2f} | {decode} | {share} |")
