#!/bin/sh
# Integration (root): 1 GiB WRITE transfers h0 -> h7 over a real 2-plane
# SRv6 fabric in network namespaces, with the daemon core (mrc-xfer), under
# each fault; every byte is verified (CRC-32C of both buffers) and each
# fault's effect on the paths is asserted from the client's JSON report.
# Faults are injected when the client reports 20% progress, so they always
# land mid-transfer.  MRC_DATAPATH (default udp) and MRC_DATAPATH_ARGS pick
# the datapath (docs/datapaths.md); MRC_DATAPATH_H7 another one for the
# receiver (interoperation: e.g. dpdk frames to kernel UDP).  Cleans up on
# every exit.  MRC_XFER_PREFIX names its namespaces (default mrcX).
# MRC_XFER_BYTES sizes the transfers: 1G, or 256M under MRC_ROOT_QUICK=1
# (make check-fresh: every fault still lands at 20% and is asserted).
set -eu
B=${1:-build}
P=${MRC_XFER_PREFIX:-mrcX}   # namespaces: $P-h0.., unique per concurrent run
T=examples/topologies/fabric-2p-8h.json
if [ "${MRC_ROOT_QUICK:-0}" = 1 ]; then BYTES=${MRC_XFER_BYTES:-256M}; else BYTES=${MRC_XFER_BYTES:-1G}; fi
F="$B/bin/mrc-fabric -p $P"
X="$B/bin/mrc-xfer --topology $T"
tmp=$(mktemp -d)
$B/bin/mrcd --genkey "$tmp/cluster.key" >/dev/null
X="$X --key-file $tmp/cluster.key --datapath ${MRC_DATAPATH:-udp}"
fails=0
cleanup() {
	[ -n "${spid:-}" ] && kill "$spid" 2>/dev/null || true
	$F down >/dev/null 2>&1 || true
	rm -rf "$tmp"
}
# A signal ends the script (its EXIT trap cleans up); a trap that only
# cleaned up let it run on after TERM, holding the root lock.
trap cleanup EXIT
trap 'exit 143' INT TERM
$F down >/dev/null 2>&1 || true
$F up "$T" >/dev/null

# run NAME FAULT-COMMAND JQ-ASSERTION
run() {
	name=$1; fault=$2; check=$3
	sid=$((sid + 1))
	ip netns exec $P-h7 timeout 300 $X ${MRC_DATAPATH_ARGS:+--datapath-args "$MRC_DATAPATH_ARGS"} ${MRC_DATAPATH_H7:+--datapath "$MRC_DATAPATH_H7"} --host h7 --listen --sid $sid --bytes "$BYTES" >"$tmp/s" 2>"$tmp/se" &
	spid=$!
	rm -f "$tmp/fifo"; mkfifo "$tmp/fifo"
	ip netns exec $P-h0 timeout 300 $X ${MRC_DATAPATH_ARGS:+--datapath-args "$MRC_DATAPATH_ARGS"} --host h0 --connect h7 --sid $sid --bytes "$BYTES" \
		--progress >"$tmp/fifo" 2>"$tmp/ce" &
	cpid=$!
	: >"$tmp/c"
	injected=0
	while IFS= read -r line; do
		echo "$line" >>"$tmp/c"
		case "$line" in
		*'"progress":20'*)
			# The fault must really be injected: mrc-fabric's status.
			# shellcheck disable=SC2086
			if [ -z "$fault" ] || $F $fault >/dev/null; then injected=1
			else echo "  'mrc-fabric $fault' failed"; injected=2; fi ;;
		esac
	done <"$tmp/fifo"
	crc=0; wait $cpid || crc=$?
	wait $spid || true
	spid=
	ok=1
	[ "$crc" = 0 ] || { echo "  client exit $crc: $(cat "$tmp/ce")"; ok=0; }
	case $injected in
	1) ;;
	2) ok=0 ;;
	*) echo "  never reached 20% progress"; ok=0 ;;
	esac
	sc=$(jq -r 'select(.crc32c) | .crc32c' "$tmp/s")
	cc=$(jq -r 'select(.crc32c) | .crc32c' "$tmp/c")
	[ -n "$cc" ] && [ "$sc" = "$cc" ] || { echo "  CRC mismatch: sent $cc received $sc"; ok=0; }
	if [ $ok = 1 ] && ! jq -e -s "map(select(.paths_lost_pkts != null)) | .[0] | $check" "$tmp/c" >/dev/null; then
		echo "  assertion failed: $check on $(jq -c 'select(.paths_lost_pkts != null)' "$tmp/c")"
		ok=0
	fi
	summary=$(jq -r 'select(.goodput_mbit) | "\(.goodput_mbit) Mbit/s, longest stall \(.longest_stall_ms) ms"' "$tmp/c")
	paths=$(jq -c 'select(.paths_lost_pkts != null)' "$tmp/c")
	if [ $ok = 1 ]; then
		echo "ok   $name: $BYTES verified, $summary, $paths"
	else
		echo "FAIL $name"; fails=$((fails + 1))
	fi
	$F restore >/dev/null || { echo "FAIL $name: mrc-fabric restore failed"; fails=$((fails + 1)); }
}

sid=0
# h0 and h7 sit on different leaves: EVs 0-3 are (plane, spine) paths,
# EVs 4-5 the one-hop paths they do not have (DENIED from the start).
run "no fault"                      ""                   '.paths_denied == 2 and (.planes_tx_pkts | min) > 0'
run "1% silent loss on spine link"  "drop p0s0-p0l3 1"   '.retx > 0 and .paths_lost_pkts > 0'
run "spine blackholed"              "fail p0s1 --silent" '.ev_state[1] == "ASSUMED_BAD" and .ev_state[0] != "DENIED"'
run "plane NIC down"                "fail h0-p1l0"       '.ev_state[2] == "DENIED" and .ev_state[3] == "DENIED" and .planes_tx_pkts[0] > .planes_tx_pkts[1]'
run "trimming on a spine link"      "trim p1s0-p1l3 5"   '.trims > 0'
[ $fails = 0 ] || { echo "xfer: $fails scenario(s) failed"; exit 1; }
echo "xfer: all scenarios passed"
