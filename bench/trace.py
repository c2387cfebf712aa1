#!/usr/bin/env python3
"""Where a message's time goes (docs/client.md "Tracing the message path").

    bench/trace.py DIR [--skip N] [--names PID=NAME,...]

DIR holds the mrc-trace.* files that MRC_TRACE=DIR made (the clients'
libmrc and NCCL plugin, and mrcd), all from one host (one CLOCK_MONOTONIC).
Events are merged into one timeline; for a serial exchange (a ping-pong:
one message in flight at a time) the gap between two consecutive events is
time spent in the stage between them, so the table sums the gaps per
transition "process:stage -> process:stage" and gives each one's share of
the timeline.  --skip drops the first N ms (connection set-up, warm-up);
--marks keeps only the first window a tool marked (mrc-nccl-harness -b
marks each size's timed ping-pongs).
"""
import collections, glob, os, statistics, sys

def main():
    a = sys.argv[1:]
    if not a:
        print(__doc__)
        sys.exit(2)
    d, skip_ms, names, marks = a[0], 0.0, {}, False
    i = 1
    while i < len(a):
        if a[i] == '--skip':
            skip_ms = float(a[i + 1]); i += 2
        elif a[i] == '--marks':
            marks = True; i += 1
        elif a[i] == '--names':
            for kv in a[i + 1].split(','):
                k, v = kv.split('='); names[k] = v
            i += 2
        else:
            sys.exit(f"unknown argument {a[i]}")
    ev = []
    for f in glob.glob(os.path.join(d, 'mrc-trace.*')):
        for line in open(f):
            if line.startswith('#'):
                print(f"{f}: {line.strip()}", file=sys.stderr)
                continue
            ts, st, qpn, ident, aux, pid = line.split()
            ev.append((int(ts), st, int(qpn), int(ident), int(aux), pid))
    if not ev:
        sys.exit(f"no events in {d}")
    ev.sort()
    # A process is named by its role: mrcd (d_ stages), else client pids in
    # order of appearance (A, B, ...) unless --names says otherwise.
    role = {}
    for e in ev:
        if e[1].startswith('d_'):
            role.setdefault(e[5], None)
    nd = 0
    for pid in list(role):
        role[pid] = names.get(pid, 'mrcd' if nd == 0 else f'mrcd{nd}')
        nd += 1
    nc = 0
    for e in ev:
        if e[5] not in role:
            role[e[5]] = names.get(e[5], chr(ord('A') + nc))
            nc += 1
    t0 = ev[0][0] + int(skip_ms * 1e6)
    t1 = ev[-1][0]
    if marks:
        # the first timed window a tool marked (its aux 1 .. aux 2)
        b = [e[0] for e in ev if e[1] == 'mark' and e[4] == 1]
        if b:
            t0 = b[0]
            t1 = min([e[0] for e in ev if e[1] == 'mark' and e[4] == 2 and e[0] > t0] or [t1])
    ev = [e for e in ev if t0 <= e[0] <= t1 and e[1] != 'mark']
    gaps = collections.defaultdict(list)
    for p, n in zip(ev, ev[1:]):
        k = f"{role[p[5]]}:{p[1]} -> {role[n[5]]}:{n[1]}"
        gaps[k].append(n[0] - p[0])
    total = ev[-1][0] - ev[0][0]
    cnt = collections.Counter(f"{role[e[5]]}:{e[1]}" for e in ev)
    print(f"{len(ev)} events over {total / 1e6:.1f} ms")
    print("\n| transition (stage between two events) | count | total ms | share | median us | p99 us |")
    print("|---|---:|---:|---:|---:|---:|")
    for k, v in sorted(gaps.items(), key=lambda kv: -sum(kv[1])):
        s = sum(v)
        if s < total * 0.005:
            continue
        v.sort()
        print(f"| {k} | {len(v)} | {s / 1e6:.2f} | {100 * s / total:.1f} % | "
              f"{statistics.median(v) / 1e3:.1f} | {v[min(len(v) - 1, len(v) * 99 // 100)] / 1e3:.1f} |")
    print("\n| event | count |\n|---|---:|")
    for k, v in sorted(cnt.items()):
        print(f"| {k} | {v} |")

main()
