#!/usr/bin/env python3
"""Tables of bench/results/coll_pregate.md from the raw output of
bench/fabric/coll_pregate.sh or bench/coll_pregate.sh (one or more files):
per variant and misprediction rate the median over runs [min, max] of the
runs' medians, and each variant's layer time over plain's of the same run
and rate.  Usage: coll_pregate_md.py RAW..."""
import re
import statistics
import sys

runs, loads = [], []
for path in sys.argv[1:]:
    cur = None
    for line in open(path):
        m = re.match(r"# run \d+, load before: ([\d.]+)", line) or re.match(r"# load before: ([\d.]+)", line)
        if m:
            loads.append(m.group(1))
        if line.startswith("# mrc-coll-perf pregate"):
            cur = {}
            runs.append(cur)
        f = line.split()
        if cur is not None and len(f) == 6 and f[0] in ("plain", "pregated", "slack"):
            cur[(int(f[1]), f[0])] = [float(x) for x in f[2:]]

def fmt(x):
    return f"{x:,.0f}"

print(f"runs: {len(runs)} load (1-min) at each start: {', '.join(loads)}")
print("| mispredicted | variant | layer us median [min, max] | exposed us median [min,max] | layer / plain | correction rows per rank | correction us |")
print("|---|---|---|---|---|---|---|")
keys = sorted({k for r in runs for k in r}, key=lambda k: (k[0], ["plain", "pregated", "slack"].index(k[1])))
med = {}
for k in keys:
    cols = list(zip(*[r[k] for r in runs if k in r]))
    med[k] = [statistics.median(c) for c in cols]
    lay = f"{fmt(med[k][0])} [{fmt(min(cols[0]))}, {fmt(max(cols[0]))}]"
    exp = f"{fmt(med[k][1])} [{fmt(min(cols[1]))}, {fmt(max(cols[1]))}]"
    ratio = med[k][0] / med[(k[0], 'plain')][0]
    print(f"| {k[0]} % | {k[1]} | {lay} | {exp} | {ratio:.2f} | {fmt(med[k][2])} | {fmt(med[k][3])} |")
print()
print("Per run, layer / plain of the same run and rate: median [min, max]")
print("| mispredicted | pregated | slack |")
print("|---|---|---|")
for mis in sorted({k[0] for k in keys}):
    cells = []
    for v in ("pregated", "slack"):
        rs = [r[(mis, v)][0] / r[(mis, "plain")][0] for r in runs if (mis, v) in r]
        cells.append(f"{statistics.median(rs):.2f} [{min(rs):.2f}, {max(rs):.2f}]" if rs else "-")
    print(f"| {mis} % | {cells[0]} | {cells[1]} |")
