#!/usr/bin/env python3
"""Runs benchmark files (configs/bench/*.yaml) on the GPU machine: gpubench and PyTorch on the same scenario,
alternating round by round, then one table of ratios.

A bench file names a gpubench scenario (the keys of a scenario file) and the variants to run on it:

  rounds: 2                    # A B A B ...: every variant once per round
  scenario: {model: gpt2, precision: bf16, batch_size: 8, dataset_size: 640, warmup_steps: 10}
  gpubench: {eager: [], graph: [--cuda-graph]}          # variant -> extra `gpubench run` flags
  pytorch: {eager: [--fused], compile: [--fused, --compile]}   # variant -> extra scripts/pytorch_reference.py flags
  ranks: 1                     # > 1: gpubench --nproc-per-node N, the reference under torchrun
  env: {}                      # environment for every command
  setup: []                    # shell commands run once first (e.g. `gpubench dataset make ...`)

The scenario is written once to <out>/scenarios/<bench>.yaml and both tools read that file (`gpubench run --config`,
`pytorch_reference.py --config`), so they run the same work. Records: <out>/records/gpubench_<bench>_<variant>_r<k>.json
and pytorch_<bench>_<variant>_r<k>.json. The summary (summary.md, summary.json) has, for every gpubench variant
against every PyTorch variant, the ratio of totals (samples/s) and of median step times per round, their mean and range.

  python3 scripts/bench.py configs/bench/gpt2-bs8.yaml configs/bench/llama.yaml --out $OUT --gpubench build/gpubench
  python3 scripts/bench.py configs/bench/*.yaml --dry-run        # the commands, in order, without running them
"""
import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KEYS = {"rounds", "scenario", "gpubench", "pytorch", "ranks", "env", "setup", "timeout_s"}


def load_bench(path):
    """A bench file, checked: unknown keys and empty plans are errors naming the file."""
    import yaml  # PyYAML (a transformers dependency; Debian's python3-yaml)

    with open(path) as f:
        b = yaml.safe_load(f) or {}
    if not isinstance(b, dict):
        raise SystemExit(f"{path}: a bench file is a mapping")
    unknown = set(b) - KEYS
    if unknown:
        raise SystemExit(f"{path}: unknown keys {sorted(unknown)} (known: {sorted(KEYS)})")
    if not isinstance(b.get("scenario"), dict) or "model" not in b["scenario"]:
        raise SystemExit(f"{path}: 'scenario' must be a mapping that names the model")
    if not b.get("gpubench") and not b.get("pytorch"):
        raise SystemExit(f"{path}: nothing to run (no gpubench or pytorch variants)")
    b.setdefault("rounds", 1)
    b.setdefault("gpubench", {})
    b.setdefault("pytorch", {})
    b.setdefault("ranks", 1)
    b.setdefault("env", {})
    b.setdefault("setup", [])
    b.setdefault("timeout_s", 900)
    b["name"] = os.path.splitext(os.path.basename(path))[0]
    return b


def plan(bench, out, gpubench, python):
    """The commands of one bench, in run order: (record path or None, argv, what, (tool, variant, round) or None)."""
    import yaml

    scen_dir = os.path.join(out, "scenarios")
    rec_dir = os.path.join(out, "records")
    scenario = os.path.join(scen_dir, bench["name"] + ".yaml")
    steps = [(None, ["/bin/sh", "-c", cmd], "setup", None) for cmd in bench["setup"]]
    ranks = int(bench["ranks"])
    for r in range(1, int(bench["rounds"]) + 1):
        for variant, flags in bench["gpubench"].items():
            rec = os.path.join(rec_dir, f"gpubench_{bench['name']}_{variant}_r{r}.json")
            argv = [gpubench, "run", "--config", scenario, *map(str, flags or []), "--quiet", "--output", rec]
            if ranks > 1:
                argv += ["--nproc-per-node", str(ranks)]
            steps.append((rec, argv, f"gpubench {variant} round {r}", ("gpubench", variant, r)))
        for variant, flags in bench["pytorch"].items():
            rec = os.path.join(rec_dir, f"pytorch_{bench['name']}_{variant}_r{r}.json")
            ref = [os.path.join(ROOT, "scripts", "pytorch_reference.py"), "--config", scenario, *map(str, flags or []),
                   "--json", rec]
            argv = [python, *(["-m", "torch.distributed.run", "--standalone", "--nproc-per-node", str(ranks)]
                              if ranks > 1 else []), *ref]
            steps.append((rec, argv, f"pytorch {variant} round {r}", ("pytorch", variant, r)))
    os.makedirs(scen_dir, exist_ok=True)
    os.makedirs(rec_dir, exist_ok=True)
    with open(scenario, "w") as f:
        yaml.safe_dump(bench["scenario"], f, sort_keys=False)
    return steps


def result_of(path):
    """samples/s, median step (ms) and peak allocated bytes of a gpubench record or a reference JSON; None if absent."""
    try:
        with open(path) as f:
            j = json.load(f)
    except (OSError, ValueError):
        return None
    if j.get("schema") == "gpubench.run":
        if j.get("status") != "ok":
            return {"rate": None, "median_ms": None, "peak": None, "status": j.get("status"), "reason": j.get("reason")}
        s = j["summary"]
        return {"rate": s["samples_per_s"], "median_ms": (s.get("step_time") or {}).get("median_ms"),
                "peak": s.get("peak_allocated_bytes"), "status": "ok"}
    return {"rate": j.get("samples_per_s"), "median_ms": j.get("step_ms_median"), "peak": j.get("peak_allocated_bytes"),
            "status": "ok"}


def spread(values):
    return {"mean": statistics.mean(values), "min": min(values), "max": max(values), "n": len(values)} if values else None


def summarize(bench, records):
    """Every gpubench variant against every PyTorch variant: ratios of totals and of median steps, round by round.
    `records` maps (tool, variant, round) to result_of(...)."""
    rows = []
    rounds = range(1, int(bench["rounds"]) + 1)
    for g in bench["gpubench"]:
        for p in bench["pytorch"]:
            totals, medians = [], []
            for r in rounds:
                a, b = records.get(("gpubench", g, r)), records.get(("pytorch", p, r))
                if a and b and a["rate"] and b["rate"]:
                    totals.append(a["rate"] / b["rate"])
                if a and b and a["median_ms"] and b["median_ms"]:
                    medians.append(b["median_ms"] / a["median_ms"])  # above 1: gpubench's typical step is faster
            rows.append({"bench": bench["name"], "gpubench": g, "pytorch": p, "ratio_of_totals": spread(totals),
                         "ratio_of_medians": spread(medians)})
    for tool in ("gpubench", "pytorch"):
        for v in bench[tool]:
            rates = [records[(tool, v, r)]["rate"] for r in rounds
                     if records.get((tool, v, r)) and records[(tool, v, r)]["rate"]]
            rows.append({"bench": bench["name"], "tool": tool, "variant": v, "samples_per_s": spread(rates),
                         "failed": [records[(tool, v, r)].get("reason") for r in rounds
                                    if records.get((tool, v, r)) and not records[(tool, v, r)]["rate"]]})
    return rows


def markdown(rows):
    f = lambda s: f"{s['mean']:.3f} ({s['min']:.3f}-{s['max']:.3f}, n={s['n']})" if s else "-"
    out = ["| bench | gpubench | PyTorch | ratio of totals gpubench/PyTorch | ratio of medians PyTorch/gpubench |",
           "| --- | --- | --- | --- | --- |"]
    out += [f"| {r['bench']} | {r['gpubench']} | {r['pytorch']} | {f(r['ratio_of_totals'])} | {f(r['ratio_of_medians'])} |"
            for r in rows if "pytorch" in r and "gpubench" in r]
    out += ["", "| bench | tool | variant | samples/s mean (min-max) | failed rounds |", "| --- | --- | --- | --- | --- |"]
    g = lambda s: f"{s['mean']:.1f} ({s['min']:.1f}-{s['max']:.1f})" if s else "-"
    out += [f"| {r['bench']} | {r['tool']} | {r['variant']} | {g(r['samples_per_s'])} | {'; '.join(map(str, r['failed']))} |"
            for r in rows if "tool" in r]
    return "\n".join(out) + "\n"


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("benches", nargs="+", help="bench files (configs/bench/*.yaml)")
    p.add_argument("--out", default=os.environ.get("OUT", "bench-out"))
    p.add_argument("--gpubench", default=os.environ.get("GPUBENCH_BINARY", os.path.join(ROOT, "build", "gpubench")))
    p.add_argument("--python", default=sys.executable)
    p.add_argument("--rounds", type=int, help="override every bench file's rounds")
    p.add_argument("--skip", action="append", default=[], metavar="TOOL:VARIANT",
                   help="leave a variant out (e.g. pytorch:eager); repeatable")
    p.add_argument("--dry-run", action="store_true", help="print the commands and write nothing but the scenarios")
    a = p.parse_args(argv)
    benches = [load_bench(b) for b in a.benches]  # every file is checked before anything runs
    for b in benches:
        if a.rounds:
            b["rounds"] = a.rounds
        for skip in a.skip:
            tool, _, variant = skip.partition(":")
            b.get(tool, {}).pop(variant, None)
    all_rows = []
    for b in benches:
        steps = plan(b, a.out, a.gpubench, a.python)
        env = dict(os.environ, **{k: str(v) for k, v in b["env"].items()})
        records = {}
        for rec, argv_, what, key in steps:
            print(f"== {time.strftime('%H:%M:%S')} {b['name']}: {what}: {shlex.join(argv_)}", flush=True)
            if a.dry_run:
                continue
            try:
                rc = subprocess.run(argv_, env=env, timeout=b["timeout_s"], stdout=subprocess.DEVNULL).returncode
            except subprocess.TimeoutExpired:
                rc = "timeout"
            if rc != 0:
                print(f"   exit {rc}", flush=True)
            if key:
                records[key] = result_of(rec)
        if not a.dry_run:
            all_rows += summarize(b, records)
    if a.dry_run:
        return 0
    text = markdown(all_rows)
    print(text)
    with open(os.path.join(a.out, "summary.md"), "w") as f:
        f.write(text)
    with open(os.path.join(a.out, "summary.json"), "w") as f:
        json.dump(all_rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
