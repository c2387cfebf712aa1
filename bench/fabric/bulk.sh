#!/bin/sh
# Scenario 1, one-to-one bulk: h0 -> h7 (different leaves, so every spine
# path exists) on the 2-plane fabric; goodput of each contender as a share
# of h0's plane capacity (2 x RATE).  Contenders: mrc spraying, mrc pinned
# (--pin), TCP over kernel ECMP, MPTCP with a subflow per plane, and raw UDP
# (one iperf3 -u stream per plane at the link rate: the unreliable ceiling).
# The share of bytes that left h0 on plane 1 (NIC counters) shows which
# contenders used both planes.
SCEN=bulk
RATE=${MRC_BENCH_RATE:-200}
BYTES=${MRC_BENCH_BULK_BYTES:-96M}
. bench/fabric/lib.sh
start_raw
fab_up
CAP=$((RATE * PLANES))

# record CONTENDER REP MBIT TX0_BEFORE TX1_BEFORE CPU_BEFORE EXTRA_JSON
record() {
	set -- "$@" $(nic_tx 0) $(cpu_stat)
	# $4 $5 tx before, $6 $7 cpu before, $9 $10 tx after, $11 $12 cpu after
	_p1=$(awk -v a0="$4" -v a1="$5" -v b0="$9" -v b1="${10}" 'BEGIN{d=(b0-a0)+(b1-a1); printf "%.3f", (d>0?(b1-a1)/d:0)}')
	_busy=$(awk -v a="$6" -v i="$7" -v b="${11}" -v j="${12}" 'BEGIN{d=(b-a)+(j-i); printf "%.3f", (d>0?(b-a)/d:0)}')
	emit "{\"scenario\":\"bulk\",\"contender\":\"$1\",\"rep\":$2,\"mbit\":$3,\"cap_mbit\":$CAP,\"share\":$(awk -v m="$3" -v c=$CAP 'BEGIN{printf "%.4f", m/c}'),\"plane1_share\":$_p1,\"machine_busy\":$_busy$8}"
	say "$1 rep $2/$REPS: $3 Mbit/s = $(awk -v m="$3" -v c=$CAP 'BEGIN{printf "%.1f", 100*m/c}')% of $CAP, plane-1 share of bytes $_p1, machine busy $_busy"
}

r=1
while [ $r -le "$REPS" ]; do
	o="$TMP/run"
	for c in mrc mrc-pinned; do
		pin=""; [ $c = mrc-pinned ] && pin=--pin
		set -- $(nic_tx 0) $(cpu_stat)
		mrc_run 0 7 "$BYTES" "$o" --sid $r $pin || { say "$c rep $r FAILED: $(cat "$o.err")"; }
		m=$(jq -r 'select(.goodput_mbit) | .goodput_mbit' "$o")
		ex=$(jq -r 'select(.paths_lost_pkts != null) | ",\"lost_pkts\":\(.paths_lost_pkts),\"retx\":\(.retx),\"ev_state\":\(.ev_state|tojson)"' "$o")
		record $c $r "${m:-0}" "$1" "$2" "$3" "$4" "$ex"
	done
	for c in tcp mptcp; do
		set -- $(nic_tx 0) $(cpu_stat)
		ip_run $c 0 7 "$o" -n "$BYTES" || say "$c rep $r FAILED: $(cat "$o.err")"
		m=$(jq -r '.end.sum_received.bits_per_second / 1e6 | . * 10 | round / 10' "$o" 2>/dev/null || echo 0)
		rt=$(jq -r '.end.sum_sent.retransmits // 0' "$o" 2>/dev/null || echo 0)
		record $c $r "${m:-0}" "$1" "$2" "$3" "$4" ",\"retx\":$rt"
	done
	# raw UDP: one stream per plane at the link rate, both at once
	set -- $(nic_tx 0) $(cpu_stat)
	for pl in 0 1; do
		bg ip netns exec $P-h7 timeout 20 iperf3 -s -1 -p $((5300 + pl)) -J >"$o.u$pl.srv" 2>&1
		eval "us$pl=\$BGPID"
	done
	sleep 0.2
	for pl in 0 1; do
		bg ip netns exec $P-h0 timeout 20 iperf3 -u -c "$(baddr 7 $pl)" -p $((5300 + pl)) -b "${RATE}M" -l 8900 -t 3 -J >"$o.u$pl" 2>&1
		eval "uc$pl=\$BGPID"
	done
	reap "$uc0" 20 || true; reap "$uc1" 20 || true; reap "$us0" 5 || true; reap "$us1" 5 || true
	m=$(jq -s 'map(.end.sum.bits_per_second * (1 - .end.sum.lost_percent / 100)) | add / 1e6 | . * 10 | round / 10' "$o.u0" "$o.u1" 2>/dev/null || echo 0)
	record udp $r "$m" "$1" "$2" "$3" "$4" ""
	r=$((r + 1))
done
# MPTCP really used one subflow per plane: the counters of the last run
ip netns exec $P-h0 nstat -az 2>/dev/null | awk '/MPTcpExt(MPJoinSynAckRx|MPJoinSynTxConnectErr|AddAddr|MPCapableSYNACKRX) /{printf "%s=%s ", $1, $2}' >"$TMP/nstat"
say "h0 MPTCP counters (all runs): $(cat "$TMP/nstat")"
emit "{\"scenario\":\"bulk\",\"mptcp_nstat\":\"$(cat "$TMP/nstat")\"}"
