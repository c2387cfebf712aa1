#!/bin/bash
# Integration (root): connections between two clients of the same mrcd in
# topology mode (several ranks per host), on a 2-plane SRv6 fabric in
# network namespaces, mrcd on h0..h3.
#   - mrc_bulk recv and send on h1's one socket: MRC_SELF_BYTES (256M; 64M
#     under MRC_ROOT_QUICK=1, make check-fresh's short run)
#     verified by hash; the datagrams went in-process (h1's daemon counts
#     local_tx, none dropped), fewer than one per 4 KiB (local_mtu: 8 KiB
#     packets between clients of one mrcd), and no path of h1 to itself failed
#     (ASSUMED_BAD) or was denied;
#   - the same with h1's plane-1 NIC taken down mid-transfer: still
#     verified; h1's plane-1 paths to h0 become DENIED (the fault took
#     effect) while none of its paths to itself does;
#   - all-reduce, all-to-all and broadcast with 8 ranks on 4 hosts, 2 per
#     host (ranks 2h and 2h+1 on host h), every type, sum, at 0, 1, 9,
#     65537 and 1048576 elements, every element of every rank checked.
# Bounded in time; cleans up on every exit.  Run it only under
# `flock /tmp/mrc-root.lock`.
set -u
B=${1:-build}
P=${MRC_SELF_PREFIX:-mrcS}
T=examples/topologies/fabric-2p-8h.json
F="$B/bin/mrc-fabric -p $P"
if [ "${MRC_ROOT_QUICK:-0}" = 1 ]; then SIZE=${MRC_SELF_BYTES:-64M}; else SIZE=${MRC_SELF_BYTES:-256M}; fi
PERF=$B/bin/mrc-coll-perf
tmp=$(mktemp -d)
declare -A dpid
ranks=()
fails=0
cleanup() {
	for p in "${ranks[@]}"; do kill -9 "$p" 2>/dev/null; done
	for p in "${dpid[@]}"; do kill "$p" 2>/dev/null; done
	$F down >/dev/null 2>&1
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM   # through the EXIT trap
. tests/root/lib.sh

$F down >/dev/null 2>&1
$F up "$T" >/dev/null || { echo "mrc-fabric up failed"; exit 1; }
jq '.topology' /run/mrc-fabric/$P/state.json >"$tmp/topo.json"
for h in h0 h1 h2 h3; do start_mrcd $h; done

local_tx() { ctl h1 -j stats | jq -r ".daemon.local_$1"; }
# paths_of H: h1's paths to H as "PLANE/SPINE STATE" lines.
paths_of() { ctl h1 -j paths "$1" | jq -r '.paths[] | "\(.plane)/\(.spine) \(.state)"'; }
recv_ready() { grep -q "waiting for a sender" "$tmp/r"; }
placed() { ctl h1 -j status 2>/dev/null | jq -r '.totals.bytes_placed // 0'; }

# self NAME FAULT: one verified transfer between two clients of h1's
# daemon, FAULT (mrc-fabric command, or "") injected at 20%.
sid=7700
self() {
	local name=$1 fault=$2 tx0 drop0 total base injected=0
	sid=$((sid + 1))
	tx0=$(local_tx tx); drop0=$(local_tx drop)
	total=$(numfmt --from=iec "$SIZE"); base=$(placed)
	$B/bin/mrc_bulk -S "$(sock h1)" -s "$SIZE" -i $sid recv >"$tmp/r" 2>&1 &
	local r=$!; ranks=($r)
	until_t 10 recv_ready || bad "$name: receiver never listened: $(tail -n2 "$tmp/r")"
	timeout 300 $B/bin/mrc_bulk -S "$(sock h1)" -s "$SIZE" -i $sid send 1 >"$tmp/s" 2>&1 &
	local s=$!; ranks+=($s)
	if [ -n "$fault" ]; then
		if until_t 120 eval '[ $(( $(placed) - base )) -ge $(( total / 5 )) ]'; then
			# shellcheck disable=SC2086
			$F $fault >/dev/null && injected=1 || bad "$name: 'mrc-fabric $fault' failed"
		else
			bad "$name: never reached 20%"
		fi
	fi
	wait $s; local rc_s=$?
	timeout 30 tail --pid=$r -f /dev/null; wait $r; local rc_r=$?
	ranks=()
	local tx=$(( $(local_tx tx) - tx0 )) drop=$(( $(local_tx drop) - drop0 ))
	if [ $rc_s = 0 ] && [ $rc_r = 0 ] && [ $tx -gt $(( total / 9000 )) ] &&
	   [ $tx -lt $(( total / 4096 )) ]; then
		ok "$name: $SIZE from h1 to h1 verified ($(tail -n1 "$tmp/r")); $tx datagrams in-process, $drop dropped"
	else
		bad "$name: sender exit $rc_s, receiver exit $rc_r, $tx datagrams in-process"; tail -n3 "$tmp/s" "$tmp/r"
	fi
	local selfp; selfp=$(paths_of h1)
	if [ -n "$selfp" ] && ! grep -qE 'ASSUMED_BAD|DENIED' <<<"$selfp"; then
		ok "$name: no path of h1 to itself failed or denied ($(awk '{print $2}' <<<"$selfp" | sort | uniq -c | tr -s ' ' | tr '\n' ';'))"
	else
		bad "$name: h1's paths to itself: $(tr '\n' ';' <<<"$selfp")"
	fi
	if [ $injected = 1 ]; then
		if [ "$(paths_of h0 | grep -c '^1/.* DENIED')" -ge 1 ]; then
			ok "$name: fault took effect (h1's plane-1 paths to h0 DENIED)"
		else
			bad "$name: fault had no visible effect: $(paths_of h0 | tr '\n' ';')"
		fi
		$F restore >/dev/null || bad "$name: mrc-fabric restore failed"
	fi
}
self "two clients of h1's mrcd" ""
# h0 must be a peer of h1 for its paths to show: the all-reduce below
# would make it one too late, so a short transfer h1 -> h0 first.
sid=$((sid + 1))
$B/bin/mrc_bulk -S "$(sock h0)" -s 1M -i $sid recv >"$tmp/r0" 2>&1 & ranks=($!)
until_t 10 eval 'grep -q "waiting for a sender" "$tmp/r0"'
timeout 60 $B/bin/mrc_bulk -S "$(sock h1)" -s 1M -i $sid send 0 >/dev/null 2>&1 || bad "h1 -> h0 1M failed"
wait "${ranks[0]}"; ranks=()
self "two clients of h1's mrcd, h1's plane-1 NIC down mid-transfer" "fail h1-p1l0"

# ---- collectives with 2 ranks per host ---------------------------------
# launch NAME ARGS...: rank r on host h(r/2), outputs in $tmp/NAME.RANK.
launch() {
	local name=$1 r; shift
	sid=$((sid + 1)); ranks=()
	for r in 0 1 2 3 4 5 6 7; do
		MRC_COLL_SIZE=8 MRC_COLL_RANK=$r ip netns exec $P-h$((r / 2)) $PERF -S "$(sock h$((r / 2)))" \
			-H 0 -s $sid -T 30000 "$@" >"$tmp/$name.$r" 2>&1 &
		ranks+=($!)
	done
}
for c in all_reduce alltoall broadcast; do
	launch "$c" -C $c -d all -o sum -N 0,1,9,65537,1048576 -n 1 -w 0 -c 2
	finish "$c" 300; rc=$?
	got=$(grep -c '^ ' "$tmp/$c.0")
	if [ $rc = 0 ] && [ "$got" = 30 ] && grep -q "Out of bounds values : 0 OK" "$tmp/$c.0"; then
		ok "$c, 8 ranks on 4 hosts (2 per host): every type at 0, 1, 9, 65537, 1048576 elements, 30 runs, 0 wrong"
	else
		bad "$c, 2 ranks per host: $got of 30 runs; $(tail -n3 "$tmp/$c.0" | tr '\n' ' ') $(grep -h mrc-coll-perf "$tmp"/$c.* | head -n2)"
	fi
done

echo "self: $fails failure(s)"
[ $fails = 0 ]
