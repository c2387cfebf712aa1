#!/bin/bash
# Pre-gated against plain MoE dispatch on one loopback mrcd (docs/coll.md
# "Pre-gated dispatch"): NRANKS ranks of mrc-coll-perf -C pregate as
# processes, the six variants alternated inside the run; prints the load
# average before and after.  Usage: bench/coll_pregate.sh BUILD [NRANKS]
# [-G ...] [-n steps] [-w warm-up]; MRC_COLL_SHM as the caller sets it.
set -eu
B=${1:-build}; shift || true
N=${1:-4}; shift || true
tmp=$(mktemp -d /tmp/mrc-pregate-XXXXXX)
mrcd_pid=
cleanup() {
	[ -n "$mrcd_pid" ] && kill "$mrcd_pid" 2>/dev/null && wait "$mrcd_pid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
"$B/bin/mrcd" --genkey "$tmp/key" >/dev/null
"$B/bin/mrcd" --socket="$tmp/s" --port=$((20000 + RANDOM % 20000)) --key_file="$tmp/key" \
	--log_level=warning --max_clients=64 2>"$tmp/mrcd.log" &
mrcd_pid=$!
for _ in $(seq 100); do [ -S "$tmp/s" ] && break; sleep 0.1; done   # startup poll, bounded
echo "# load before: $(cat /proc/loadavg)"
sid=$((1000 + RANDOM % 50000))
pids=()
for r in $(seq 0 $((N - 1))); do
	MRC_COLL_SIZE=$N MRC_COLL_RANK=$r "$B/bin/mrc-coll-perf" -S "$tmp/s" -H 0 -s $sid \
		-C pregate "$@" >"$tmp/r$r.out" 2>&1 &
	pids+=($!)
done
rc=0
for p in "${pids[@]}"; do wait "$p" || rc=1; done
cat "$tmp/r0.out"
[ $rc = 0 ] || cat "$tmp"/r*.out "$tmp/mrcd.log" >&2
echo "# load after: $(cat /proc/loadavg)"
exit $rc
