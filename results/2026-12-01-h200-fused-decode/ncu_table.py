"""Nsight Compute's CSV (--metrics gpu__time_duration.sum --csv --print-units base) as a table: each kernel in launch
order with its duration in microseconds, then the sum per kernel name."""
import collections
import csv
import re
import sys

rows = []
with open(sys.argv[1], newline="") as f:
    lines = [l for l in f if l.startswith('"')]
for r in csv.DictReader(lines):
    if r.get("Metric Name") != "gpu__time_duration.sum":
        continue
    name = re.sub(r"\(.*", "", r["Kernel Name"]).replace("void ", "")
    name = re.sub(r"<.*", lambda m: "<" + m.group(0)[1:40] + ">", name)
    rows.append((name, float(r["Metric Value"].replace(",", "")) / 1e3))
for name, us in rows:
    print(f"{us:8.2f}  {name}")
total = collections.defaultdict(lambda: [0, 0.0])
for name, us in rows:
    total[name][0] += 1
    total[name][1] += us
print("\nper kernel: count, total us, mean us")
for name, (n, us) in sorted(total.items(), key=lambda kv: -kv[1][1]):
    print(f"{n:4d} {us:9.2f} {us / n:8.2f}  {name}")
print(f"sum {sum(us for _, us in rows):.2f} us over {len(rows)} kernels")
