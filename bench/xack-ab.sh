#!/bin/bash
# Cross-QP ACKs (docs/wire.md "Cross-QP ACK", bench/results/xack.md): the
# daemon before and after, on one loopback mrcd, alternated.  Per rep and
# daemon: mrc-nccl-harness -b -z 4096 through the NCCL plugin (NEW's
# plugin and harness for every daemon: the change is the daemon's), its
# 4 KiB round trip and the daemon's engine counters over the whole run
# (200 timed round trips and 2,000 messages 8 in flight), libmrc directly
# (-d, one QP each way) at 4 KiB, and mrc_pingpong 64 B busy-polling.
# Daemons: base = BASE's mrcd, new = NEW's with --xack=1, off = NEW's
# with --xack=0 (the same binary, the change switched off).  Per rep the references:
# the harness over TCP (-T) and 64-byte raw UDP ping-pong (bench/pingpong
# -u, blocking).  Usage:
#   bench/xack-ab.sh BASE_BUILD NEW_BUILD [REPS]     (default 3)
set -u
BASE=${1:?base build}; NEW=${2:?new build}; REPS=${3:-3}
H=$NEW/bin/mrc-nccl-harness; PL=$NEW/lib/libnccl-net-mrc.so
tmp=$(mktemp -d)
dpid=
upid=
cleanup() {
	[ -n "$dpid" ] && kill "$dpid" 2>/dev/null
	[ -n "$upid" ] && kill "$upid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM
$NEW/bin/mrcd --genkey "$tmp/key" >/dev/null
LO_ENV=()
. "$(dirname "$0")/loopback.sh"
harness() {   # ARGS...: rank 0's first table row
	MRC_SOCKET=$tmp/s timeout 120 $H -r 1 -n 2 -R "$tmp/rdv" "$@" >"$tmp/h1" 2>&1 &
	local p=$!
	MRC_SOCKET=$tmp/s timeout 120 $H -r 0 -n 2 -R "$tmp/rdv" "$@" >"$tmp/h0" 2>&1
	wait $p
	grep -m1 -E '^\| [a-z]+ \| [0-9]+ \|' "$tmp/h0" | awk -F'|' '{gsub(/ /, "", $4); print $4}'
}
snap() {
	"$NEW/bin/mrcctl" -s "$tmp/mrcctl.sock" -j stats |
		jq -c '.engine | {tx_data, tx_acks, tx_pb_acks, tx_xacks: (.tx_xacks // 0), ack_delay_expired}'
}
one() {   # LABEL BUILD [XACK]
	local l=$1 b=$2 a c rtt direct pp
	LO_ARGS=()
	[ -n "${3:-}" ] && LO_ARGS=("--xack=$3")
	lo_start "$b"
	for _ in $(seq 200); do [ -S "$tmp/mrcctl.sock" ] && break; sleep 0.05; done
	a=$(snap)
	rtt=$(harness -b -z 4096 -p "$PL")
	c=$(snap)
	direct=$(harness -d -z 4096)
	MRC_SOCKET=$tmp/s timeout 60 "$b/bin/mrc_pingpong" -s 64 -n 2000 server >/dev/null 2>&1 &
	local sp=$!
	pp=$(MRC_SOCKET=$tmp/s timeout 60 "$b/bin/mrc_pingpong" -s 64 -n 2000 client 0 |
		sed -n 's/.*median \([0-9.]*\) us.*/\1/p')
	wait $sp
	lo_stop
	echo "$l plugin_rtt_4k=${rtt:-?} direct_rtt_4k=${direct:-?} pingpong64_busy=${pp:-?}" \
		"$(jq -n -c --argjson a "$a" --argjson b "$c" '$b | with_entries(.value -= $a[.key])')"
}
for i in $(seq "$REPS"); do
	echo "load $(cut -d' ' -f1 /proc/loadavg)"
	if [ $((i % 2)) = 1 ]; then o="base new off"; else o="off new base"; fi
	for v in $o; do
		case $v in
		base) one base "$BASE" ;;
		new) one new "$NEW" 1 ;;
		off) one off "$NEW" 0 ;;
		esac
	done
	echo "tcp plugin_rtt_4k=$(harness -T -z 4096)"
	port=$((20000 + RANDOM % 20000))
	"$NEW/bench/pingpong" -s -u -p $port -n 2000 -b 64 >/dev/null 2>&1 &
	upid=$!
	sleep 0.2   # the server binds; a datagram sent before is resent after 1 s anyway
	echo "udp $("$NEW/bench/pingpong" -c ::1 -u -p $port -n 2000 -b 64)"
	wait $upid; upid=
done
