"""Prints one unpacked call's generate runs as README.md's tables: per run, decode tokens/s (median of generations),
ITL p50, the end-to-end total (every generated token over the summed end-to-end times of the timed generations) and,
for gpubench, the fraction of the bandwidth bound; then each PyTorch reference against the mean of the gpubench runs
of the same model (ratios of decode medians, of totals and of ITL p50). PyTorch's --graph records time every
repetition after their own warm-up, so all count. Usage: summarize.py CALL_DIR (results/2026-12-03-h200-decode-
greedy-tail uses it too)."""
import glob
import json
import os
import statistics
import sys

CALL = sys.argv[1]


def gpubench(path):
    with open(path) as f:
        d = json.load(f)
    if d.get("status") != "ok":
        return None
    m = {x["tag"]: x["value"] for x in d["summary"]["metrics"]}
    tokens = sum(e.get("samples", 0) for e in d["epochs"])
    e2e = sum(e.get("seconds", 0.0) for e in d["epochs"])
    return {"decode": m["decode_tokens_per_s"], "itl": m["itl_p50_ms"], "total": tokens / e2e if e2e else 0.0,
            "bound": m["decode_bound_fraction"], "model": d["scenario"]["model"]}


def pytorch(path):
    with open(path) as f:
        d = json.load(f)
    if d.get("status") == "error" or not d.get("repetitions"):
        return None
    reps = d["repetitions"]
    total = d["new_tokens"] * d["batch_size"] * len(reps) / (sum(r["e2e_ms"] for r in reps) / 1e3)
    return {"decode": statistics.median(r["decode_tokens_per_s"] for r in reps), "itl": d["itl_p50_ms"],
            "total": total, "model": d["scenario"]["model"], "mode": d["mode"]}


runs = {}
print("| run | decode tokens/s | ITL p50 (ms) | end-to-end total (tokens/s) | fraction of the bound |")
print("| --- | ---: | ---: | ---: | ---: |")
for path in sorted(glob.glob(os.path.join(CALL, "records", "gpubench_*.json"))):
    name = os.path.basename(path)[len("gpubench_"):-len(".json")]
    r = gpubench(path)
    if r is None:
        print(f"| gpubench {name} | failed | | | |")
        continue
    runs[name] = r
    print(f"| gpubench {name} | {r['decode']:,.1f} | {r['itl']:.3f} | {r['total']:,.1f} | {100 * r['bound']:.1f} % |")
refs = {}
for path in sorted(glob.glob(os.path.join(CALL, "records", "pytorch_*.json"))):
    name = os.path.basename(path)[len("pytorch_"):-len(".json")]
    r = pytorch(path)
    if r is None:
        print(f"| pytorch {name} | failed | | | |")
        continue
    refs[name] = r
    print(f"| pytorch {name} ({r['mode']}) | {r['decode']:,.1f} | {r['itl']:.3f} | {r['total']:,.1f} | |")
print()
print("| reference | gpubench / it: decode medians | totals | ITL p50 |")
print("| --- | ---: | ---: | ---: |")
for name, r in refs.items():
    mine = [g for n, g in runs.items() if g["model"] == r["model"] and not n.split("_")[-1].startswith("off")
            and "_off" not in n]
    if not mine:
        continue
    mean = {k: statistics.mean(g[k] for g in mine) for k in ("decode", "total", "itl")}
    print(f"| {name} | {mean['decode'] / r['decode']:.2f}x | {mean['total'] / r['total']:.2f}x | "
          f"{r['itl'] / mean['itl']:.2f}x |")
