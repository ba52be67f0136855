#!/usr/bin/env python3
"""The table in README.md: each record's throughput (images/s over the timed epoch) and median step time, per call."""
import glob
import json
import os
import sys


def row(path):
    j = json.load(open(path))
    if j.get("tool") == "pytorch":
        return j["samples_per_s"], j["step_ms_median"]
    m = {x["tag"]: x["value"] for x in j["summary"]["metrics"]}
    return m["samples_per_s"], m["step_time_median_ms"]


for call in sys.argv[1:] or ["call1", "call2", "call3"]:
    print(f"\n{call}\n| record | images/s | median step (ms) |\n| --- | ---: | ---: |")
    for f in sorted(glob.glob(f"{call}/records/*.json")):
        if f.endswith(".trace.json"):
            continue
        tp, med = row(f)
        print(f"| {os.path.basename(f)[:-5]} | {tp:,.1f} | {med:.2f} |")
