"""Nsight Compute's CSV (run_ncu.sh: duration, DRAM bytes read, L2 hit rate per kernel) as a table in launch order,
then per kernel (name and template arguments): count, mean duration, mean DRAM MB, mean L2 hit rate. Usage:
ncu_table.py FILE.csv"""
import collections
import csv
import re
import sys

kernels = collections.OrderedDict()  # ID -> {name, metrics}
with open(sys.argv[1], newline="") as f:
    lines = [l for l in f if l.startswith('"')]
for r in csv.DictReader(lines):
    k = kernels.setdefault(r["ID"], {"name": r["Kernel Name"], "m": {}})
    k["m"][r["Metric Name"]] = float(r["Metric Value"].replace(",", "") or 0)


def short(name):
    name = name.replace("void ", "")
    name = re.sub(r"^.*::", "", re.sub(r"\(.*", "", name.split("<")[0])) + (
        "<" + name.split("<", 1)[1].split(">")[0][:40] + ">" if "<" in name else "")
    return name.replace("__nv_bfloat16", "bf16")


rows = []
for k in kernels.values():
    m = k["m"]
    rows.append((short(k["name"]), m.get("gpu__time_duration.sum", 0) / 1e3, m.get("dram__bytes_read.sum", 0) / 1e6,
                 m.get("lts__t_sector_hit_rate.pct", 0)))
print(f"{'us':>8} {'DRAM MB':>8} {'L2 hit %':>8}  kernel")
for name, us, mb, hit in rows:
    print(f"{us:8.2f} {mb:8.2f} {hit:8.1f}  {name}")
total = collections.defaultdict(list)
for name, us, mb, hit in rows:
    total[name].append((us, mb, hit))
print("\nper kernel: count, total us, mean us, mean DRAM MB, mean L2 hit %")
for name, v in sorted(total.items(), key=lambda kv: -sum(x[0] for x in kv[1])):
    n = len(v)
    print(f"{n:4d} {sum(x[0] for x in v):9.2f} {sum(x[0] for x in v) / n:8.2f} {sum(x[1] for x in v) / n:8.2f} "
          f"{sum(x[2] for x in v) / n:6.1f}  {name}")
print(f"sum {sum(r[1] for r in rows):.2f} us, {sum(r[2] for r in rows):.1f} MB read from DRAM, over {len(rows)} kernels")
