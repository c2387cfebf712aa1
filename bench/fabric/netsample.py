#!/usr/bin/env python3
"""Every host's NIC bytes over time, to see whether a fabric run keeps the
links busy or idles while someone waits (issue 32's all-to-all).

    netsample.py OUT STOPFILE NAME:PID ...   sample until STOPFILE exists
    netsample.py --table OUT [BIN_S] [MBIT]  per-host tx per bin, % of MBIT

Sampling reads /proc/PID/net/dev (the namespace of PID: a host's mrcd) of
every host every 5 ms, summing the non-loopback interfaces; OUT gets one
line per host and sample: monotonic time, name, tx bytes, rx bytes.  The
table (bins of BIN_S seconds, default 0.1) gives each host's transmit rate
as a share of MBIT (default 400: two planes of 200 Mbit/s), and the mean
share over the bins where any host sent.  bench/fabric/libfabric_mpistat.sh
runs the sampler with NETSAMPLE=OUT."""
import collections
import os
import sys
import time


def sample(out, stop, hosts):
    fds = [(n, open('/proc/%s/net/dev' % p, 'rb', buffering=0)) for n, p in hosts]
    rows = []
    while not os.path.exists(stop):
        t = time.monotonic()
        for n, f in fds:
            f.seek(0)
            tx = rx = 0
            for line in f.read().decode().splitlines()[2:]:
                name, rest = line.split(':', 1)
                if name.strip() == 'lo':
                    continue
                v = rest.split()
                rx += int(v[0])
                tx += int(v[8])
            rows.append((t, n, tx, rx))
        time.sleep(0.005)
    with open(out, 'w') as o:
        for r in rows:
            o.write('%.6f %s %d %d\n' % r)


def table(path, binw, mbit):
    rows = [line.split() for line in open(path)]
    t0 = float(rows[0][0])
    last, hosts = {}, []
    acc = collections.defaultdict(lambda: collections.defaultdict(int))
    for t, n, tx, _ in rows:
        tx = int(tx)
        if n not in hosts:
            hosts.append(n)
        if n in last:
            acc[int((float(t) - t0) / binw)][n] += tx - last[n]
        last[n] = tx
    cap = mbit * 1e6 / 8 * binw
    print('t (s)  ' + ' '.join('%5s' % h for h in hosts) + '   (tx, %% of %g Mbit/s)' % mbit)
    shares = []
    for b in sorted(acc):
        v = [acc[b][h] / cap * 100 for h in hosts]
        if not sum(v):
            continue
        shares.append(sum(v) / len(v))
        print('%6.2f ' % (b * binw) + ' '.join('%5.0f' % x for x in v))
    if shares:
        print('mean over %d bins with traffic: %.1f %%' % (len(shares), sum(shares) / len(shares)))


if __name__ == '__main__':
    if sys.argv[1] == '--table':
        table(sys.argv[2], float(sys.argv[3]) if len(sys.argv) > 3 else 0.1,
              float(sys.argv[4]) if len(sys.argv) > 4 else 400)
    else:
        sample(sys.argv[1], sys.argv[2], [a.split(':') for a in sys.argv[3:]])
