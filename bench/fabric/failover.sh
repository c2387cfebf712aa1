#!/bin/sh
# Scenario 2, failover: h0 -> h7, BYTES per run.  At T1 the spine link
# p0s1-p0l3 (plane 0, into h7's leaf) is blackholed silently, at T2 h0's
# plane-1 NIC link h0-p1l0 goes down (loud).  Every contender also runs
# once healthy.  Records the goodput time series (100 ms), the longest stall
# and the time to finish; the ideal finish is what the surviving capacity
# allows: 2 x RATE until T2 (the blackhole removes a path, not capacity:
# spine s0 still carries a full host link), then RATE.
# mrc's time series comes from its own completions (--report-ms 100) and
# its stall from the gaps between completions (sub-ms); iperf3's from the
# receiver's 100 ms intervals.  A run that has not finished at CAP_S is cut
# (SIGINT) and counted as "did not finish" (dnf).
SCEN=failover
RATE=${MRC_BENCH_RATE:-200}
BYTES=${MRC_BENCH_FAILOVER_BYTES:-192M}
T1=${MRC_BENCH_T1:-1.0}
T2=${MRC_BENCH_T2:-2.5}
CAP_S=${MRC_BENCH_FAILOVER_CAP_S:-20}
. bench/fabric/lib.sh
start_raw
fab_up
nbytes=$(numfmt --from=iec "$BYTES")
ideal=$(awk -v b="$nbytes" -v r="$RATE" -v t2="$T2" 'BEGIN{m=b*8/1e6; if (m <= 2*r*t2) print m/(2*r); else printf "%.3f", t2 + (m - 2*r*t2)/r}')
emit "{\"scenario\":\"failover\",\"ideal_s\":$ideal,\"t1\":$T1,\"t2\":$T2,\"rate\":$RATE,\"bytes\":$nbytes,\"cap_s\":$CAP_S}"
say "$BYTES h0 -> h7; faults at $T1 s (silent spine link) and $T2 s (plane-1 NIC down); ideal finish ${ideal} s"

faults() {
	sleep "$T1"; $F fail p0s1-p0l3 --silent >/dev/null
	sleep "$(awk -v a="$T1" -v b="$T2" 'BEGIN{print b-a}')"; $F fail h0-p1l0 >/dev/null
}

# one CONTENDER REP MODE(healthy|faults)
one() {
	c=$1; r=$2; mode=$3; o="$TMP/$c.$mode.$r"
	fp=""
	if [ "$c" = mrc ]; then
		bg ip netns exec $P-h7 timeout $((CAP_S + 10)) $X --host h7 --listen --bytes "$BYTES" --sid $r >"$o.srv" 2>&1
		sp=$BGPID
		# let the server finish starting, or the connect waits for a CM
		# retry (~0.3 s) and the faults land early in mrc's time line
		sleep 0.5
		[ $mode = faults ] && { bg faults; fp=$BGPID; }
		ip netns exec $P-h0 timeout -s INT $CAP_S $X --host h0 --connect h7 --bytes "$BYTES" --sid $r --report-ms 100 >"$o" 2>"$o.err" || true
		reap $sp 5 || true
		fin=$(jq -r 'select(.goodput_mbit) | .seconds' "$o")
		stall=$(jq -r 'select(.goodput_mbit) | .longest_stall_ms' "$o")
		series=$(jq -c 'select(.interval_ms) | .mbit' "$o")
	else
		w=""; [ "$c" = mptcp ] && w="mptcpize run"
		bg ip netns exec $P-h7 timeout $((CAP_S + 10)) $w iperf3 -s -1 -p 5201 -J -i 0.1 >"$o.srv" 2>&1
		sp=$BGPID
		sleep 0.2
		[ $mode = faults ] && { bg faults; fp=$BGPID; }
		crc=0
		ip netns exec $P-h0 timeout -s INT $CAP_S $w iperf3 -c "$(baddr 7 0)" -p 5201 -J -i 0.1 -n "$BYTES" >"$o" 2>"$o.err" || crc=$?
		# the server of a connection stalled for good never ends by itself
		kill -INT $sp 2>/dev/null || true
		reap $sp 5 || true
		# finished: the client sent every byte and exited by itself
		fin=null
		[ $crc = 0 ] && fin=$(jq -r '.intervals[-1].sum.end * 1000 | round / 1000' "$o.srv")
		stall=null
		series=$(jq -c '[.intervals[].sum.bits_per_second / 1e6 | . * 10 | round / 10]' "$o.srv" 2>/dev/null || echo '[]')
	fi
	[ -n "$fp" ] && { reap $fp 30 || true; }
	$F restore >/dev/null
	[ -n "$fin" ] || fin=null
	[ -n "$stall" ] || stall=null
	[ -n "$series" ] || series='[]'
	# longest run of 100 ms intervals without delivery (same for everyone),
	# counted up to the finish (or the cut-off)
	zero=$(echo "$series" | jq '[foreach .[] as $v ({run:0,best:0}; if $v == 0 then .run += 1 else .run = 0 end | .best = ([.best,.run]|max); .best)] | (max // 0) * 100')
	emit "{\"scenario\":\"failover\",\"contender\":\"$c\",\"mode\":\"$mode\",\"rep\":$r,\"finish_s\":$fin,\"stall_ms\":$stall,\"zero_ms\":$zero,\"ideal_s\":$ideal,\"series_ms\":100,\"mbit\":$series}"
	say "$c $mode rep $r/$REPS: finish ${fin} s (ideal $ideal), longest stall ${stall} ms, longest 100-ms gap run ${zero} ms"
}

r=1
while [ $r -le "$REPS" ]; do
	for c in mrc tcp mptcp; do
		[ $r = 1 ] && one $c $r healthy
		one $c $r faults
	done
	r=$((r + 1))
done
