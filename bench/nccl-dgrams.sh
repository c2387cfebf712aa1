#!/bin/bash
# Datagrams and the daemon's send time per message of the NCCL plugin's
# 4 KiB ping-pong (bench/results/nccl-compact.md): one loopback mrcd (of
# BUILD), mrc-nccl-harness -b -z 4096 (BUILD's) through each plugin in
# turn, alternated, REPS times; per run the daemon's engine counters
# (data packets, ACK packets, piggybacked ACKs, held ACKs that expired)
# over the whole harness run (200 timed round trips and 2,000 messages 8
# in flight), the round trip's median, and, with MRC_TRACE, the traced
# ping-pong's "pickup -> datagram sent" median (bench/trace.py).  Then
# libmrc directly (-d, one QP each way) for reference.  Usage:
#   bench/nccl-dgrams.sh BUILD BASE_PLUGIN NEW_PLUGIN [REPS]   (default 3)
set -u
B=${1:?build dir}; BASEP=${2:?base plugin}; NEWP=${3:?new plugin}; REPS=${4:-3}
tmp=$(mktemp -d)
dpid=
cleanup() { [ -n "$dpid" ] && kill "$dpid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT INT TERM
$B/bin/mrcd --genkey "$tmp/key" >/dev/null
LO_ENV=("MRC_TRACE=$tmp/tr")
. "$(dirname "$0")/loopback.sh"
snap() {
	"$B/bin/mrcctl" -s "$tmp/mrcctl.sock" -j stats |
		jq -c '.engine | {tx_data, tx_acks, tx_pb_acks, ack_delay_expired}'
}
run() {   # LABEL ARGS...: one harness run, its row and the counters' deltas
	local l=$1 a b p
	shift
	rm -rf "$tmp/tr"
	mkdir "$tmp/tr"
	lo_start "$B"
	for _ in $(seq 200); do [ -S "$tmp/mrcctl.sock" ] && break; sleep 0.05; done
	a=$(snap)
	MRC_TRACE=$tmp/tr MRC_SOCKET=$tmp/s timeout 120 "$B/bin/mrc-nccl-harness" -r 1 -n 2 \
		-R "$tmp/rdv" "$@" >"$tmp/h1" 2>&1 &
	p=$!
	MRC_TRACE=$tmp/tr MRC_SOCKET=$tmp/s timeout 120 "$B/bin/mrc-nccl-harness" -r 0 -n 2 \
		-R "$tmp/rdv" "$@" >"$tmp/h0" 2>&1
	wait $p
	b=$(snap)
	lo_stop
	local rtt tx
	rtt=$(grep -E '^\| [a-z]+ \| 4096 \|' "$tmp/h0" | awk -F'|' '{gsub(/ /, "", $4); print $4}')
	tx=$(python3 bench/trace.py "$tmp/tr" --marks 2>/dev/null |
		sed -n 's/^| pickup -> datagram sent[^|]*| \([0-9.]*\) |.*/\1/p')
	echo "$l rtt_us=${rtt:-?} pickup_to_sent_us=${tx:-?} $(jq -n -c --argjson a "$a" --argjson b "$b" \
		'$b | with_entries(.value -= $a[.key])')"
}
for i in $(seq "$REPS"); do
	echo "load $(cut -d' ' -f1 /proc/loadavg)"
	if [ $((i % 2)) = 1 ]; then o="base new"; else o="new base"; fi
	for v in $o; do
		pl=$BASEP
		[ "$v" = new ] && pl=$NEWP
		run "$v" -b -z 4096 -p "$pl"
	done
	run direct -d -z 4096
done
