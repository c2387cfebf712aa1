#!/bin/bash
# Where Open MPI's all-to-all over the mrc provider spends its time on the
# emulated fabric (issue 32): bench/fabric/libfabric.sh's fabric (8 hosts,
# mrcd on each, RATE Mbit/s links), one run of bench/mpi_coll (COLL,
# alltoall by default, SIZE per rank, ITERS iterations) on 8 ranks over
# the mrc provider, and every mrcd's engine counters before and after
# (mrcctl stats): data packets, retransmissions, RTO fires, losses
# declared (by evidence: own path, cross path), those proven spurious (by
# rule; 0 where the build predates the counters), tail-loss probes, RNR
# NACKs, trimmed packets; the RTO evidence (engine.h mrce_stats rto_lag,
# rto_sp_*: lag of the timer, spurious RTOs by lateness and against the RTO
# that fired, the estimate then) and mrcd's timer lateness.  MPI_ENV: words VAR=VALUE for every rank (e.g.
# FI_MRC_RX_POSTED_MAX=8).  NETSAMPLE=FILE: every host's NIC bytes every
# 5 ms during the run (bench/fabric/netsample.py; --table FILE shows them);
# QPS=FILE: h0's QPs (mrcctl qps: cwnd, srtt, RTO) every 100 ms, JSON lines;
# MRCD_BIN, MRCD_ARGS: another mrcd, more options (libfabric_lib.sh).  Root; prints,
# writes nothing to bench/results:
#   bash bench/fabric/libfabric_mpistat.sh [BUILD]
SCEN=libfabric_mpistat
export MRC_BENCH_RESULTS=${MRC_BENCH_RESULTS:-$(mktemp -d /tmp/mrcms.XXXXXX)}
. bench/fabric/libfabric_lib.sh
HOSTS="h0 h1 h2 h3 h4 h5 h6 h7"
lf_up "$HOSTS"
# every host's engine counters, summed: one JSON object
stats() {
	for h in $HOSTS; do "$B/bin/mrcctl" -j -s "$TMP/$h/mrcctl.sock" stats; done |
		jq -s '[.[].engine] | {tx_data: (map(.tx_data) | add), tx_retx: (map(.tx_retx) | add),
			rto_fires: (map(.rto_fires) | add), loss_detected: (map(.loss_detected) | add),
			tlp_probes: (map(.tlp_probes // 0) | add), rto_spurious: (map(.rto_spurious // 0) | add),
			loss_own_path: (map(.loss_own_path // 0) | add), loss_cross_path: (map(.loss_cross_path // 0) | add),
			loss_spurious: (map(.loss_spurious // 0) | add), loss_spurious_own: (map(.loss_spurious_own // 0) | add),
			loss_spurious_cross: (map(.loss_spurious_cross // 0) | add),
			loss_spurious_tlp: (map(.loss_spurious_tlp // 0) | add),
			loss_spurious_rto: (map(.loss_spurious_rto // 0) | add), rnr_nacks: (map(.nack_tx.rnr) | add),
			trimmed: (map(.rx_trimmed) | add), rx_dup: (map(.rx_dup) | add),
			msgs: (map(.msgs_completed) | add),
			rto_lost_rest: (map(.rto_lost_rest // 0) | add),
			loss_spurious_rto_rest: (map(.loss_spurious_rto_rest // 0) | add),
			rto_silent: (map(.rto_silent // 0) | add), rto_sp_silent: (map(.rto_sp_silent // 0) | add),
			rto_sp_rto_ns: (map(.rto_sp_rto_ns // 0) | add), rto_sp_srtt_ns: (map(.rto_sp_srtt_ns // 0) | add),
			rto_sp_rttvar_ns: (map(.rto_sp_rttvar_ns // 0) | add),
			rto_sp_floor_ns: (map(.rto_sp_floor_ns // 0) | add), rto_sp_lag_ns: (map(.rto_sp_lag_ns // 0) | add)}'
}
# the RTO evidence's histograms (engine.h mrce_stats rto_lag, rto_sp_*) and
# mrcd's timer lateness, summed over the hosts: one JSON object
hists() {
	for h in $HOSTS; do "$B/bin/mrcctl" -j -s "$TMP/$h/mrcctl.sock" stats; done |
		jq -s '{rto_lag: ([.[].engine.rto_lag // []] | transpose | map(add)),
			rto_sp_after: ([.[].engine.rto_sp_after // []] | transpose | map(add)),
			rto_sp_ratio: ([.[].engine.rto_sp_ratio // []] | transpose | map(add)),
			timer_late_us: ([.[].daemon.timer_late_us | to_entries] | transpose |
				map({key: .[0].key, value: (map(.value) | add)}) | from_entries)}'
}
s0=$(stats)
h0=$(hists)
FI_PROV=mrc
for h in $HOSTS; do fi_env_write $h; for e in ${MPI_ENV:-}; do echo "export $e" >>"$tmp/fienv.$h"; done; done
if [ -n "${NETSAMPLE:-}" ]; then   # every host's NIC bytes every 5 ms into $NETSAMPLE
	args=""; for h in $HOSTS; do args="$args $h:${NSPID[$h]}"; done
	rm -f "$TMP/ns.stop"
	python3 bench/fabric/netsample.py "$NETSAMPLE" "$TMP/ns.stop" $args &
	nsp=$!
fi
if [ -n "${QPS:-}" ]; then   # every 100 ms, h0's QPs (cwnd, srtt, RTO) into $QPS
	rm -f "$TMP/qs.stop"
	( while [ ! -e "$TMP/qs.stop" ]; do echo "{\"t\": $(date +%s.%N), \"q\": $("$B/bin/mrcctl" -j -s "$TMP/h0/mrcctl.sock" qps)}"; sleep 0.1; done >"$QPS" ) &
	qsp=$!
fi
t0=$(date +%s.%N)
fi_mpirun "$TMP/mpi.out" 180 ofi "$HOSTS" 1 "$B/bench/mpi_coll" -C "${COLL:-alltoall}" -b "${SIZE:-4M}" \
	-e "${SIZE:-4M}" -n "${ITERS:-3}" -w 1 -T 60 -L "$TMP/mpi.stall"
rc=$?
t1=$(date +%s.%N)
[ -z "${NETSAMPLE:-}" ] || { touch "$TMP/ns.stop"; wait $nsp; }
[ -z "${QPS:-}" ] || { touch "$TMP/qs.stop"; wait $qsp; }
s1=$(stats)
h1=$(hists)
say "mpirun rc $rc, $(awk -v a=$t0 -v b=$t1 'BEGIN {printf "%.1f", b - a}') s, load $(cut -d' ' -f1-3 /proc/loadavg)"
grep -E '^ |Out of' "$TMP/mpi.out"
jq -n --argjson a "$s0" --argjson b "$s1" '$b | with_entries(.value -= $a[.key])'
# the histograms' difference, bucket by bucket
jq -n -c --argjson a "$h0" --argjson b "$h1" '{rto_lag: [$b.rto_lag, $a.rto_lag] | transpose | map(.[0] - (.[1] // 0)),
	rto_sp_after: [$b.rto_sp_after, $a.rto_sp_after] | transpose | map(.[0] - (.[1] // 0)),
	rto_sp_ratio: [$b.rto_sp_ratio, $a.rto_sp_ratio] | transpose | map(.[0] - (.[1] // 0)),
	timer_late_us: ($b.timer_late_us | with_entries(.value -= ($a.timer_late_us[.key] // 0)))}'
