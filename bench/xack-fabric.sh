#!/bin/bash
# bench/xack-fabric.sh BASE_BUILD NEW_BUILD [REPS] (root; under flock
# /tmp/mrc-root.lock in shared CI): cross-QP ACKs on the emulated fabric
# (fabric-2p-8h, h0 -> h7, one mrcd per host), the daemons of BASE and of
# NEW (with --xack=1) alternated (both restarted for each), NEW's harness and plugin for
# both: per rep and daemon mrc-nccl-harness -b -z 4096 (the plugin) and
# -d -z 4096 (libmrc directly), rank 0's 4 KiB round trip, and h7's
# engine counters over the plugin run.  bench/results/xack.md.  Run from
# the repository root.
set -u
BASE=${1:?base build}; NEW=${2:?new build}; REPS=${3:-3}
B=$NEW
P=mrcX; T=examples/topologies/fabric-2p-8h.json
F="$NEW/bin/mrc-fabric -p $P"; H="$NEW/bin/mrc-nccl-harness"; PL=$NEW/lib/libnccl-net-mrc.so
. bench/lib.sh
bench_fab bench/xack-fabric.sh
restart() {   # BUILD: both daemons stopped and started from BUILD
	local h
	for h in h0 h7; do
		kill "${dpid[$h]}" 2>/dev/null
		wait "${dpid[$h]}" 2>/dev/null
		rm -f "$tmp/$h/mrcctl.sock" "$tmp/$h/mrcd.sock"
	done
	B=$1
	local x=
	[ "$1" = "$NEW" ] && x=--xack=1
	for h in h0 h7; do MRCD_EXTRA=$x MRCD_LOG_LEVEL=warning start_mrcd $h; done
}
snap() {
	"$NEW/bin/mrcctl" -s "$tmp/h7/mrcctl.sock" -j stats |
		jq -c '.engine | {tx_data, tx_acks, tx_pb_acks, tx_xacks: (.tx_xacks // 0), ack_delay_expired}'
}
rtt() {   # ARGS...: rank 0's 4 KiB round trip
	harness2 "$@"
	grep -m1 -E '^\| [a-z]+ \| [0-9]+ \|' "$tmp/r0" | awk -F'|' '{gsub(/ /, "", $4); print $4}'
}
for i in $(seq "$REPS"); do
	echo "load $(cut -d' ' -f1 /proc/loadavg)"
	if [ $((i % 2)) = 1 ]; then o="base new"; else o="new base"; fi
	for v in $o; do
		b=$BASE; [ $v = new ] && b=$NEW
		restart "$b"
		a=$(snap)
		r=$(rtt -b -z 4096 -p "$PL")
		c=$(snap)
		d=$(rtt -d -z 4096)
		echo "$v plugin_rtt_4k=${r:-?} direct_rtt_4k=${d:-?} h7: $(jq -n -c --argjson a "$a" \
			--argjson b "$c" '$b | with_entries(.value -= $a[.key])')"
	done
done
