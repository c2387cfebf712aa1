#!/bin/sh
# Issue 34 item 1: paths retired with nothing lost, and the failover
# figures, for two mrcsim binaries (before and after a change), alternated.
# Usage: bench/sim_congest.sh BASE_MRCSIM NEW_MRCSIM > out.txt
# Deterministic: the counts do not depend on the machine's load.
set -eu
cd "$(dirname "$0")/.."
OS64="--topo clos:planes=8,leaves=4,spines=4,hosts=256,rate=100G,delay=500ns --workload permutation:size=2M --seed 43"
OS32="--topo clos:planes=2,leaves=2,spines=2,hosts=64,rate=100G,delay=500ns --workload permutation:size=512K --seed 43"
C1K="--topo clos:planes=8,leaves=32,spines=32,hosts=32,rate=100G,delay=500ns --workload permutation:size=2M"
OS2="--topo clos:planes=8,leaves=32,spines=16,hosts=32,rate=100G,delay=500ns --workload permutation:size=2M --seed 43"
FO="--topo clos:planes=8,leaves=8,spines=8,hosts=8,rate=100G,delay=500ns --workload permutation:size=32M --bin 5us"
row() {
	name=$1 bin=$2
	shift 2
	"$bin" --quiet -j "$@" | python3 -c '
import json, sys
d = json.load(sys.stdin)
e = d["packets"]["engine"]
bad = [c for c in d["ev_changes"]["list"] if c["to"] == "ASSUMED_BAD"]
t = [(c["t_ns"] - 100000) / 1000 for c in bad]
fo = " retired +%.1f..+%.1f us" % (min(t), max(t)) if t and "fault" in sys.argv[2] else ""
print("%-14s %-10s to_bad %5d suspect_retired %5d extended %5d drops %d makespan %.3f us slowest/ideal %.3f%s" % (
    sys.argv[1], sys.argv[3], d["ev_changes"]["to_assumed_bad"], e["suspect_retired"],
    e.get("suspect_extended", 0), sum(d["packets"]["drops"].values()),
    d["result"]["makespan_ns"] / 1000, d["fct_vs_ideal"]["max"], fo))
' "$name" "$*" "$(basename "$bin")"
}
for s in OS32 OS64 OS2 C1K FO_BH FO_DOWN; do
	case $s in
	FO_BH) args="$FO --fault 100us:blackhole:p0l0-p0s0" ;;
	FO_DOWN) args="$FO --fault 100us:down:p0l0-p0s0" ;;
	*) eval "args=\$$s" ;;
	esac
	for b in "$1" "$2"; do
		# shellcheck disable=SC2086
		row "$s" "$b" $args
	done
done
