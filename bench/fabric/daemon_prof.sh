#!/bin/bash
# Where mrcd's CPU goes during one transfer: `perf record -g` of the two
# daemons (h0 sends, h7 receives) for one BYTES transfer over the
# unlimited fabric of bench/fabric/daemon.sh, then the top of
# `perf report` by symbol.  Not part of `make bench` (it needs perf, and
# a profile is read, not compared); see bench/results/daemon-cpu.md.
#   MRC_BENCH_DAEMON_PREFIX (mrcE), MRC_BENCH_DAEMON_BYTES (256M),
#   MRC_BENCH_PROF_OUT (perf.data path, default in a temporary directory)
# Root (network namespaces); bounded (60 s transfer); cleans up on exit.
set -u
B=${B:-${1:-build}}
P=${MRC_BENCH_DAEMON_PREFIX:-mrcE}
BYTES=${MRC_BENCH_DAEMON_BYTES:-256M}
T=examples/topologies/fabric-2p-8h.json
F="$B/bin/mrc-fabric -p $P"
say() { echo "[daemon_prof] $*"; }
[ "$(id -u)" = 0 ] || { say "needs root (network namespaces); skipped" >&2; exit 0; }
command -v perf >/dev/null || { say "perf missing (linux-perf); skipped" >&2; exit 0; }
tmp=$(mktemp -d /tmp/mrcbench-prof.XXXXXX)
OUT=${MRC_BENCH_PROF_OUT:-$tmp/perf.data}
declare -A dpid
cleanup() {
	for p in "${dpid[@]}"; do kill "$p" 2>/dev/null; done
	$F down >/dev/null 2>&1
	[ -n "${MRC_BENCH_PROF_OUT:-}" ] || rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
. tests/root/lib.sh   # until_t
$F down >/dev/null 2>&1
$F up "$T" --ecmp >/dev/null || { say "mrc-fabric up failed"; exit 1; }
$B/bin/mrcd --genkey "$tmp/k" >/dev/null || exit 1
for h in h0 h7; do
	mkdir -p "$tmp/$h"
	ip netns exec $P-$h $B/bin/mrcd --topology $T --host $h --socket "$tmp/$h/mrcd.sock" \
		--key_file "$tmp/k" ${MRC_BENCH_MRCD_ARGS:-} --log_level warning 2>>"$tmp/$h.log" &
	dpid[$h]=$!
	until_t 10 test -S "$tmp/$h/mrcctl.sock" || { say "mrcd on $h did not start"; exit 1; }
done
$B/bin/mrc_bulk -S "$tmp/h7/mrcd.sock" -s "$BYTES" -i 7301 recv >"$tmp/r" 2>&1 &
rp=$!
until_t 10 grep -q waiting "$tmp/r" || { say "receiver did not start"; exit 1; }
perf record -F 2000 -g -o "$OUT" -p "${dpid[h0]},${dpid[h7]}" -- \
	timeout 60 $B/bin/mrc_bulk -S "$tmp/h0/mrcd.sock" -s "$BYTES" -i 7301 send 7 2>&1 | tail -n1
timeout 30 tail --pid=$rp -f /dev/null
say "receiver: $(tail -n1 "$tmp/r")"
perf report -i "$OUT" --no-children --sort dso -g none 2>/dev/null | grep "%" | head -n 4
perf report -i "$OUT" --no-children --sort sym -g none 2>/dev/null | grep '%' | head -n 25
