#!/bin/bash
# The "authentication off" baseline of issue 12's benchmark.  In mrc it
# cannot be switched off (tokens are compared on every packet, CTRL is
# sealed), so the baseline is the engine as it was before authentication:
# commit cb92cd3 (wire v1: 52-byte data header, no tokens), built from git
# in a temporary worktree.  Both bench_engine binaries run alternately,
# REPS times each, 1 QP, so the machine's load affects both alike; the
# table gives medians of the per-repetition medians and the ratio now/v1.
#   bench/auth_off.sh [BUILD]   (MRC_BENCH_REPS=3, MRC_BENCH_MB=256)
# Writes bench/results/auth_off.md.  Needs git history (a clone, not an
# archive); says so and skips otherwise.
set -eu
B=${1:-build}
BASE=cb92cd3
REPS=${MRC_BENCH_REPS:-3}
OUT=bench/results/auth_off.md
if ! git rev-parse -q --verify "$BASE^{commit}" >/dev/null 2>&1; then
	echo "auth_off: SKIPPED: commit $BASE not in this checkout (needs git history)"; exit 0
fi
wt=$(mktemp -d /tmp/mrc-v1.XXXXXX)
trap 'git worktree remove --force "$wt" >/dev/null 2>&1 || rm -rf "$wt"' EXIT
git worktree add -q --detach "$wt" "$BASE"
make -C "$wt" -s MRC_DEPS_DONE=1 build/bench/bench_engine >/dev/null
make -s "$B/bench/bench_engine" >/dev/null
run() {   # run BIN LABEL: one bench_engine, 1 QP; prints "LABEL loss pkts/s Gbit/s"
	MRC_BENCH_QPS=1 MRC_BENCH_RUNS=1 MRC_BENCH_MB=${MRC_BENCH_MB:-256} "$1" |
		awk -v l="$2" -F'|' '$2 ~ /^ *1 *$/ && $3 ~ /%/ {
			gsub(/ /, "", $3); split($4, a, " "); split($5, g, " ");
			p = a[1]; sub(/M$/, "", p); print l, $3, p, g[1] }
			/^\| 256 \|/ { split($3, a, " "); p = a[1]; sub(/M$/, "", p); print l, "mtu256", p, 0 }'
}
res=$(mktemp)
for i in $(seq "$REPS"); do
	run "$wt/build/bench/bench_engine" v1 >>"$res"
	run "$B/bench/bench_engine" v2 >>"$res"
done
{
	echo "## Authentication off vs on: the engine before authentication (wire v1, $BASE) and now (wire v2, tokens)"
	echo
	echo "Machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $(nproc) CPUs, kernel $(uname -r); $(date -u '+%Y-%m-%d %H:%M UTC'); load average at start $(cut -d' ' -f1 /proc/loadavg)."
	echo "bench_engine of both commits, 1 QP, ${MRC_BENCH_MB:-256} MiB per run, alternated $REPS times; medians (min..max) of the repetitions.  'now' also includes the other engine changes since $BASE (liveness, RNR, fence), so the ratio bounds the cost of authentication from above."
	echo
	echo "| case | v1, no auth: placed Mpkts/s | v2, tokens: placed Mpkts/s | now / v1 |"
	echo "|---|---:|---:|---:|"
	python3 - "$res" <<'PY'
import sys, statistics as st
rows = {}
for line in open(sys.argv[1]):
    l, case, p, g = line.split()
    rows.setdefault(case, {}).setdefault(l, []).append(float(p))
names = {"0%": "4 KiB MTU, no loss", "1%": "4 KiB MTU, 1% loss", "mtu256": "256 B MTU (headers dominate)"}
for case in ["0%", "1%", "mtu256"]:
    if case not in rows: continue
    a, b = rows[case].get("v1", []), rows[case].get("v2", [])
    if not a or not b: continue
    f = lambda x: "%.2f (%.2f..%.2f)" % (st.median(x), min(x), max(x))
    print("| %s | %s | %s | %.2f |" % (names[case], f(a), f(b), st.median(b) / st.median(a)))
PY
} >"$OUT"
rm -f "$res"
cat "$OUT"
