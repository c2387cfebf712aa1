#!/bin/sh
# Scenario 5, many connections: h0 -> h7, BYTES split over 1, 16 and 256 QPs
# (mrc-xfer --qps) for mrc spraying; aggregate goodput and the CPU time of
# the sending and the receiving mrc-xfer process (user + system, from
# /usr/bin/time, as % of one core over the run).  The system time includes
# the kernel's forwarding through the emulated switches that runs in the
# sender's context (veth delivers in the caller's softirq), so it is an
# upper bound of what the transport itself costs.
SCEN=manyqps
RATE=${MRC_BENCH_RATE:-200}
BYTES=${MRC_BENCH_MANYQPS_BYTES:-96M}
QPS=${MRC_BENCH_QPS_LIST:-"1 16 256"}
. bench/fabric/lib.sh
start_raw
fab_up
CAP=$((RATE * PLANES))
T="/usr/bin/time -f %e_%U_%S"
r=1
while [ $r -le "$REPS" ]; do
	o="$TMP/run"
	for q in $QPS; do
		bg ip netns exec $P-h7 timeout 120 $T -o "$o.stime" $X --host h7 --listen --bytes "$BYTES" --qps $q --sid $r >"$o.srv" 2>&1
		sp=$BGPID
		ip netns exec $P-h0 timeout 120 $T -o "$o.ctime" $X --host h0 --connect h7 --bytes "$BYTES" --qps $q --sid $r >"$o" 2>"$o.err" || say "qps $q rep $r FAILED: $(cat "$o.err")"
		reap $sp 10 || true
		m=$(jq -r 'select(.goodput_mbit) | .goodput_mbit' "$o")
		s=$(jq -r 'select(.goodput_mbit) | .seconds' "$o")
		cc=$(tail -1 "$o.ctime" | awk -F_ -v s="${s:-0}" '{printf "%.1f", ($2+$3)/$1*100}')
		sc=$(tail -1 "$o.stime" | awk -F_ '{printf "%.1f", ($2+$3)/$1*100}')
		cs=$(tail -1 "$o.ctime" | awk -F_ '{printf "%.1f", $3/$1*100}')
		emit "{\"scenario\":\"manyqps\",\"contender\":\"mrc\",\"qps\":$q,\"rep\":$r,\"mbit\":${m:-0},\"cap_mbit\":$CAP,\"client_cpu_pct\":${cc:-0},\"client_sys_pct\":${cs:-0},\"server_cpu_pct\":${sc:-0}}"
		say "qps $q rep $r/$REPS: ${m} Mbit/s of $CAP, CPU sender ${cc}% (sys ${cs}%), receiver ${sc}% of a core"
	done
	r=$((r + 1))
done
