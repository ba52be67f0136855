#!/usr/bin/env python3
"""Where the GPU waits in a profiled step: the idle gaps between consecutive kernels of a gpubench Chrome trace,
their total, and the kernels around the largest ones. Usage: gaps.py call3/records/profile_fp8.trace.json.gz"""
import collections
import gzip
import json
import sys

trace = json.load(gzip.open(sys.argv[1]))
events = trace["traceEvents"] if isinstance(trace, dict) else trace
kernels = sorted((e for e in events if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")),
                 key=lambda e: e["ts"])
gaps = [(b["ts"] - (a["ts"] + a["dur"]), a["name"][:50], b["name"][:50]) for a, b in zip(kernels, kernels[1:])]
gaps = [g for g in gaps if g[0] > 5]
span = kernels[-1]["ts"] + kernels[-1]["dur"] - kernels[0]["ts"]
print(f"{len(kernels)} kernels over {span / 1e3:.1f} ms; idle gaps over 5 us: {len(gaps)}, "
      f"{sum(g[0] for g in gaps) / 1e3:.1f} ms")
by_pair = collections.Counter()
for g, a, b in gaps:
    by_pair[(a[:40], b[:40])] += g
for (a, b), us in by_pair.most_common(12):
    print(f"{us / 1e3:7.2f} ms  {a}  ->  {b}")
