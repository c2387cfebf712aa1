#!/bin/sh
# Reruns every mrcsim figure reported in docs/sim.md, one scenario after
# the other on one core.  Usage: bench/sim.sh [OUTDIR] [--quick]
#   OUTDIR   where NAME.json / NAME.txt go (default bench/results/sim)
#   --quick  skip the 8,192-host runs (minutes each, 1-1.5 GiB; the step
#            about 9 GiB)
# Prints a summary table at the end (jq).  Results are deterministic except
# the timing fields (wall time, events/s, memory).
set -eu
cd "$(dirname "$0")/.."
OUT=bench/results/sim
QUICK=0
for a in "$@"; do
	case "$a" in
	--quick) QUICK=1 ;;
	*) OUT=$a ;;
	esac
done
make -s build/bin/mrcsim
mkdir -p "$OUT"
SIM=build/bin/mrcsim

run() {
	name=$1
	shift
	echo "== $name: mrcsim $*" >&2
	$SIM --quiet --timing --json-out "$OUT/$name.json" "$@" >"$OUT/$name.txt"
}

# 3-tier fat tree, k=12: 432 hosts, one 100 Gbit/s NIC each, 36 paths.
FT="--topo fattree:k=12,rate=100G,delay=500ns"
run ft432_spray $FT --workload permutation:size=2M
run ft432_ecmp $FT --workload permutation:size=2M --mode ecmp
run ft432_incast $FT --workload incast:senders=32,dst=h0,size=1M
run ft432_a2a $FT --workload alltoall:group=16,size=256K
# k=16, 1,024 hosts, with the sender-stall accounting (docs/sim.md).
run ft1k_spray --topo fattree:k=16,rate=100G,delay=500ns --workload permutation:size=2M --stalls on

# 2-tier, 8 planes, 1,024 hosts (32 leaves x 32 hosts, 32 spines per plane,
# non-blocking), 8 x 100 Gbit/s per host, 264 EVs per pair.
C1K="--topo clos:planes=8,leaves=32,spines=32,hosts=32,rate=100G,delay=500ns"
run c1k_spray $C1K --workload permutation:size=2M
run c1k_spray16M $C1K --workload permutation:size=16M
run c1k_ecmp $C1K --workload permutation:size=2M --mode ecmp
run c1k_ecmp8qp $C1K --workload permutation:size=2M,qps=8 --mode ecmp
# Spray slots by topology (docs/sim.md "Spray slots"): each host starts its
# spray at its index under its leaf, so a leaf's hosts never share a spine
# in one packet slot while they send in step.
run c1k_spray_slot $C1K --workload permutation:size=2M --spray-slot topo

# Training steps (docs/sim.md "Training steps"): 1,024 hosts, MoE layer
# as a 2-D all-to-all over all of them (32 x 32), ring buckets of 8.
run step_c1k $C1K --workload step:steps=3
run step_c1k_w64 $C1K --window 64 --paths 64 --workload step:steps=3

# Failover: a leaf-spine link of plane 0 fails at 100 us under a
# permutation of 32 MiB flows (8 planes, 64 hosts, 100 Gbit/s links).
FO="--topo clos:planes=8,leaves=8,spines=8,hosts=8,rate=100G,delay=500ns --workload permutation:size=32M --bin 5us"
run fo_down $FO --fault 100us:down:p0l0-p0s0
run fo_blackhole $FO --fault 100us:blackhole:p0l0-p0s0
run fo_down_slack10us $FO --fault 100us:down:p0l0-p0s0 --reorder-slack 10us
run fo_down_ecmp8qp --topo clos:planes=8,leaves=8,spines=8,hosts=8,rate=100G,delay=500ns \
	--workload permutation:size=32M,qps=8 --bin 5us --mode ecmp --fault 100us:down:p0l0-p0s0

# Scale: 8 planes, 8,192 hosts (256 leaves x 32 hosts, 32 spines/plane).
if [ "$QUICK" = 0 ]; then
	run c8k_spray --topo clos:planes=8,leaves=256,spines=32,hosts=32,rate=100G,delay=500ns \
		--workload permutation:size=2M --stalls on
	run c8k_spray_slot --topo clos:planes=8,leaves=256,spines=32,hosts=32,rate=100G,delay=500ns \
		--workload permutation:size=2M --stalls on --spray-slot topo
	run ft8k_spray --topo fattree:k=32,rate=100G,delay=500ns --workload permutation:size=2M
	# The step at 8,192 hosts: expert-parallel groups of 256 (32 x 8),
	# a 64-packet window and 64 EVs per pair keep it near 8 GiB.
	run step_c8k --topo clos:planes=8,leaves=256,spines=32,hosts=32,rate=100G,delay=500ns \
		--window 64 --paths 64 \
		--workload step:steps=3,ep=256,tokens=32,grad=128K,bucket=512K
fi

echo
printf '%-18s %6s %-6s %8s %8s %8s %6s %10s %8s %9s %8s %s\n' scenario hosts mode p50 p99 max \
	to_bad events wall_s Mev/s RSS_MiB failover
for f in "$OUT"/*.json; do
	jq -r --arg n "$(basename "$f" .json)" '
	  [$n, (.scenario.hosts|tostring), .scenario.mode,
	   (.fct_vs_ideal.p50|tostring), (.fct_vs_ideal.p99|tostring), (.fct_vs_ideal.max|tostring),
	   (.ev_changes.to_assumed_bad|tostring), (.result.events|tostring), (.timing.wall_s|tostring),
	   ((.timing.events_per_s/1e6*100|floor)/100|tostring),
	   ((.timing.maxrss_kb/1024)|floor|tostring),
	   ((.faults[0] // null) as $x | if $x == null then "-" else
	     "detect +\($x.first_detect_ns // -1)..\($x.last_detect_ns // -1) ns, goodput +\($x.goodput_recovery_ns) ns" end)]
	  | @tsv' "$f"
done | awk -F'\t' '{ printf "%-18s %6s %-6s %8s %8s %8s %6s %10s %8s %9s %8s %s\n", $1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12 }'
