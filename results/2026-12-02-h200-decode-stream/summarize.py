"""Prints the tables of README.md from the records: every gpubench generate run (decode tokens/s, its median decode
step, the fraction of the bandwidth bound, TTFT over the prompt's forward, and the total: every generated token over
the summed end-to-end times) and transformers' eager generate (median decode tokens/s over its repetitions, the first
left out as its warm-up, and the same total over those), call by call. Usage: summarize.py [RESULTS_DIR] (default:
this script's folder; results/2026-12-02-h200-decode-run-gemv uses it too)."""
import glob
import json
import os
import statistics
import sys

HERE = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))


def metrics(path):
    with open(path) as f:
        d = json.load(f)
    if d.get("status") != "ok":
        return None, d.get("reason", "")
    return {m["tag"]: m["value"] for m in d["summary"]["metrics"]}, ""


for call in sorted(glob.glob(os.path.join(HERE, "call*"))):
    print(f"## {os.path.basename(call)}")
    print("| run | decode tokens/s | decode step (ms) | fraction of the bound | copy rate (GB/s) | TTFT / prefill "
          "| total tokens/s |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for path in sorted(glob.glob(os.path.join(call, "records", "gpubench_*.json"))):
        name = os.path.basename(path)[len("gpubench_"):-len(".json")]
        m, why = metrics(path)
        if m is None:
            print(f"| {name} | failed: {why} | | | | | |")
            continue
        print(f"| {name} | {m['decode_tokens_per_s']:.1f} | {m['decode_step_ms']:.3f} | "
              f"{100 * m['decode_bound_fraction']:.1f} % | {m['copy_bandwidth_gb_per_s']:.0f} | "
              f"{m['ttft_over_prefill_forward']:.2f} | {m['tokens_per_s']:.1f} |")
    for path in sorted(glob.glob(os.path.join(call, "records", "pytorch_*.json"))):
        with open(path) as f:
            d = json.load(f)
        timed = d.get("repetitions", [])[1:]
        reps = [r["decode_tokens_per_s"] for r in timed]
        tokens = d.get("new_tokens", 0) * d.get("batch_size", 1) * len(timed)
        total = tokens / (sum(r["e2e_ms"] for r in timed) / 1e3) if timed else 0.0
        print(f"| transformers {d.get('mode')} {os.path.basename(path)[len('pytorch_'):-len('.json')]} | "
              f"{statistics.median(reps):.1f} | | | | | {total:.1f} |")
    print()
