#!/usr/bin/env python3
"""Replays mrc_coll_straggler's retransmission rule (coll/strag_name.c,
name_loss) on the QP counts bench/fabric/strag.sh keeps (raw/strag-qp.txt,
one line per rank and QP at each verdict), to check a rule against what a
run saw without rerunning it.  Prints, per part, how many steps named the
lossy host on plane 0 (network rounds: from the raw file's "inject"
lines), someone else, or nobody.

    bench/fabric/strag_qp.py raw/strag-qp.txt raw/strag.jsonl [MIN]
"""
import collections
import json
import sys

MIN = int(sys.argv[3]) if len(sys.argv) > 3 else 15   # STRAG_RETX_MIN
NUM, DEN, VOTES = 3, 2, 2


def load(path):
    steps = collections.OrderedDict()
    for line in open(path):
        f = line.split()
        # TAG rank R call C qp to Y plane P retx X pkts K
        tag, r, call, y, p, retx = f[0], int(f[2]), int(f[4]), int(f[7]), int(f[9]), int(f[11])
        steps.setdefault((tag, call), collections.defaultdict(list))[r].append((y, p, retx))
    return steps


def summary(qps):
    """Own count on the lossiest plane, lossiest QP (peer, plane, count), next count."""
    per, worst, second = collections.Counter(), (-1, -1, 0), 0
    for y, p, retx in qps:
        per[p] += retx
        if retx > worst[2]:
            second, worst = worst[2], (y, p, retx)
        elif retx > second:
            second = retx
    return max(per.values(), default=0), worst, second


def name(ranks):
    n = len(ranks)
    s = {r: summary(ranks[r]) for r in ranks}
    score = {r: s[r][0] for r in ranks}
    votes = collections.Counter()
    for r in ranks:
        (y, _, w), second = s[r][1], s[r][2]
        if w > second and y in score and y != r:
            score[y] += w
            votes[y] += 1
    x = max(score, key=score.get)
    nxt = max([v for r, v in score.items() if r != x], default=0)
    if score[x] < MIN or DEN * score[x] < NUM * nxt or votes[x] < VOTES or 2 * votes[x] < n - 1:
        return None, None
    best = (s[x][1][2], s[x][1][1]) if s[x][1][2] > s[x][2] else (0, None)
    for r in ranks:
        (y, p, w), second = s[r][1], s[r][2]
        if r != x and y == x and w > second and w > best[0]:
            best = (w, p)
    return x, best[1]


def main():
    lossy = {}
    for line in open(sys.argv[2]):
        o = json.loads(line)
        if o.get('part') == 'inject':
            lossy['net%d' % o['round']] = o['lossy_host']
    out = collections.Counter()
    for (tag, _), ranks in load(sys.argv[1]).items():
        part = 'network' if tag.startswith('net') else tag
        x, plane = name(ranks)
        if x is None:
            out[(part, 'nobody')] += 1
        elif tag in lossy and x == lossy[tag] and plane == 0:
            out[(part, 'the lossy host, plane 0')] += 1
        else:
            out[(part, 'another')] += 1
    for (part, what), k in sorted(out.items()):
        print('%s: %s in %d steps' % (part, what, k))


if __name__ == '__main__':
    main()
