#!/bin/bash
# The engine timer (docs/client.md "The engine timer", bench/results/hold.md):
# one build's mrcd in several settings, alternated per rep (the order
# reversed every other rep), one loopback mrcd each: MODES (default
# "libev tfd tfd-xack tfd-h250 tfd-h250-xack"): libev = engine_timerfd 0
# (libev's ev_timer, as before), tfd = the timerfd, -xack = xack 1,
# -h250 = ack_delay_us 250 (the engine's 32 us otherwise).  Per daemon: the NCCL plugin's 4 KiB round
# trip (mrc-nccl-harness -b -z 4096: 200 timed, then 2,000 messages 8 in
# flight), mrc_pingpong 64 B sleeping (-w) and busy-polling (2,000 each),
# and the daemon's counters over all of it: engine timer fires, timerfd
# re-arms, early fires, lateness buckets (daemon.timer_late_us), ACK packets,
# ACKs on data, held ACKs that expired.  Usage:
#   bench/hold-ab.sh BUILD [REPS]            (default 5)
# Prints one line per daemon and rep (and the load); bench/hold-sum.py
# makes the table.
set -u
B=${1:?build}; REPS=${2:-5}
H=$B/bin/mrc-nccl-harness; PL=$B/lib/libnccl-net-mrc.so
tmp=$(mktemp -d)
dpid=
trap '[ -n "$dpid" ] && kill "$dpid" 2>/dev/null; rm -rf "$tmp"' EXIT INT TERM
$B/bin/mrcd --genkey "$tmp/key" >/dev/null
LO_ENV=()
. "$(dirname "$0")/loopback.sh"
harness() {   # ARGS...: the round trip (us) in rank 0's first table row
	local r p=()
	for r in 1 0; do
		MRC_SOCKET=$tmp/s timeout 120 "$H" -r $r -n 2 -R "$tmp/rdv" "$@" >"$tmp/h$r" 2>&1 &
		p+=($!)
	done
	wait "${p[@]}"
	awk -F'|' '/^\| [a-z]+ \| [0-9]+ \|/ { gsub(/ /, "", $4); print $4; exit }' "$tmp/h0"
}
snap() {
	"$B/bin/mrcctl" -s "$tmp/mrcctl.sock" -j stats | jq -c '{fires: .daemon.timer_fires,
		rearms: .daemon.timer_rearms, early: .daemon.timer_early, late: (.daemon.timer_late_us as $l | if $l then [$l.lt10, $l.lt50, $l.lt100, $l.lt250,
			$l.lt500, $l.lt1000, $l.lt2000, $l.ge2000] else .daemon.timer_late end),
		tx_acks: .engine.tx_acks, tx_pb_acks: .engine.tx_pb_acks,
		expired: .engine.ack_delay_expired, tx_data: .engine.tx_data}'
}
pp() {   # ARGS...: mrc_pingpong's median (us)
	MRC_SOCKET=$tmp/s timeout 60 "$B/bin/mrc_pingpong" "$@" -s 64 -n 2000 server >/dev/null 2>&1 &
	local sp=$!
	MRC_SOCKET=$tmp/s timeout 60 "$B/bin/mrc_pingpong" "$@" -s 64 -n 2000 client 0 |
		sed -n 's/.*median \([0-9.]*\) us.*/\1/p'
	wait $sp
}
one() {   # LABEL TIMERFD XACK [ACK_DELAY_US]
	local a c rtt ps pb
	LO_ARGS=("--engine_timerfd=$2" "--xack=$3" "--ack_delay_us=${4:-32}")
	lo_start "$B"
	for _ in $(seq 200); do [ -S "$tmp/mrcctl.sock" ] && break; sleep 0.05; done
	a=$(snap)
	rtt=$(harness -b -z 4096 -p "$PL")
	ps=$(pp -w)
	pb=$(pp)
	c=$(snap)
	lo_stop
	echo "$1 plugin_rtt_4k=${rtt:-?} pingpong64_sleep=${ps:-?} pingpong64_busy=${pb:-?}" \
		"$(jq -n -c --argjson a "$a" --argjson b "$c" \
		'$b | with_entries(.key as $k | .value |= (if type == "array"
			then [range(length) as $i | .[$i] - $a[$k][$i]] else . - $a[$k] end))')"
}
for i in $(seq "$REPS"); do
	echo "load $(cut -d' ' -f1 /proc/loadavg)"
	o=${MODES:-"libev tfd tfd-xack tfd-h250 tfd-h250-xack"}
	[ $((i % 2)) = 0 ] && o=$(echo "$o" | tr ' ' '\n' | tac | tr '\n' ' ')
	for v in $o; do
		case $v in
		libev) one "$v" 0 0 ;;
		libev-xack) one "$v" 0 1 ;;
		tfd) one "$v" 1 0 ;;
		tfd-xack) one "$v" 1 1 ;;
		tfd-h250) one "$v" 1 0 250 ;;
		tfd-h250-xack) one "$v" 1 1 250 ;;
		libev-h250) one "$v" 0 0 250 ;;
		esac
	done
	echo "tcp plugin_rtt_4k=$(harness -T -z 4096)"
done
