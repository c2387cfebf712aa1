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
if [ "$(id -u)" != 0 ]; then
	echo "bench/nccl-ab.sh: needs root (network namespaces)" >&2
	exit 1
fi
tmp=$(mktemp -d)
declare -A dpid
cleanup() { for p in "${dpid[@]}"; do kill "$p" 2>/dev/null; done; $F down >/dev/null 2>&1; rm -rf "$tmp"; }
trap cleanup EXIT INT TERM
. tests/root/lib.sh
MRCD_LOG_LEVEL=warning fabric_up "$T" h0 h7
run() {  # LABEL ARGS...
	local l=$1; shift
	MRC_SOCKET=$tmp/h7/mrcd.sock timeout 300 $H -r 1 -n 2 -R "$tmp/rdv" "$@" >"$tmp/r1" 2>&1 &
	local p=$!
	MRC_SOCKET=$tmp/h0/mrcd.sock timeout 300 $H -r 0 -n 2 -R "$tmp/rdv" "$@" >"$tmp/r0" 2>&1
	wait $p
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
