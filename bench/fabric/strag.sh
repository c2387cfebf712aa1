#!/bin/bash
# Scenario: straggler naming (issue 34 item 4, docs/coll.md "Stragglers")
# on the emulated fabric: 4 ranks on h0..h3 (rank i on host hi), mrcd on
# each, one build/bench/strag_run per rank, all-to-all of BYTES per rank
# spread over both planes (MRC_COLL_PLANES=2, so a slow chunk's plane is
# known), steps of three calls each followed by mrc_coll_straggler.
#   compute: in each of STEPS steps a seeded rank sleeps SLEEP_MS before
#            the third call; named right = cause compute and that rank;
#   network: ROUNDS rounds, each a seeded host's plane-0 link to its leaf
#            losing PCT % (mrc-fabric drop, both directions) for STEPS/ROUNDS
#            steps, then restored; named right = cause network, that host
#            (rank), plane 0;
#   healthy: STEPS steps with nothing injected; named right = none.
# Each lossy round checks that the fault took (the nftables drop counters
# of both ends of the link moved; a line of part "inject" in the raw).
# Prints each verdict and the naming rates; writes bench/results/strag-run.md
# (MRC_BENCH_RESULTS; the figures of the last run only: the analysis in
# strag.md is written by hand) and raw/strag.jsonl.  Needs root: run under
# `flock /tmp/mrc-root.lock`.  Cleans up on every exit (lib.sh's trap).
SCEN=strag
RATE=${MRC_BENCH_RATE:-100}
NR=4
STEPS=${MRC_BENCH_STRAG_STEPS:-20}
ROUNDS=${MRC_BENCH_STRAG_ROUNDS:-4}
BYTES=${MRC_BENCH_STRAG_BYTES:-1048576}
SLEEP_MS=${MRC_BENCH_STRAG_SLEEP_MS:-50}
PCT=${MRC_BENCH_STRAG_PCT:-5}
SEED=${MRC_BENCH_STRAG_SEED:-$(date +%s)}
. bench/fabric/lib.sh
RUN=$B/bench/strag_run
MD="$RES/strag-run.md"
start_raw
: >"$RES/raw/strag-qp.txt"   # every rank's QP counts at each verdict
fab_up
jq '.topology' /run/mrc-fabric/$P/state.json >"$TMP/topo.json"
declare -A DPID
for h in 0 1 2 3; do
	mkdir -p "$TMP/h$h"
	bg ip netns exec $P-h$h "$B/bin/mrcd" --topology "$TMP/topo.json" --host h$h \
		--socket "$TMP/h$h/mrcd.sock" --key_file "$TMP/cluster.key" --log_level err --mtu 8192 \
		2>>"$TMP/h$h.log"
	DPID[$h]=$BGPID
done
for h in 0 1 2 3; do
	for i in $(seq 100); do [ -S "$TMP/h$h/mrcctl.sock" ] && break; sleep 0.1; done
	[ -S "$TMP/h$h/mrcctl.sock" ] || { say "mrcd on h$h did not start"; cat "$TMP/h$h.log"; exit 1; }
done
say "seed $SEED; $STEPS steps each; load $(cut -d' ' -f1-3 /proc/loadavg)"
sid=7600
# job TAG STEPS SLEEP_MS SEED: one job, rank 0's verdicts to $TMP/TAG
job() {
	local i pids=() rc=0
	sid=$((sid + 1))
	for i in 0 1 2 3; do
		bg env MRC_COLL_SIZE=$NR MRC_COLL_RANK=$i MRC_COLL_ROOT_HOST=0 MRC_COLL_SID=$sid \
			MRC_COLL_STRAG_TRACE=1 MRC_COLL_PLANES=2 MRC_COLL_CHUNK=65536 MRC_SOCKET="$TMP/h$i/mrcd.sock" \
			ip netns exec $P-h$i $RUN "$2" "$BYTES" "$3" "$4" a2a >"$TMP/$1.$i" 2>&1
		pids+=($BGPID)
	done
	for p in "${pids[@]}"; do reap "$p" 300 || rc=$?; done
	[ $rc = 0 ] || say "$1: exit $rc: $(tail -n2 "$TMP"/$1.* | tr '\n' ' ')"
	grep '^{' "$TMP/$1.0" >"$TMP/$1" || true
	for i in 0 1 2 3; do
		sed -n "s/^mrc_coll_straggler: /$1 /p" "$TMP/$1.$i" >>"$RES/raw/strag-qp.txt"
	done
}
# compute
job compute "$STEPS" "$SLEEP_MS" "$SEED"
jq -c '. + {part: "compute", ok: (.cause == "compute" and .rank == .late_rank)}' "$TMP/compute" | tee -a "$RAW"
# network
per=$((STEPS / ROUNDS))
for ((r = 0; r < ROUNDS; r++)); do
	x=$(( (SEED / 7 + r * 5 + r * r) % NR ))
	$F drop "h$x-p0l$((x / HOSTS_PER_LEAF))" "$PCT" >/dev/null
	job "net$r" "$per" 0 "$SEED"
	# Packets the fault dropped, both ends of the link (0: it did not take).
	drops=0
	for ns in $P-h$x $P-p0l$((x / HOSTS_PER_LEAF)); do
		d=$(ip netns exec $ns nft list table netdev mrcfab 2>/dev/null |
			sed -n 's/.*counter packets \([0-9]*\).*/\1/p' | awk '{s += $1} END {print s + 0}')
		drops=$((drops + d))
	done
	$F restore >/dev/null
	echo "{\"part\": \"inject\", \"round\": $r, \"lossy_host\": $x, \"dropped\": $drops}" | tee -a "$RAW"
	[ "$drops" -gt 0 ] || say "round $r: the fault on h$x dropped nothing"
	jq -c --argjson x "$x" '. + {part: "network", lossy_host: $x,
		ok: (.cause == "network" and .host == $x and .plane == 0),
		ok_host: (.cause == "network" and .host == $x)}' "$TMP/net$r" | tee -a "$RAW"
done
job healthy "$STEPS" 0 "$SEED"
jq -c '. + {part: "healthy", ok: (.cause == "none")}' "$TMP/healthy" | tee -a "$RAW"
load=$(cut -d' ' -f1-3 /proc/loadavg)
rate() { jq -s --arg p "$1" --arg k "$2" '[.[] | select(.part == $p)] as $a | "\([$a[] | select(.[$k])] | length) of \($a | length)"' -r "$RAW"; }
c=$(rate compute ok); n=$(rate network ok); nh=$(rate network ok_host); h=$(rate healthy ok)
dropped=$(jq -s '[.[] | select(.part == "inject") | .dropped] | map(tostring) | join(", ")' -r "$RAW")
say "compute: late rank named in $c steps; network: lossy host and plane 0 named in $n (host alone: $nh); healthy: nobody named in $h; load $load"
cat >"$MD" <<EOF
# Straggler naming on the emulated fabric

\`flock /tmp/mrc-root.lock env MRC_BENCH_STRAG_SEED=$SEED ./bench/fabric/strag.sh\`
($(date -u '+%Y-%m-%d %H:%M UTC'); 4 ranks on h0..h3 of the 2-plane fabric at
$RATE Mbit/s, all-to-all of $BYTES B per rank spread over both planes,
64 KiB chunks; steps of three calls, then \`mrc_coll_straggler\`; load
at the end $load on the 2 cores.)

| injected | named right | what counts |
|---|--:|---|
| a seeded rank sleeps $SLEEP_MS ms before the third call | $c | cause compute, that rank |
| a seeded host's plane-0 link loses $PCT % ($ROUNDS rounds) | $n | cause network, that host, plane 0 |
| (the same) | $nh | cause network, that host |
| nothing | $h | cause none |

Packets the lossy link dropped in each round: $dropped.  Every verdict:
raw/strag.jsonl.  The analysis: strag.md.
EOF
say "wrote $MD"
