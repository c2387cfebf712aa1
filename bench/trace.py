#!/usr/bin/env python3
"""Where a message's time goes (docs/client.md "Tracing the message path").

    bench/trace.py DIR [--skip MS] [--marks] [--stream] [--names PID=NAME,...]

DIR holds the mrc-trace.* files that MRC_TRACE=DIR made (the clients'
libmrc and NCCL plugin, and mrcd), all from one host (one CLOCK_MONOTONIC).
Events are merged into one timeline.  Two tables:

- each data message's own path: a WRITE_IMM's post, its pickup by mrcd
  (same QP and wr_id), the next datagram sent and received, the next
  RECV_WRITE_IMM completion, the peer client's poll of it, the NCCL
  plugin's test, and the peer's next WRITE_IMM post; medians, means and
  p90 per leg.  Exact while one message is in flight at a time (a
  ping-pong, as mrc_pingpong and mrc-nccl-harness -b's latency phase);
- the raw timeline: every gap between consecutive events, summed per
  transition "process:event -> process:event".  Only for a serial
  exchange does a gap mean time spent in one stage: where two things run
  at once (a CTS beside the data, a separate ACK) it is attribution by
  proximity, a hint.

--stream: instead, the stream that follows a tool's first timed window
(mrc-nccl-harness -b: its 8-in-flight phase after the ping-pong), as
shares of its time: messages between the plugin's isend and the
receiver's data copied out (n_isend -> n_data), clear-to-sends waiting
at the sender (n_cts -> n_isend), and the daemon's silences (gaps over
1 ms between its events, by transition) (bench/results/nccl-bulk.md).

--skip drops the first MS ms (connection set-up); --marks keeps only the
first window a tool marked (mrc-nccl-harness -b marks each size's timed
ping-pongs), --mark-id ID the first one with that id (the harness: the
message size).
"""
import collections, glob, os, statistics, sys

# ring op codes (mrc/ring.h): SQE WRITE_IMM, CQE RECV_WRITE_IMM
SQE_WRITE_IMM, CQE_RECV_WRITE_IMM = 2, 7

PATH = [
    ("post -> daemon pickup (doorbell wake-up or poll)", "d_pick"),
    ("pickup -> datagram sent (engine, packet, sendmmsg or local.c queue)", "d_tx"),
    ("kernel UDP, or local.c in-process (send to receive)", "d_rx"),
    ("datagram -> completion in the CQ (engine, CQE)", "d_wc"),
    ("completion -> seen by the peer client", "c_cqe"),
    ("seen -> NCCL test done (plugin copy-out)", "n_test_done"),
    ("peer's turnaround to its next post (test, isend copy, CTS)", "c_post"),
]

def path_table(ev, role):
    """Each data message's own path: a WRITE_IMM post, its pickup (same QP
    and wr_id), the next send, the next receive, the next RECV_WRITE_IMM
    completion, the peer client's poll of it, the plugin's test, and the
    peer's next WRITE_IMM post.  Exact for one message in flight at a time
    (a ping-pong); other traffic between (CTS, ACKs) is not on the path."""
    import bisect
    by = collections.defaultdict(list)
    for e in ev:
        by[e[1]].append(e)
    ts = {k: [e[0] for e in v] for k, v in by.items()}
    def first(kind, t, ok=lambda e: True):
        v = by.get(kind, [])
        for j in range(bisect.bisect_left(ts.get(kind, []), t), len(v)):
            if ok(v[j]):
                return v[j]
        return None
    posts = [e for e in by.get('c_post', []) if e[4] == SQE_WRITE_IMM]
    ndaemons = len({e[5] for e in ev if e[1].startswith('d_')})
    legs = collections.defaultdict(list)
    n = 0
    for e in posts:
        pick = first('d_pick', e[0], lambda x: x[2] == e[2] and x[3] == e[3])
        # with two daemons (the fabric) the datagram leaves one and
        # arrives at the other
        tx = pick and first('d_tx', pick[0], lambda x: x[5] == pick[5])
        rx = tx and first('d_rx', tx[0], lambda x: x[5] != tx[5] or ndaemons == 1)
        wc = rx and first('d_wc', rx[0], lambda x: x[5] == rx[5] and x[4] == CQE_RECV_WRITE_IMM)
        cq = wc and first('c_cqe', wc[0], lambda x: x[2] == wc[2] and x[4] == CQE_RECV_WRITE_IMM)
        if not cq:
            continue
        done = first('n_test_done', cq[0], lambda x: x[5] == cq[5] and x[4] == 0)
        nxt = first('c_post', (done or cq)[0], lambda x: x[5] == cq[5] and x[4] == SQE_WRITE_IMM)
        chain = [e, pick, tx, rx, wc, cq, done, nxt]
        prev = e
        for (name, _), x in zip(PATH, chain[1:]):
            if x is None:
                continue
            legs[name].append(x[0] - prev[0])
            prev = x
        n += 1
    if not n:
        return
    tot = sum(statistics.mean(v) for v in legs.values())
    print(f"\nOne message's path ({n} WRITE_IMMs followed; a round trip is two of these):\n")
    print("| leg | median us | mean us | p90 us | share (of the means) |\n|---|---:|---:|---:|---:|")
    for name, _ in PATH:
        v = sorted(legs.get(name, []))
        if v:
            m, a = statistics.median(v), statistics.mean(v)
            print(f"| {name} | {m / 1e3:.1f} | {a / 1e3:.1f} | {v[len(v) * 9 // 10] / 1e3:.1f} | "
                  f"{100 * a / tot:.0f} % |")
    print(f"| sum: one way and the peer's turnaround (half a round trip) | | {tot / 1e3:.1f} | | |")

def shares(ev, up, down, t0):
    """Share of the time from t0 with k of up's events not matched by down's."""
    pts = sorted([(e[0], 1) for e in ev if e[1] == up] + [(e[0], -1) for e in ev if e[1] == down])
    o, last, h = 0, t0, collections.Counter()
    for t, d in pts:
        if t > t0:
            h[o] += t - last
            last = t
        o += d
    tot = sum(h.values()) or 1
    return ", ".join(f"{k}: {100 * v / tot:.0f} %" for k, v in sorted(h.items()) if v > tot / 200)


def stream_table(ev, role):
    ends = [e[0] for e in ev if e[1] == 'mark' and e[4] == 2]
    ev = [e for e in ev if not ends or e[0] > ends[0]]
    t0 = min([e[0] for e in ev if e[1] == 'n_isend'] or [ev[0][0]])
    print(f"stream: {sum(e[1] == 'n_isend' for e in ev)} isends, "
          f"{sum(e[1] == 'n_data' for e in ev)} receives landed, over {(ev[-1][0] - t0) / 1e6:.1f} ms")
    late = [e for e in ev if e[0] >= t0]      # the ping-pong's last receive is before
    print(f"- messages sent, not yet copied out by the receiver: {shares(late, 'n_isend', 'n_data', t0)}")
    print(f"- clear-to-sends waiting at the sender: {shares(ev, 'n_cts', 'n_isend', t0)}")
    # the receiver's copy after the message's last WRITE_IMM was seen: the
    # whole message, or with pieces only the last piece
    tail, seen = [], {}
    for e in ev:
        if e[1] == 'c_cqe' and e[4] == CQE_RECV_WRITE_IMM:
            seen[e[5]] = e[0]
        elif e[1] == 'n_data' and e[5] in seen and e[0] >= t0:
            tail.append(e[0] - seen.pop(e[5]))
    if tail:
        print(f"- receiver, last WRITE_IMM seen -> data copied out: median "
              f"{statistics.median(tail) / 1e3:.0f} us, mean {statistics.mean(tail) / 1e3:.0f} us")
    # the sender: a CTS taken -> its message's first data WRITE_IMM posted
    # (the whole copy before it, or with pieces the first piece's)
    head, cts = [], {}
    for e in ev:
        if e[1] == 'n_cts' and e[0] >= t0:
            cts.setdefault(e[5], []).append(e[0])
        elif e[1] == 'c_post' and e[4] == SQE_WRITE_IMM and cts.get(e[5]):
            head.append(e[0] - cts[e[5]].pop(0))
    if head:
        print(f"- sender, CTS taken -> first data WRITE_IMM posted: median "
              f"{statistics.median(head) / 1e3:.0f} us, mean {statistics.mean(head) / 1e3:.0f} us")
    d = [e for e in ev if e[1].startswith('d_') and e[0] >= t0]
    gaps = collections.Counter()
    n = collections.Counter()
    for p, q in zip(d, d[1:]):
        if q[0] - p[0] > 1e6:
            gaps[f"{p[1]} -> {q[1]}"] += q[0] - p[0]
            n[f"{p[1]} -> {q[1]}"] += 1
    tot = d[-1][0] - d[0][0] if d else 1
    print(f"- daemon silent (gaps over 1 ms): {100 * sum(gaps.values()) / tot:.0f} % of its "
          f"{tot / 1e6:.1f} ms, {sum(n.values())} gaps: " +
          ", ".join(f"{k} {n[k]} x, {v / 1e6:.0f} ms" for k, v in gaps.most_common(4)))


def main():
    a = sys.argv[1:]
    if not a:
        print(__doc__)
        sys.exit(2)
    d, skip_ms, names, marks, mark_id, stream = a[0], 0.0, {}, False, None, False
    i = 1
    while i < len(a):
        if a[i] == '--skip':
            skip_ms = float(a[i + 1]); i += 2
        elif a[i] == '--stream':
            stream = True; i += 1
        elif a[i] == '--marks':
            marks = True; i += 1
        elif a[i] == '--mark-id':
            marks, mark_id = True, int(a[i + 1]); i += 2
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
    if stream:
        stream_table(ev, role)
        return
    t0 = ev[0][0] + int(skip_ms * 1e6)
    t1 = ev[-1][0]
    if marks:
        # the first timed window a tool marked (its aux 1 .. aux 2)
        b = [e[0] for e in ev if e[1] == 'mark' and e[4] == 1 and mark_id in (None, e[3])]
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
    path_table(ev, role)
    print("\n| event | count |\n|---|---:|")
    for k, v in sorted(cnt.items()):
        print(f"| {k} | {v} |")

main()
