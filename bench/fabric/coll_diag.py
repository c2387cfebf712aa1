#!/usr/bin/env python3
"""Where a collective sweep's time went: reads the snapshots that
bench/fabric/coll.sh saves with MRC_BENCH_COLL_DIAG=DIR (before and after
each sweep) and prints the differences: per host the engine's counters
(data, retransmits, RTOs, losses, path state changes, probes); per pair of
hosts and per path (plane, spine; spine -1 is the one-hop path of hosts on
one leaf) its state, packets, losses and probes sent/answered; per leaf of
planes 0 and 1 the bytes and drops of every port's qdisc (ports are named
after the node at the other end: p0s1 is the uplink to spine 1).

usage: coll_diag.py DIR [COLL.FAULT ...]   (default: every sweep in DIR)
"""
import glob
import json
import os
import sys

KEYS = ["tx_data", "tx_retx", "tx_acks", "tx_probes", "rto_fires",
        "loss_detected", "ev_changes", "rx_dup", "rx_ecn"]


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def hosts(d, tag):
    return sorted({int(p.rsplit(".h", 1)[1]) for p in glob.glob(f"{d}/{tag}.1.stats.h*")})


def engine(d, tag, hs):
    for h in hs:
        a, b = load(f"{d}/{tag}.0.stats.h{h}"), load(f"{d}/{tag}.1.stats.h{h}")
        if a and b:
            ea, eb = a["engine"], b["engine"]
            print(f"h{h}", " ".join(f"{k}={eb[k] - ea[k]}" for k in KEYS))


def paths(d, tag, hs):
    for h in hs:
        for p in hs:
            a, b = load(f"{d}/{tag}.0.paths.h{h}.h{p}"), load(f"{d}/{tag}.1.paths.h{h}.h{p}")
            if p == h or not a or not b:
                continue
            row = []
            for pa, pb in zip(a["paths"], b["paths"]):
                tx = pb["tx_pkts"] - pa["tx_pkts"]
                pr = pb["probes_sent"] - pa["probes_sent"]
                if not pb["exists"] or (tx < 1000 and pr < 100):
                    continue   # the direction of the ACKs only
                row.append(f"p{pb['plane']}s{pb['spine']} {pb['state'][:4]} tx={tx} "
                           f"lost={pb['lost'] - pa['lost']} "
                           f"probes={pr}/{pb['probes_ok'] - pa['probes_ok']}")
            if row:
                print(f"  h{h}->h{p}", " | ".join(row))


def qdiscs(d, tag):
    for f in sorted(glob.glob(f"{d}/{tag}.1.tc.*")):
        leaf = f.rsplit(".", 1)[1]
        a, b = load(f"{d}/{tag}.0.tc.{leaf}") or [], load(f)
        if not b:
            continue
        before = {q["dev"]: q for q in a if q.get("kind") == "tbf"}
        out = []
        for q in b:
            if q.get("kind") != "tbf":
                continue
            o = before.get(q["dev"], {})
            out.append(f"{q['dev']} {(q['bytes'] - o.get('bytes', 0)) / 1e6:.1f} MB"
                       f" drop {q['drops'] - o.get('drops', 0)}")
        print(f"  {leaf}:", ", ".join(out))


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    d = sys.argv[1]
    tags = sys.argv[2:] or sorted({os.path.basename(p).rsplit(".", 3)[0]
                                   for p in glob.glob(f"{d}/*.1.stats.h*")})
    for tag in tags:
        print(f"== {tag}")
        hs = hosts(d, tag)
        engine(d, tag, hs)
        paths(d, tag, hs)
        qdiscs(d, tag)


if __name__ == "__main__":
    main()
