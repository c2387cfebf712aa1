#!/usr/bin/env python3
"""Where a rendezvous message waits: joins the FI_MRC_TRACE files of a run
(docs/libfabric.md "The MPI all-to-all"), sender's and receiver's events
on the sender's request id, and prints each step's median, p90 and max
over the messages, the chunk waits, and who ran the steps.

  libfabric_trace.py DIR            # DIR/fitrace.HOST.PID, one per rank
  libfabric_trace.py DIR --host H   # also host H's events in time order
"""
import argparse
import collections
import glob
import statistics

EV = {1: 'post', 2: 'rpost', 3: 'rts_m', 4: 'rts_u', 5: 'utaken', 6: 'cts_out',
      7: 'cts_wait', 8: 'cts_in', 9: 'write', 10: 'tx_wait', 11: 'rz_in',
      12: 'rx_done', 13: 'tx_done'}
SENDER = (1, 8, 9, 10, 13)       # host is the sender, peer the receiver
RECEIVER = (3, 4, 5, 6, 7, 11, 12)


def load(d):
    ev = []
    for f in glob.glob(d + '/fitrace.*'):
        with open(f) as fh:
            ev += [tuple(map(int, line.split())) for line in fh if line.strip()]
    ev.sort()
    return ev


def stats(v):
    v = sorted(v)
    return len(v), statistics.median(v), v[len(v) * 9 // 10], v[-1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('dir')
    ap.add_argument('--host', type=int)
    a = ap.parse_args()
    ev = load(a.dir)
    if not ev:
        raise SystemExit('no fitrace.* in ' + a.dir)
    t0 = ev[0][0]
    msgs = collections.defaultdict(dict)
    who = collections.Counter()
    for ns, e, host, peer, rid, _ln, prog in ev:
        if e in SENDER:
            key = (host, peer, rid)
        elif e in RECEIVER:
            key = (peer, host, rid)
        else:
            continue
        msgs[key].setdefault(EV[e], ns)
        if e in (3, 4, 8, 11, 13):
            who[prog] += 1
    steps = collections.defaultdict(list)
    for m in msgs.values():
        if 'post' not in m or 'rx_done' not in m:
            continue
        rts = m.get('rts_m', m.get('rts_u'))
        grant_from = m.get('utaken', rts) if 'rts_u' in m else rts
        pairs = [('send posted -> RTS at the receiver', m['post'], rts),
                 ('RTS unexpected -> receive posted', m.get('rts_u'), m.get('utaken')),
                 ('RTS matched -> CTS sent', grant_from, m.get('cts_out')),
                 ('CTS sent -> at the sender', m.get('cts_out'), m.get('cts_in')),
                 ('CTS at the sender -> written', m.get('cts_in'), m.get('write')),
                 ('written -> RZDATA at the receiver', m.get('write'), m.get('rz_in')),
                 ('written -> send complete', m.get('write'), m.get('tx_done')),
                 ('send posted -> receive complete', m['post'], m['rx_done'])]
        for name, x, y in pairs:
            if x is not None and y is not None:
                steps[name].append((y - x) / 1e6)
    print(f"messages {len(msgs)}, RTS unexpected "
          f"{sum(1 for m in msgs.values() if 'rts_u' in m)}")
    for name, v in steps.items():
        n, med, p90, mx = stats(v)
        print(f"{name:36s} n={n:4d} median {med:8.2f} p90 {p90:8.2f} max {mx:8.2f} ms")
    for kind, nxt, name in ((7, 6, 'grants waiting for a receive chunk'),
                            (10, 9, 'writes waiting for a send chunk')):
        pend, w = {}, []
        for ns, e, host, peer, rid, _ln, _p in ev:
            k = (host, peer, rid)
            if e == kind and k not in pend:
                pend[k] = ns
            elif e == nxt and k in pend:
                w.append((ns - pend.pop(k)) / 1e6)
        if w:
            n, med, p90, mx = stats(w)
            print(f"{name:36s} n={n:4d} median {med:8.2f} p90 {p90:8.2f} max {mx:8.2f} ms")
    print(f"steps run by the progress thread {who[1]}, by the application {who[0]}")
    if a.host is not None:
        for ns, e, host, peer, rid, ln, prog in ev:
            if host == a.host:
                print(f"{(ns - t0) / 1e6:9.2f} h{host} {EV[e]:8s} peer {peer} id {rid} "
                      f"len {ln} {'thread' if prog else 'app'}")


if __name__ == '__main__':
    main()
