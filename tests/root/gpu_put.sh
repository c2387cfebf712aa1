#!/bin/bash
# Integration (root): the GPU put flow (examples/gpu_put_flow.h, on host
# threads: mrc_gpu_put) between h0 and h7 of a 2-plane SRv6 fabric in
# network namespaces, a mrcd each: both sides put, signal and wait each
# round and check every byte the peer put (the program exits non-zero on
# the first differing byte); one lane, then 4 lanes (QPs with a producer
# thread each) at once.  Bounded in time; cleans up on every exit.
set -u
B=${1:-build}
P=mrcG
T=examples/topologies/fabric-2p-8h.json
F="$B/bin/mrc-fabric -p $P"
tmp=$(mktemp -d)
declare -A dpid
fails=0
cleanup() {
	[ -n "${spid:-}" ] && kill "$spid" 2>/dev/null
	for p in "${dpid[@]}"; do kill "$p" 2>/dev/null; done
	$F down >/dev/null 2>&1
	rm -rf "$tmp"
}
# A signal ends the script (its EXIT trap cleans up); a trap that only
# cleaned up let it run on after TERM, holding the root lock.
trap cleanup EXIT
trap 'exit 143' INT TERM
. tests/root/lib.sh
$F down >/dev/null 2>&1
$F up "$T" >/dev/null || { echo "mrc-fabric up failed"; exit 1; }
jq '.topology' /run/mrc-fabric/$P/state.json >"$tmp/topo.json"
start_mrcd h0
start_mrcd h7

# run NAME SIZE ROUNDS [LANES]
run() {
	local name=$1 size=$2 rounds=$3 lanes=${4:-1}
	sid=$((sid + 1))
	ip netns exec $P-h7 timeout 120 $B/bin/mrc_gpu_put -S "$(sock h7)" -s "$size" -n "$rounds" \
		-t "$lanes" -i $sid server >"$tmp/s" 2>&1 &
	spid=$!
	until_t 10 grep -q serving "$tmp/s" || { bad "$name: server did not start: $(cat "$tmp/s")"; return; }
	local crc=0
	ip netns exec $P-h0 timeout 120 $B/bin/mrc_gpu_put -S "$(sock h0)" -s "$size" -n "$rounds" \
		-t "$lanes" -i $sid client 7 >"$tmp/c" 2>&1 || crc=$?
	local src=0
	wait $spid || src=$?
	spid=
	if [ $crc = 0 ] && [ $src = 0 ] && grep -q "verified byte for byte" "$tmp/c" &&
	   grep -q "verified byte for byte" "$tmp/s"; then
		ok "$name: h0: $(sed -n 's/^mrc_gpu_put: //p' "$tmp/c"); h7: $(sed -n 's/^mrc_gpu_put: //p' "$tmp/s" | tail -1)"
	else
		bad "$name: client exit $crc: $(cat "$tmp/c"); server exit $src: $(cat "$tmp/s")"
	fi
}

sid=7100
run "small puts" 4k 500
run "1 MiB puts" 1M 50
run "odd size" 100003 20
run "4 lanes" 64k 100 4
[ $fails = 0 ]
