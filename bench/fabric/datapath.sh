#!/bin/sh
# Datapaths side by side (issue 17): the same mrc-xfer runs over each
# datapath (MRC_BENCH_DATAPATHS, default "udp af_xdp dpdk") in one run on
# one unlimited fabric, interleaved rep by rep so that load from elsewhere
# on the machine hits them alike:
#   bulk: BYTES (MRC_BENCH_DP_BYTES, default 256M) h0 -> h7; goodput, data
#     packets sent, the CPU time (user+sys, /usr/bin/time) of the sending
#     and the receiving process, the busy CPU time of the whole machine
#     (/proc/stat) while it ran, which also holds the softirq work no
#     process is charged with (XDP, af_packet and the kernel's receive
#     path) and anything else running, and what the datapaths dropped
#     themselves (tx_eagain + rx_dropped at both ends: full rings), and
#     the data packets lost between them (what h0's datapath sent less
#     what h7's received: 0 means every retransmission was spurious).  A
#     run is bounded by the time BYTES take at MRC_BENCH_FLOOR_MBIT
#     (default 20) plus 30 s;
#   pingpong: N (MRC_BENCH_PINGS, default 1000) round trips of 64 bytes
#     h0 <-> h7 (mrc-xfer --pingpong), bounded by mrc_run's 120 s.
# dpdk runs with its default datapath_args (af_packet vdevs, wait=auto:
# mrc-xfer's loop waits on the driver's socket, docs/datapaths.md);
# NAME:ARGS in the list runs datapath NAME with datapath_args ARGS as a
# contender of its own (e.g. "dpdk dpdk:wait=poll": polling, idle rounds
# sleeping idle_us, vs waiting on the socket).  Raw rows to
# bench/results/raw/datapath.jsonl; bench/fabric/datapath_md.py writes
# bench/results/datapath.md (medians, ratios to udp).  A datapath that
# cannot open (not built in, no AF_XDP in the kernel) is recorded as
# failed with its reason.  Run under the root lock:
#   flock /tmp/mrc-root.lock sh bench/fabric/datapath.sh
SCEN=datapath
RATE=${MRC_BENCH_RATE:-0}
BYTES=${MRC_BENCH_DP_BYTES:-256M}
N=${MRC_BENCH_PINGS:-1000}
DPS=${MRC_BENCH_DATAPATHS:-udp af_xdp dpdk}
FLOOR=${MRC_BENCH_FLOOR_MBIT:-20}
. bench/fabric/lib.sh
start_raw
fab_up
emit "{\"kind\":\"meta\",\"machine\":\"$(uname -n) $(nproc) cpus $(awk -F': ' '/model name/{print $2; exit}' /proc/cpuinfo)\",\"kernel\":\"$(uname -r)\",\"bytes\":\"$BYTES\",\"pings\":$N,\"datapaths\":\"$DPS\",\"reps\":$REPS,\"date\":\"$(date -u '+%Y-%m-%d %H:%M UTC')\",\"load_start\":\"$(cut -d' ' -f1-3 /proc/loadavg)\"}"
LIM=$(( $(numfmt --from=iec "$BYTES") * 8 / (FLOOR * 1000000) + 30 ))
T="timeout $LIM /usr/bin/time -f %U+%S"
# drops FILE: the datapath line mrc-xfer prints at exit ({} if none)
drops() { jq -c -s 'map(select(.datapath.name)) | .[0].datapath // {}' "$1" 2>/dev/null || echo '{}'; }
sid=0
r=1
while [ $r -le "$REPS" ]; do
	for dp in $DPS; do
		o="$TMP/run"; sid=$((sid + 1))
		name=${dp%%:*}; dargs=""
		[ "$name" = "$dp" ] || dargs=${dp#*:}
		bg ip netns exec $P-h7 $T -o "$o.scpu" $X --host h7 --listen --bytes "$BYTES" --sid $sid \
			--datapath $name ${dargs:+--datapath-args "$dargs"} >"$o.srv" 2>&1
		sp=$BGPID
		c0=$(cpu_stat)
		rc=0
		ip netns exec $P-h0 $T -o "$o.ccpu" $X --host h0 --connect h7 --bytes "$BYTES" --sid $sid \
			--datapath $name ${dargs:+--datapath-args "$dargs"} >"$o" 2>"$o.err" || rc=$?
		c1=$(cpu_stat)
		reap $sp 10 || true
		if [ $rc = 0 ]; then
			# busy jiffies of the machine (USER_HZ: 100 a second)
			busy=$(echo "$c0 $c1" | awk '{printf "%.2f", ($3 - $1) / 100}')
			cc=$(tail -n 1 "$o.ccpu" | awk -F+ '{print $1 + $2}')
			sc=$(tail -n 1 "$o.scpu" | awk -F+ '{print $1 + $2}')
			l=$(jq -c --argjson cc "$cc" --argjson sc "$sc" --argjson busy "$busy" \
				--argjson cd "$(drops "$o")" --argjson sd "$(drops "$o.srv")" -s \
				'(map(select(.goodput_mbit)) | .[0]) as $g | (map(select(.planes_tx_pkts)) | .[0]) as $p |
				 {goodput_mbit: $g.goodput_mbit, seconds: $g.seconds, bytes: $g.bytes,
				  pkts: ($p.planes_tx_pkts | add), retx: $p.retx, cli_cpu_s: $cc, srv_cpu_s: $sc,
				  machine_busy_s: $busy,
				  dp_drops: ([$cd.tx_eagain, $cd.rx_dropped, $sd.tx_eagain, $sd.rx_dropped] | map(. // 0) | add),
				  dp_lost: (if $cd.tx_pkts and $sd.rx_pkts then $cd.tx_pkts - $sd.rx_pkts else null end)}' "$o")
		else
			l="{\"error\":$( (echo "exit $rc (bound $LIM s):"; head -c 300 "$o.err") | jq -Rs .)}"
		fi
		emit "{\"kind\":\"bulk\",\"dp\":\"$dp\",\"rep\":$r,\"r\":$l}"
		say "$dp bulk rep $r/$REPS: $l"
		sid=$((sid + 1))
		rm -f "$o"
		l='{"p50":null,"p99":null,"min":null}'
		if mrc_run 0 7 64 "$o" --pingpong "$N" --sid $sid --datapath $name ${dargs:+--datapath-args "$dargs"}; then
			l=$(jq -c 'select(.rtt_us_p50) | {p50: .rtt_us_p50, p99: .rtt_us_p99, min: .rtt_us_min}' "$o")
		else
			say "$dp pingpong rep $r FAILED: $(head -c 300 "$o.err")"
		fi
		emit "{\"kind\":\"pingpong\",\"dp\":\"$dp\",\"rep\":$r,\"r\":$l}"
		say "$dp pingpong rep $r/$REPS: $l"
	done
	r=$((r + 1))
done
emit "{\"kind\":\"end\",\"load_end\":\"$(cut -d' ' -f1-3 /proc/loadavg)\",\"date\":\"$(date -u '+%Y-%m-%d %H:%M UTC')\"}"
python3 bench/fabric/datapath_md.py "$RES"
