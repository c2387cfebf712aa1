#!/usr/bin/env python3
"""Where an urgent ping-pong's time goes while a bulk transfer runs
(bench/fabric/tclass.sh with MRC_BENCH_TRACE; docs/step.md "Urgent
dispatch").

    bench/trace_urgent.py DIR [--phase K[,K...]] [--split LEN]

DIR holds the mrc-trace.* files of both daemons (h0, h7) and the two
ping-pong clients only (the bulk clients are not traced, so every client
post is the ping-pong's).  The fabric's hosts are network namespaces of
one kernel: one CLOCK_MONOTONIC.  Per WRITE_IMM the ping-pong posts, four
legs, each matched by QP (never by "the next datagram", which under bulk
is a bulk one):

  post -> pickup      the client's SQE until its daemon takes it (rings
                      polled, doorbell, or the loop busy elsewhere);
  pickup -> peer WC   the engine's send, the fabric, the peer daemon's
                      receive queue and engine, up to the completion of
                      the peer client's QP (the other daemon's d_wc);
  WC -> peer sees it  CQ doorbell and the peer client's wake-up;
  peer's turnaround   to the peer's next post.

--phase K keeps the K-th ping-pong run only (0: the first; -1: the
last; a list: those), a run being one pair of client processes
(tclass.sh runs, per rep, idle first, then inside the bulk: 1,3,5 are
three reps' runs inside the bulk).  Printed: per leg the median, p90, p99 and mean (us), and for the slowest
2 % of messages (by the sum) the share of each leg.

--split LEN also splits "pickup -> peer WC" by the udp datapath's own
records (d_tx: a send call, d_rx: a receive call, each naming its first
datagram's length) of a datagram of LEN bytes, the ping-pong's data
packet (136 for 64-byte messages): pickup -> the sender's send call
(d_tx on the picking daemon), the call -> the receiver's read (d_rx on
the completing daemon: the kernel's path, the fabric and the wait in
the receive queue), the read -> the completion.  Messages whose
datagram is not first in those calls are left out of that table.
"""
import collections, glob, os, sys, bisect

SQE_WRITE_IMM, CQE_RECV_WRITE_IMM = 2, 7
LEGS = ["post -> pickup", "pickup -> peer WC", "WC -> peer sees it", "peer's turnaround"]

def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(len(v) * p))]

def main():
    args, opt = sys.argv[1:], {}
    if not args:
        sys.exit(__doc__)
    while len(args) > 1:
        if len(args) < 3 or args[1] not in ('--phase', '--split') or args[1] in opt:
            sys.exit(__doc__)
        opt[args[1]] = args[2]
        del args[1:3]
    phase = [int(k) for k in opt['--phase'].split(',')] if '--phase' in opt else None
    split = int(opt['--split']) if '--split' in opt else None
    ev = []
    for f in glob.glob(os.path.join(sys.argv[1], 'mrc-trace.*')):
        for line in open(f):
            if line.startswith('#'):
                continue
            ts, st, qpn, ident, aux, pid = line.split()
            ev.append((int(ts), st, int(qpn), int(ident), int(aux), pid))
    ev.sort()
    by = collections.defaultdict(list)
    for e in ev:
        by[e[1]].append(e)
    ts = {k: [e[0] for e in v] for k, v in by.items()}
    def first(kind, t, ok, until=None):
        v = by.get(kind, [])
        for j in range(bisect.bisect_left(ts.get(kind, []), t), len(v)):
            if until is not None and v[j][0] > until:
                return None
            if ok(v[j]):
                return v[j]
        return None
    # client processes in order of their first event, in pairs
    cl = []
    for e in ev:
        if not e[1].startswith('d_') and e[5] not in cl:
            cl.append(e[5])
    keep = set(cl)
    if phase is not None:
        pairs = [cl[i:i + 2] for i in range(0, len(cl), 2)]
        keep = {pid for k in phase for pid in pairs[k]}
    qps = {e[2] for e in by.get('c_post', [])} | {e[2] for e in by.get('c_cqe', [])}
    rows, parts = [], []
    for p in (e for e in by.get('c_post', []) if e[4] == SQE_WRITE_IMM and e[5] in keep):
        pick = first('d_pick', p[0], lambda x: x[2] == p[2] and x[3] == p[3])
        wc = pick and first('d_wc', pick[0], lambda x: x[5] != pick[5] and x[2] in qps
                            and x[4] == CQE_RECV_WRITE_IMM)
        cq = wc and first('c_cqe', wc[0], lambda x: x[2] == wc[2] and x[4] == CQE_RECV_WRITE_IMM)
        nxt = cq and first('c_post', cq[0], lambda x: x[5] == cq[5] and x[4] == SQE_WRITE_IMM)
        if not nxt:
            continue
        rows.append([pick[0] - p[0], wc[0] - pick[0], cq[0] - wc[0], nxt[0] - cq[0]])
        if split:
            tx = first('d_tx', pick[0], lambda x: x[5] == pick[5] and x[3] == split, wc[0])
            rx = tx and first('d_rx', tx[0], lambda x: x[5] == wc[5] and x[3] == split, wc[0])
            if rx:
                parts.append([tx[0] - pick[0], rx[0] - tx[0], wc[0] - rx[0]])
    if not rows:
        sys.exit(f"no ping-pong messages followed in {sys.argv[1]}")
    print(f"{len(rows)} messages followed (a round trip is two)\n")
    print("| leg | median us | p90 us | p99 us | mean us |\n|---|---:|---:|---:|---:|")
    for i, name in enumerate(LEGS):
        v = [r[i] for r in rows]
        print(f"| {name} | {pct(v, .5) / 1e3:.1f} | {pct(v, .9) / 1e3:.1f} | {pct(v, .99) / 1e3:.1f} | "
              f"{sum(v) / len(v) / 1e3:.1f} |")
    if split:
        print(f"\n\"pickup -> peer WC\" split ({len(parts)} of {len(rows)} messages):\n")
        print("| part | median us | p90 us | p99 us |\n|---|---:|---:|---:|")
        for i, name in enumerate(["pickup -> send call", "send call -> peer's read", "peer's read -> WC"]):
            v = [r[i] for r in parts]
            if v:
                print(f"| {name} | {pct(v, .5) / 1e3:.1f} | {pct(v, .9) / 1e3:.1f} | {pct(v, .99) / 1e3:.1f} |")
    rows.sort(key=sum)
    tail = rows[-max(1, len(rows) // 50):]
    tot = sum(map(sum, tail))
    print(f"\nslowest {len(tail)} (sum >= {sum(tail[0]) / 1e3:.1f} us): " +
          ", ".join(f"{name} {100 * sum(r[i] for r in tail) / tot:.0f} %" for i, name in enumerate(LEGS)))

main()
