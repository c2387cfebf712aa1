#!/bin/sh
# Scenario 3, flow collisions: permutation traffic among the 8 hosts, all
# flows at once, every flow between different leaves, SIZE bytes each.
# Flow completion times relative to the ideal SIZE / (2 x RATE) (a host's
# plane capacity): the slowest flow of each run and the p99 over all flows
# of all runs.  ECMP hashes the TCP flows afresh each run (new ports), so
# the runs differ in how many flows collide on a spine link.
SCEN=collisions
RATE=${MRC_BENCH_COLL_RATE:-50}
SIZE=${MRC_BENCH_COLL_SIZE:-16M}
PERM=${MRC_BENCH_PERM:-"5 3 7 1 6 0 2 4"}   # host i sends to the i-th entry
. bench/fabric/lib.sh
start_raw
fab_up
nbytes=$(numfmt --from=iec "$SIZE")
ideal=$(awk -v b="$nbytes" -v r="$RATE" 'BEGIN{printf "%.3f", b*8/1e6/(2*r)}')
emit "{\"scenario\":\"collisions\",\"ideal_s\":$ideal,\"rate\":$RATE,\"bytes\":$nbytes,\"perm\":\"$PERM\"}"
say "permutation [$PERM], $SIZE per flow, ideal FCT $ideal s"

run() {
	c=$1; r=$2; o="$TMP/$c.$r"; cpids=""; spids=""
	set -- $(cpu_stat)
	i=0
	for d in $PERM; do
		case $c in
		mrc*)
			pin=""; [ $c = mrc-pinned ] && pin=--pin
			bg ip netns exec $P-h$d timeout 120 $X --host h$d --listen --bytes "$SIZE" --port $((6000 + i)) $pin >"$o.$i.srv" 2>&1
			spids="$spids $BGPID" ;;
		*)
			w=""; [ $c = mptcp ] && w="mptcpize run"
			bg ip netns exec $P-h$d timeout 120 $w iperf3 -s -1 -p $((5201 + i)) -J >"$o.$i.srv" 2>&1
			spids="$spids $BGPID" ;;
		esac
		i=$((i + 1))
	done
	sleep 0.3
	i=0
	for d in $PERM; do
		case $c in
		mrc*)
			bg ip netns exec $P-h$i timeout 120 $X --host h$i --connect h$d --bytes "$SIZE" --port $((6000 + i)) $pin >"$o.$i" 2>&1 ;;
		*)
			bg ip netns exec $P-h$i timeout 120 $w iperf3 -c "$(baddr $d 0)" -p $((5201 + i)) -n "$SIZE" -J >"$o.$i" 2>&1 ;;
		esac
		cpids="$cpids $BGPID"
		i=$((i + 1))
	done
	for p in $cpids; do reap $p 120 || true; done
	for p in $spids; do reap $p 10 || true; done
	set -- "$@" $(cpu_stat)
	busy=$(awk -v a="$1" -v i="$2" -v b="$3" -v j="$4" 'BEGIN{d=(b-a)+(j-i); printf "%.3f", (d>0?(b-a)/d:0)}')
	fcts=""
	i=0
	for d in $PERM; do
		case $c in
		mrc*) t=$(jq -r 'select(.goodput_mbit) | .seconds' "$o.$i" 2>/dev/null) ;;
		*) t=$(jq -r 'if .error then empty else .end.sum_received.seconds * 1000 | round / 1000 end' "$o.$i" 2>/dev/null) ;;
		esac
		fcts="$fcts${fcts:+,}${t:-null}"
		i=$((i + 1))
	done
	emit "{\"scenario\":\"collisions\",\"contender\":\"$c\",\"rep\":$r,\"fct_s\":[$fcts],\"ideal_s\":$ideal,\"machine_busy\":$busy}"
	say "$c rep $r/$REPS: FCTs [$fcts] s (ideal $ideal), machine busy $busy"
}

r=1
while [ $r -le "$REPS" ]; do
	for c in mrc mrc-pinned tcp mptcp; do run $c $r; done
	r=$((r + 1))
done
