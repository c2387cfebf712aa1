#!/bin/bash
# The engine's packets/s on one core, this build against another commit's,
# side by side: both bench_engine binaries run alternately, REPS times
# each, 1 QP, so the machine's load affects both alike; the table gives
# medians (min..max) of the repetitions and the ratio now/base.
#   bench/engine_vs.sh BASE [BUILD]   (MRC_BENCH_REPS=3, MRC_BENCH_MB=256)
# BASE is built from git in a temporary worktree (or taken from
# MRC_BENCH_BASE_BUILD, a build folder of it).  Output: Markdown on stdout,
# headed by MRC_BENCH_VS_TITLE, MRC_BENCH_VS_NOTE under the machine line.
# Needs git history (a clone, not an archive); says so and skips otherwise.
set -eu
BASE=$1
B=${2:-build}
REPS=${MRC_BENCH_REPS:-3}
if [ -z "${MRC_BENCH_BASE_BUILD:-}" ] && ! git rev-parse -q --verify "$BASE^{commit}" >/dev/null 2>&1; then
	echo "engine_vs: SKIPPED: commit $BASE not in this checkout (needs git history)"; exit 0
fi
bb=${MRC_BENCH_BASE_BUILD:-}
if [ -z "$bb" ]; then
	wt=$(mktemp -d /tmp/mrc-base.XXXXXX)
	trap 'git worktree remove --force "$wt" >/dev/null 2>&1 || rm -rf "$wt"' EXIT
	git worktree add -q --detach "$wt" "$BASE"
	make -C "$wt" -s MRC_DEPS_DONE=1 build/bench/bench_engine >/dev/null
	bb=$wt/build
fi
make -s "$B/bench/bench_engine" >/dev/null
run() {   # run BIN LABEL: one bench_engine, 1 QP; prints "LABEL case pkts/s Gbit/s"
	MRC_BENCH_QPS=1 MRC_BENCH_RUNS=1 MRC_BENCH_MB=${MRC_BENCH_MB:-256} "$1" |
		awk -v l="$2" -F'|' '$2 ~ /^ *1 *$/ && $3 ~ /%/ {
			gsub(/ /, "", $3); split($4, a, " "); split($5, g, " ");
			p = a[1]; sub(/M$/, "", p); print l, $3, p, g[1] }
			/^\| 256 \|/ { split($3, a, " "); p = a[1]; sub(/M$/, "", p); print l, "mtu256", p, 0 }'
}
res=$(mktemp)
for i in $(seq "$REPS"); do
	run "$bb/bench/bench_engine" base >>"$res"
	run "$B/bench/bench_engine" now >>"$res"
done
echo "${MRC_BENCH_VS_TITLE:-## The engine: $BASE and now}"
echo
echo "Machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $(nproc) CPUs, kernel $(uname -r); $(date -u '+%Y-%m-%d %H:%M UTC'); load average at start $(cut -d' ' -f1 /proc/loadavg)."
echo "bench_engine of both, 1 QP, ${MRC_BENCH_MB:-256} MiB per run, alternated $REPS times; medians (min..max) of the repetitions.${MRC_BENCH_VS_NOTE:+ $MRC_BENCH_VS_NOTE}"
echo
echo "| case | base ($BASE): placed Mpkts/s | now: placed Mpkts/s | now / base |"
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
    a, b = rows[case].get("base", []), rows[case].get("now", [])
    if not a or not b: continue
    f = lambda x: "%.2f (%.2f..%.2f)" % (st.median(x), min(x), max(x))
    print("| %s | %s | %s | %.2f |" % (names[case], f(a), f(b), st.median(b) / st.median(a)))
PY
rm -f "$res"
