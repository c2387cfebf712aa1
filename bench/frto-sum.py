# Summary of bench/frto-ab.sh output: medians and [min, max] per build.
# Usage: python3 bench/frto-sum.py LOG
import re,json,sys,statistics as S
rows={'base':[], 'new':[]}; loads=[]
for l in open(sys.argv[1]):
    if l.startswith('load'): loads.append(float(l.split()[1])); continue
    m=re.match(r'(base|new) \|(.*)\| (\{.*\})',l)
    if not m: continue
    parts=[p.strip() for p in m.group(2).split('|')]
    j=json.loads(m.group(3))
    rows[m.group(1)].append((j['rto'],j['retx'],j['data'],float(parts[2]),float(parts[3]),float(parts[4])))
def f(v): return f"{S.median(v):g} [{min(v):g}, {max(v):g}]"
print("| build | runs | RTOs | retransmissions | retx % of data | median us | p99 us | Gbit/s |")
print("|---|---|---|---|---|---|---|---|")
for k,v in rows.items():
    print(f"| {k} | {len(v)} | {f([x[0] for x in v])} | {f([x[1] for x in v])} | {f([round(100*x[1]/x[2],2) for x in v])} | {f([x[3] for x in v])} | {f([x[4] for x in v])} | {f([x[5] for x in v])} |")
print('load average (1 min) per rep:', f(loads))
