#!/bin/bash
# bench/nccl-ab.sh BASE_PLUGIN NEW_PLUGIN [REPS] (root; under flock /tmp/mrc-root.lock in
# shared CI): two builds of the NCCL plugin side by side, h0 -> h7 on fabric-2p-8h, one mrcd per host;
# per rep (alternated): mrc-nccl-harness -b -z 4096 and -z 4194304 through each
# plugin (paths), then -d (libmrc directly) for both sizes; prints each
# run's rank-0 row prefixed base/new/direct and the load at each rep
# (bench/results/nccl-nocts.md).  Run from the repository root.
set -u
B=${B:-build}
P=mrcQ; T=examples/topologies/fabric-2p-8h.json
F="$B/bin/mrc-fabric -p $P"; H="$B/bin/mrc-nccl-harness"
BASEP=${1:?base plugin path}; NEWP=${2:?new plugin path}; REPS=${3:-5}
. bench/lib.sh
bench_fab bench/nccl-ab.sh
run() {  # LABEL ARGS...
	local l=$1; shift
	harness2 "$@"
	grep -E '^\| [a-z]+ \| [0-9]+ \|' "$tmp/r0" | sed "s/^/$l /"
}
for i in $(seq $REPS); do
	echo "load $(cut -d' ' -f1 /proc/loadavg)"
	if [ $((i % 2)) = 1 ]; then o="base new"; else o="new base"; fi
	for v in $o; do
		pl=$BASEP; [ $v = new ] && pl=$NEWP
		run $v -b -z 4096 -p $pl
		run $v -b -z 4194304 -p $pl
	done
	run direct -d -z 4096
	run direct -d -z 4194304
done
