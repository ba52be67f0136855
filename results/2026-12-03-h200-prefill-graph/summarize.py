#!/usr/bin/env python3
"""The prefill-graph call's figures: `summarize.py --one RECORD` prints one record's line (the device script logs it
after each run); `summarize.py DIR` prints a table of every record in DIR/records (an unpacked archive), gpubench's
and PyTorch's, in the order they ran."""
import json
import os
import sys


def metrics(d):
    return {m["tag"]: m["value"] for m in d.get("summary", {}).get("metrics", [])}


def note(d, prefix):
    return next((n for n in d.get("notes", []) if n.startswith(prefix)), "")


def line(path):
    d = json.load(open(path))
    name = os.path.basename(path)[:-5]
    if d.get("tool") == "pytorch":
        if d.get("status") == "error":
            return f"{name}: error {d.get('reason', '')[:120]}"
        if d.get("generate"):
            return (f"{name}: decode {d.get('decode_tokens_per_s', 0):.1f} tokens/s, TTFT {d.get('ttft_ms', 0):.3f} ms, "
                    f"tokens_agree_with_uncompiled {d.get('tokens_agree_with_uncompiled')}")
        return (f"{name}: forward p50 {d.get('latency_p50_ms', 0):.3f} ms, mean {1e3 / d['steps_per_s']:.3f} ms "
                f"({d.get('mode')})")
    m = metrics(d)
    if d.get("status") != "ok":
        return f"{name}: {d.get('status')} {d.get('reason', '')[:160]}"
    if d["scenario"].get("mode") == "inference":
        return (f"{name}: forward p50 {m.get('step_time_median_ms', 0):.3f} ms, mean "
                f"{m.get('step_time_mean_ms', 0):.3f} ms ({d['execution'].get('mode')})")
    digest = note(d, "generated tokens:").split("digest of all")[-1].strip()
    prefill = "graph" if note(d, "prefill: one CUDA graph") else "eager" if note(d, "prefill: eager") else "?"
    return (f"{name}: decode {m.get('decode_tokens_per_s', 0):.1f} tokens/s ({100 * m.get('decode_bound_fraction', 0):.1f} %"
            f" of the bound), TTFT {m.get('ttft_ms', 0):.3f} ms (p90 {m.get('ttft_ms_p90', 0):.3f}, stdev "
            f"{m.get('ttft_ms_stdev', 0):.3f}), forward alone {m.get('prefill_forward_ms', 0):.3f} ms, TTFT/forward "
            f"{m.get('ttft_over_prefill_forward', 0):.3f}, e2e {m.get('e2e_latency_ms', 0):.2f} ms, prefill {prefill}, "
            f"tokens {digest}")


def main(argv):
    if len(argv) == 2 and argv[0] == "--one":
        print(line(argv[1]))
        return 0
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    folder = os.path.join(argv[0], "records")
    paths = [os.path.join(folder, f) for f in os.listdir(folder) if f.endswith(".json")]
    for p in sorted(paths, key=os.path.getmtime):
        print(line(p))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
