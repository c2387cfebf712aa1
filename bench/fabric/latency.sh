#!/bin/sh
# Scenario 4, small messages: ping-pong of MSG bytes between h0 and h7 (one
# spine path apart), N round trips per run.  mrc: mrc-xfer --pingpong
# (WRITE_WITH_IMM each way, through the daemon core's event loop); TCP and
# UDP: bench/pingpong (blocking sockets, TCP_NODELAY) over the ECMP
# baseline addresses, the same leaf-spine-leaf hops.  Messages/s counts both
# directions, the same way for all three.
# MRC_BENCH_BASE_XFER=PATH adds contender mrc-base: another mrc-xfer build
# (e.g. the commit before a change), run in the same reps, side by side.
# udp-srv6: the same UDP ping-pong over the SRv6 uSID path of plane 0,
# spine 0 (pingpong -P), i.e. the switches' seg6local forwarding that mrc's
# packets take instead of the ECMP routes: what the fabric itself costs.
SCEN=latency
RATE=${MRC_BENCH_RATE:-200}
MSG=${MRC_BENCH_MSG:-64}
N=${MRC_BENCH_PINGS:-5000}
. bench/fabric/lib.sh
start_raw
fab_up
PP="$B/bench/pingpong"
[ -x "$PP" ] || { echo "bench/fabric/latency: $PP missing (make bench builds it)" >&2; exit 1; }
say "$N round trips of $MSG bytes h0 <-> h7"
r=1
while [ $r -le "$REPS" ]; do
	o="$TMP/run"
	for c in mrc ${MRC_BENCH_BASE_XFER:+mrc-base} tcp udp udp-srv6; do
		rm -f "$o"
		case $c in
		mrc) mrc_run 0 7 "$MSG" "$o" --pingpong "$N" --sid $r || say "mrc rep $r FAILED: $(cat "$o.err")" ;;
		mrc-base)
			X0=$X; X="$MRC_BENCH_BASE_XFER ${X#* }"
			mrc_run 0 7 "$MSG" "$o" --pingpong "$N" --sid $((r + 100)) || say "mrc-base rep $r FAILED: $(cat "$o.err")"
			X=$X0 ;;
		udp-srv6)
			bg ip netns exec $P-h7 timeout 60 "$PP" -s -P "$($F -t "$TOPO" path h7 h0 --plane 0 --spine 0)" -p 7000 -n "$N" -b "$MSG" 2>"$o.srv"
			sp=$BGPID
			ip netns exec $P-h0 timeout 60 "$PP" -P "$($F -t "$TOPO" path h0 h7 --plane 0 --spine 0)" -p 7000 -n "$N" -b "$MSG" >"$o" 2>"$o.err" || say "$c rep $r FAILED: $(cat "$o.err")"
			reap $sp 5 || true ;;
		*)
			u=""; [ $c = udp ] && u=-u
			bg ip netns exec $P-h7 timeout 60 "$PP" -s $u -p 7000 -n "$N" -b "$MSG" 2>"$o.srv"
			sp=$BGPID
			ip netns exec $P-h0 timeout 60 "$PP" -c "$(baddr 7 0)" $u -p 7000 -n "$N" -b "$MSG" >"$o" 2>"$o.err" || say "$c rep $r FAILED: $(cat "$o.err")"
			reap $sp 5 || true ;;
		esac
		l=$(jq -c 'select(.rtt_us_p50) | {p50: .rtt_us_p50, p99: .rtt_us_p99, min: .rtt_us_min, mps: .msgs_per_s} + (if .tx_acks then {acks: .tx_acks, pb_acks: .tx_pb_acks} else {} end)' "$o" 2>/dev/null || true)
		[ -n "$l" ] || l='{"p50":null,"p99":null,"min":null,"mps":null}'
		emit "{\"scenario\":\"latency\",\"contender\":\"$c\",\"rep\":$r,\"size\":$MSG,\"n\":$N,\"r\":$l}"
		say "$c rep $r/$REPS: $l"
	done
	r=$((r + 1))
done
