#!/bin/bash
# Scenario: pre-gated against plain MoE dispatch on the emulated fabric
# (docs/coll.md "Pre-gated dispatch"): NR ranks (default 4) on hosts
# h0..h(NR-1), one mrcd each (as bench/fabric/coll.sh), mrc-coll-perf -C
# pregate with the arguments in MRC_BENCH_PREGATE_ARGS (default
# "-G 128,256,8,2,3000,20 -n 20 -w 2"), MRC_BENCH_PREGATE_REPS runs
# (default 3); a 7th -G value, ranks per node, makes the layer 2-D
# (nodes of the HOSTS_PER_LEAF hosts of a leaf with 2).  Rank 0's output
# goes to $TMP and is printed; the caller
# records it (bench/results/coll_pregate.md; the tables:
# bench/fabric/coll_pregate_md.py).  Run under
# flock /tmp/mrc-root.lock; lib.sh's trap removes the namespaces.
SCEN=coll_pregate
RATE=${MRC_BENCH_RATE:-100}
NR=${MRC_BENCH_COLL_RANKS:-4}
ARGS=${MRC_BENCH_PREGATE_ARGS:--G 128,256,8,2,3000,20 -n 20 -w 2}
NREP=${MRC_BENCH_PREGATE_REPS:-3}
HOSTS_PER_LEAF=2
MRC_BENCH_RESULTS=${MRC_BENCH_RESULTS:-/tmp}
. bench/fabric/lib.sh
sock() { echo "$TMP/$1/mrcd.sock"; }
fab_up
jq '.topology' /run/mrc-fabric/$P/state.json >"$TMP/topo.json"
for ((h = 0; h < NR; h++)); do
	mkdir -p "$TMP/h$h"
	bg ip netns exec $P-h$h "$B/bin/mrcd" --topology "$TMP/topo.json" --host h$h \
		--socket "$(sock h$h)" --key_file "$TMP/cluster.key" --log_level warning --mtu 8192 \
		2>>"$TMP/h$h.log"
	for _ in $(seq 200); do [ -S "$TMP/h$h/mrcctl.sock" ] && break; sleep 0.05; done   # startup poll, bounded
	[ -S "$TMP/h$h/mrcctl.sock" ] || { say "mrcd on h$h did not start"; cat "$TMP/h$h.log"; exit 1; }
done
say "$NR ranks, one per host; $RATE Mbit/s links, 2 planes; load $(cut -d' ' -f1-3 /proc/loadavg)"
for ((k = 0; k < NREP; k++)); do
	pids=()
	echo "# run $k, load before: $(cat /proc/loadavg)"
	for ((i = 0; i < NR; i++)); do
		bg env MRC_COLL_SIZE=$NR MRC_COLL_RANK=$i ip netns exec $P-h$i "$B/bin/mrc-coll-perf" \
			-S "$(sock h$i)" -H 0 -s $((7600 + k)) -C pregate $ARGS >"$TMP/pg.$k.$i" 2>&1
		pids+=($BGPID)
	done
	rc=0
	for p in "${pids[@]}"; do reap "$p" 600 || rc=$?; done
	cat "$TMP/pg.$k.0"
	echo "# run $k, load after: $(cat /proc/loadavg)"
	[ $rc = 0 ] || { say "run $k: exit $rc"; tail -n3 "$TMP"/pg.$k.*; exit 1; }
done
