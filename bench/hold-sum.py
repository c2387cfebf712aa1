#!/usr/bin/env python3
"""Table of bench/hold-ab.sh's output (stdin): per daemon, each metric's
median [min, max] over the reps, the counters per rep (median), and the
engine timer's lateness buckets summed over the reps."""
import json
import re
import statistics as st
import sys

EDGES = ["<10", "10-50", "50-100", "100-250", "250-500", "500-1000", "1000-2000", ">=2000"]
rows, loads, tcp = {}, [], []
for line in sys.stdin:
    if line.startswith("load "):
        loads.append(line.split()[1])
        continue
    m = re.match(r"(\S+) (.*?)(\{.*\})?$", line.strip())
    if not m:
        continue
    label, kv, js = m.group(1), m.group(2), m.group(3)
    r = rows.setdefault(label, {"m": {}, "c": {}, "late": [0] * len(EDGES)})
    for k, v in re.findall(r"(\w+)=([0-9.?]+)", kv):
        if v != "?":
            (tcp if label == "tcp" else r["m"].setdefault(k, [])).append(float(v))
    if js:
        c = json.loads(js)
        for k, v in c.items():
            if k == "late":
                r["late"] = [a + b for a, b in zip(r["late"], v)]
            elif v is not None:
                r["c"].setdefault(k, []).append(v)


def f(x):
    return f"{st.median(x):.1f} [{min(x):.1f}, {max(x):.1f}]" if x else "-"


print(f"load average at each rep: {', '.join(loads)}\n")
labels = [k for k in rows if k != "tcp"]
metrics = sorted({m for k in labels for m in rows[k]["m"]})
print("| metric (us) | " + " | ".join(labels) + " |")
print("|---|" + "---:|" * len(labels))
for m in metrics:
    print(f"| {m} | " + " | ".join(f(rows[k]["m"].get(m, [])) for k in labels) + " |")
if tcp:
    print(f"| TCP 4 KiB (harness -T) | {f(tcp)} |" + " |" * (len(labels) - 1))
print("\n| counter per run (median) | " + " | ".join(labels) + " |")
print("|---|" + "---:|" * len(labels))
for c in ["tx_data", "tx_acks", "tx_pb_acks", "expired", "fires", "early", "rearms"]:
    print(f"| {c} | " + " | ".join(
        f"{st.median(rows[k]['c'][c]):.0f}" if rows[k]["c"].get(c) else "-" for k in labels) + " |")
print("\n| timer fires by lateness (us), all reps | " + " | ".join(labels) + " |")
print("|---|" + "---:|" * len(labels))
for i, e in enumerate(EDGES):
    print(f"| {e} | " + " | ".join(
        f"{rows[k]['late'][i]} ({100 * rows[k]['late'][i] / max(1, sum(rows[k]['late'])):.0f} %)"
        for k in labels) + " |")
