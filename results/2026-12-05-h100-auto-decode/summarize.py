"""Ratios of each call's folder runs to the same call's synthetic rounds: totals (images / seconds over the timed
epochs) and medians (the synthetic median step over the folder run's), with each run's decode choice and calibration.
Usage: python3 summarize.py [CALL_DIR ...] (default: every call*/ here)."""
import glob
import json
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
calls = sys.argv[1:] or sorted(glob.glob(os.path.join(here, "call*")))
for call in calls:
    runs = {}
    for f in sorted(glob.glob(os.path.join(call, "records", "*.json"))):
        r = json.load(open(f))
        s = r["summary"]
        runs[os.path.basename(f)[:-5]] = (s["samples"], s["seconds"], s["step_time"]["median_ms"], r)
    print(f"## {os.path.basename(call)}")
    for prec in ("fp16", "bf16"):
        syn = [v for k, v in runs.items() if k.startswith(prec + "-synthetic")]
        if not syn:
            continue
        syn_rate = sum(v[0] for v in syn) / sum(v[1] for v in syn)
        syn_median = sorted(v[2] for v in syn)[len(syn) // 2] if len(syn) % 2 else sum(v[2] for v in syn) / len(syn)
        print(f"{prec} synthetic: {syn_rate:.1f} img/s over {len(syn)} run(s), median step {syn_median:.2f} ms")
        for k, (n, sec, med, r) in runs.items():
            if not k.startswith(prec) or "synthetic" in k:
                continue
            d = r.get("data") or {}
            c = d.get("decode_calibration") or {}
            m = {x["tag"]: x["value"] for x in r["summary"].get("metrics", [])}
            cal = ""
            if c:
                cal = (f"; calibration {c['seconds']:.1f} s: step {c['step_img_per_s']:.0f}, workers alone "
                       f"{c['cpu_img_per_s']:.0f}, nvJPEG alone {c['gpu_img_per_s']:.0f} ({c['gpu_backend']}), fed "
                       f"cpu {c['fed_cpu_img_per_s']:.0f} / gpu {c['fed_gpu_img_per_s']:.0f} / mixed "
                       f"{c['fed_mixed_img_per_s']:.0f} at {c['mixed_share']:.2f}")
            print(f"  {k}: {n / sec:.1f} img/s, total ratio {n / sec / syn_rate:.3f}, median ratio "
                  f"{syn_median / med:.3f}, decode {d.get('decode')}, workers {d.get('workers')}, input wait "
                  f"{m.get('input_wait_fraction', 0) * 100:.1f} %{cal}")
    for k, (n, sec, med, r) in runs.items():
        if "alone" in k or (not k.startswith("fp16") and not k.startswith("bf16")):
            d = r.get("data") or {}
            print(f"  {k}: {n / sec:.1f} img/s delivered, decode {d.get('decode')}, workers {d.get('workers')}, "
                  f"{d.get('decoder', '')[:60]}")
