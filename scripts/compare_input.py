#!/usr/bin/env python3
"""Issue #16's table from one device session's records (scripts/device_run.sh data).

gpubench records (gpubench_*.json, run records) and scripts/pytorch_input_reference.py outputs (pytorch_*.json, one
JSON line). Prints a Markdown table of images/s, median step, input wait and verdict, then the target ratios.
"""
import json
import pathlib
import statistics
import sys


def metric(ms, tag):
    for m in ms or []:
        if m.get("tag") == tag:
            return m.get("value")
    return None


def main():
    d = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".")
    rows, rate = [], {}
    for p in sorted(d.glob("*.json")):
        try:
            j = json.loads(p.read_text())
        except (OSError, ValueError):
            continue
        name = p.stem
        if j.get("schema") == "gpubench.run":
            s = j["summary"]
            data = j.get("data") or {}
            wait = metric(s.get("metrics"), "input_wait_fraction")
            cap = metric(s.get("metrics"), "loader_img_per_s")
            rows.append((name, s.get("samples_per_s", 0), s.get("step_time", {}).get("median_ms"),
                         wait, cap, data.get("decode", "synthetic"), s.get("bounded_by", ""), j.get("status")))
            rate[name] = s.get("samples_per_s", 0)
        elif "img_per_s" in j:
            rows.append((name, j["img_per_s"], None, None, None, "PIL", "", "ok"))
            rate[name] = j["img_per_s"]
    print("| run | images/s | median step (ms) | input wait | loader capacity (img/s) | decode | verdict | status |")
    print("| --- | ---: | ---: | ---: | ---: | --- | --- | --- |")
    for n, r, med, w, c, dec, v, st in rows:
        med_s = f"{med:.2f}" if med is not None else ""
        wait_s = f"{w * 100:.1f} %" if w is not None else ""
        cap_s = f"{c:,.0f}" if c else ""
        print(f"| {n} | {r:,.0f} | {med_s} | {wait_s} | {cap_s} | {dec} | {v} | {st} |")

    def mean(prefix):
        v = [r for n, r in rate.items() if n.startswith(prefix)]
        return statistics.mean(v) if v else None

    def ratio(label, a, b, target=None):
        if a and b:
            t = f" (target {target})" if target else ""
            print(f"- {label}: {a / b:.3f}{t}")

    print()
    for prec in ("bf16", "fp16"):
        ratio(f"GPU decode / synthetic, {prec}", mean(f"gpubench_gpu_{prec}"), mean(f"gpubench_synthetic_{prec}"), ">= 0.95")
    ratio("GPU decode bf16 / PyTorch standard recipe bf16", mean("gpubench_gpu_bf16"), mean("pytorch_train_bf16"), ">= 3.5")
    ratio("CPU decode bf16 / PyTorch standard recipe bf16", mean("gpubench_cpu_bf16"), mean("pytorch_train_bf16"))
    ratio("CPU decode bf16 / synthetic bf16", mean("gpubench_cpu_bf16"), mean("gpubench_synthetic_bf16"))
    ratio("CPU decode fp16 / synthetic fp16", mean("gpubench_cpu_fp16"), mean("gpubench_synthetic_fp16"))
    ratio("one core: gpubench CPU path / PIL decode + augment", mean("gpubench_percore"), mean("pytorch_percore"), ">= 2.5")
    ratio("loader alone, CPU decode / PyTorch DataLoader", mean("gpubench_loader_cpu"), mean("pytorch_loader"))
    ratio("loader alone, GPU decode / PyTorch DataLoader", mean("gpubench_loader_gpu"), mean("pytorch_loader"))


if __name__ == "__main__":
    main()
