#!/bin/bash
# Integration (root): the NCCL net plugin (libnccl-net-mrc.so) driven by
# mrc-nccl-harness through mrcd on a 2-plane SRv6 fabric in network
# namespaces (docs/nccl.md):
#   - 4 ranks on hosts of 4 leaves, 3 comms each way per peer: connect/
#     accept loops, NULL requests, grouped tagged receives larger than
#     their sends, closes in flight, every byte verified
#   - 2 ranks h0 <-> h7 with spine p0s1 silently blackholed once 20% of
#     the rounds (60; 20 under MRC_ROOT_QUICK=1, make check-fresh's short
#     run) are done: every message still delivered and verified, and h0's
#     path through p0s1 is seen losing packets (the fault happened)
# The harness ranks reach their daemons through the Unix sockets (no need
# to enter the namespaces); rendezvous is a Unix socket in $tmp.
# Bounded in time; cleans up on every exit.
set -u
B=${1:-build}
P=mrcN
T=examples/topologies/fabric-2p-8h.json
F="$B/bin/mrc-fabric -p $P"
H="$B/bin/mrc-nccl-harness"
ROUNDS=60   # of the blackhole run
[ "${MRC_ROOT_QUICK:-0}" = 1 ] && ROUNDS=20
tmp=$(mktemp -d)
declare -A dpid
pids=()
fails=0
cleanup() {
	for p in "${pids[@]}" "${dpid[@]}"; do kill "$p" 2>/dev/null; done
	$F down >/dev/null 2>&1
	rm -rf "$tmp"
}
# A signal ends the script (its EXIT trap cleans up); a trap that only
# cleaned up let it run on after TERM, holding the root lock.
trap cleanup EXIT
trap 'exit 143' INT TERM
. tests/root/lib.sh
export LD_LIBRARY_PATH="$PWD/$B/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
cp "$T" "$tmp/topo.json"   # start_mrcd (lib.sh) reads it there
$F down >/dev/null 2>&1
$F up "$T" >/dev/null || { echo "mrc-fabric up failed"; exit 1; }
for h in h0 h2 h5 h7; do start_mrcd $h; done

# ranks NAME ARGS HOST...: one harness rank per host; rank 0's output in
# $tmp/out0; waits for all, each bounded to 240 s.
ranks() {
	local name=$1 args=$2; shift 2
	local n=$# r=0 rc=0
	pids=()
	for h in "$@"; do
		MRC_SOCKET=$(sock $h) timeout 240 $H -r $r -n $n -R "$tmp/rdv" $args >"$tmp/out$r" 2>&1 &
		pids+=($!)
		r=$((r + 1))
	done
}
wait_ranks() {
	local name=$1 rc=0 r=0
	for p in "${pids[@]}"; do
		wait "$p" || { rc=1; echo "  rank $r: $(tail -n2 "$tmp/out$r")"; }
		r=$((r + 1))
	done
	pids=()
	return $rc
}

ranks "4 ranks" "-c 3 -k 10 -s 1048576" h0 h2 h5 h7
if wait_ranks "4 ranks"; then
	ok "4 ranks (h0 h2 h5 h7), 3 comms each way per peer: $(grep -h '^rank 0 ok' "$tmp/out0")"
else
	bad "4 ranks, 3 comms each way per peer"
fi

# h0 (leaf 0) reaches h7 (leaf 3) through plane P, spine S: path "P/S".
paths_snap() { paths_map h0 h7; }
past20() { grep -qE '^progress ([2-9][0-9]|100)$' "$tmp/out0"; }
name="h0 <-> h7, spine p0s1 blackholed mid-run"
before=$(paths_snap)
ranks "$name" "-c 2 -k $ROUNDS -s 4194304 -P" h0 h7
injected=0
if until_t 120 past20; then
	at=$(grep -E '^progress' "$tmp/out0" | tail -n1)
	if $F fail p0s1 --silent >/dev/null; then injected=1; else bad "$name: 'mrc-fabric fail p0s1 --silent' failed"; fi
	[ "$at" != "progress 100" ] || bad "$name: the run ended before the fault"
else
	bad "$name: never reached 20% ($(tail -n2 "$tmp/out0"))"
fi
if wait_ranks "$name"; then
	ok "$name (at ${at:-?}): $(grep -h '^rank 0 ok' "$tmp/out0")"
else
	bad "$name"
fi
if [ $injected = 1 ]; then
	after=$(paths_snap)
	check='.a["0/1"].state == "ASSUMED_BAD" and .a["0/1"].lost > (.b["0/1"].lost // 0)'
	if jq -e -n --argjson b "$before" --argjson a "$after" "{b: \$b, a: \$a} | $check" >/dev/null; then
		ok "$name: the fault took effect (path 0/1: $(jq -c -n --argjson a "$after" '$a["0/1"] | {state, lost}'))"
	else
		bad "$name: no visible effect on path 0/1: $(jq -c -n --argjson a "$after" '$a["0/1"]')"
	fi
fi
$F restore >/dev/null || bad "mrc-fabric restore failed"

[ $fails = 0 ] || { echo "nccl: $fails check(s) failed"; exit 1; }
echo "nccl: all checks passed"
