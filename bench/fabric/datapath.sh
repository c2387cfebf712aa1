#!/bin/sh
# Datapaths side by side (issue 17): the same mrc-xfer runs over each
# datapath (MRC_BENCH_DATAPATHS, default "udp af_xdp") in one run on one
# unlimited fabric, interleaved rep by rep so that load from elsewhere on
# the machine hits them alike:
#   bulk: BYTES (default 512M) h0 -> h7; goodput, data packets sent, the
#     CPU time (user+sys, /usr/bin/time) of the sending and the receiving
#     process, and the busy CPU time of the whole machine (/proc/stat)
#     while it ran, which also holds the softirq work no process is charged
#     with (XDP and the kernel's receive path) and anything else running;
#   pingpong: N round trips of 64 bytes h0 <-> h7 (mrc-xfer --pingpong).
# Raw rows to bench/results/raw/datapath.jsonl; bench/fabric/datapath_md.py
# writes bench/results/datapath.md.  A datapath that cannot open (not built
# in, no AF_XDP in the kernel) is recorded as failed with its reason.
SCEN=datapath
RATE=${MRC_BENCH_RATE:-0}
BYTES=${MRC_BENCH_DP_BYTES:-512M}
N=${MRC_BENCH_PINGS:-2000}
DPS=${MRC_BENCH_DATAPATHS:-udp af_xdp}
. bench/fabric/lib.sh
start_raw
fab_up
emit "{\"kind\":\"meta\",\"machine\":\"$(uname -n) $(nproc) cpus $(awk -F': ' '/model name/{print $2; exit}' /proc/cpuinfo)\",\"kernel\":\"$(uname -r)\",\"bytes\":\"$BYTES\",\"pings\":$N,\"datapaths\":\"$DPS\"}"
T="timeout 120 /usr/bin/time -f %U+%S"
sid=0
r=1
while [ $r -le "$REPS" ]; do
	for dp in $DPS; do
		o="$TMP/run"; sid=$((sid + 1))
		bg ip netns exec $P-h7 $T -o "$o.scpu" $X --host h7 --listen --bytes "$BYTES" --sid $sid \
			--datapath $dp >"$o.srv" 2>&1
		sp=$BGPID
		c0=$(cpu_stat)
		rc=0
		ip netns exec $P-h0 $T -o "$o.ccpu" $X --host h0 --connect h7 --bytes "$BYTES" --sid $sid \
			--datapath $dp >"$o" 2>"$o.err" || rc=$?
		c1=$(cpu_stat)
		reap $sp 10 || true
		if [ $rc = 0 ]; then
			# busy jiffies of the machine (USER_HZ: 100 a second)
			busy=$(echo "$c0 $c1" | awk '{printf "%.2f", ($3 - $1) / 100}')
			cc=$(tail -n 1 "$o.ccpu" | awk -F+ '{print $1 + $2}')
			sc=$(tail -n 1 "$o.scpu" | awk -F+ '{print $1 + $2}')
			l=$(jq -c --argjson cc "$cc" --argjson sc "$sc" --argjson busy "$busy" -s \
				'(map(select(.goodput_mbit)) | .[0]) as $g | (map(select(.planes_tx_pkts)) | .[0]) as $p |
				 {goodput_mbit: $g.goodput_mbit, seconds: $g.seconds, bytes: $g.bytes,
				  pkts: ($p.planes_tx_pkts | add), retx: $p.retx, cli_cpu_s: $cc, srv_cpu_s: $sc,
				  machine_busy_s: $busy}' "$o")
		else
			l="{\"error\":$(head -c 300 "$o.err" | jq -Rs .)}"
		fi
		emit "{\"kind\":\"bulk\",\"dp\":\"$dp\",\"rep\":$r,\"r\":$l}"
		say "$dp bulk rep $r/$REPS: $l"
		sid=$((sid + 1))
		rm -f "$o"
		l='{"p50":null,"p99":null,"min":null}'
		if mrc_run 0 7 64 "$o" --pingpong "$N" --sid $sid --datapath $dp; then
			l=$(jq -c 'select(.rtt_us_p50) | {p50: .rtt_us_p50, p99: .rtt_us_p99, min: .rtt_us_min}' "$o")
		else
			say "$dp pingpong rep $r FAILED: $(head -c 300 "$o.err")"
		fi
		emit "{\"kind\":\"pingpong\",\"dp\":\"$dp\",\"rep\":$r,\"r\":$l}"
		say "$dp pingpong rep $r/$REPS: $l"
	done
	r=$((r + 1))
done
python3 bench/fabric/datapath_md.py "$RES"
