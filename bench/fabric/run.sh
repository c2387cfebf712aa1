#!/bin/sh
# Driver of the fabric benchmarks (make bench): runs each scenario script
# (each builds its own rate-limited fabric, runs every contender and tears
# the fabric down), then writes bench/results/fabric.md and the PNG plots.
# Usage: bench/fabric/run.sh [BUILD_DIR] [SCENARIO...]
#   SCENARIO "daemon" (bench/fabric/daemon.sh): mrcd + libmrc vs raw UDP on
#   an unlimited fabric; it writes bench/results/daemon.md, not fabric.md
#   SCENARIO "auth" (bench/fabric/auth.sh): tokens vs AES-GCM vs raw UDP;
#   it writes bench/results/auth.md
#   SCENARIO "coll" (bench/fabric/coll.sh): libmrc-coll vs Open MPI
#   collectives and the MoE layer; it writes bench/results/coll.md
#   SCENARIO "datapath" (bench/fabric/datapath.sh): udp, af_xdp and dpdk side by
#   side; it writes bench/results/datapath.md
#   SCENARIO "libfabric" (bench/fabric/libfabric.sh): fabtests over the mrc
#   provider vs tcp;ofi_rxm, Open MPI over it vs the TCP BTL; it writes
#   bench/results/libfabric.md
#   SCENARIO "tclass" (bench/fabric/tclass.sh): urgent ping-pong p99 idle
#   and during a 256 MiB bulk transfer, with and without traffic classes;
#   it writes bench/results/tclass.md
#   MRC_BENCH_REPS (default 5; failover: MRC_BENCH_FAILOVER_REPS, default 3)
set -eu
B=${1:-build}
[ $# -gt 0 ] && shift
SCENS=${*:-"bulk failover collisions latency manyqps daemon auth coll datapath libfabric tclass"}
export B
if [ "$(id -u)" != 0 ]; then
	echo "bench/fabric: needs root (network namespaces); fabric benchmarks skipped" >&2
	exit 0
fi
t0=$(date +%s)
n=0; total=$(echo $SCENS | wc -w)
for s in $SCENS; do
	n=$((n + 1))
	echo "=== fabric [$n/$total] $s ($(($(date +%s) - t0)) s elapsed)"
	if [ "$s" = daemon ]; then
		# mrcd + libmrc on an unlimited fabric (bash; bench/results/daemon.md)
		MRC_BENCH_REPS=${MRC_BENCH_REPS:-5} bash bench/fabric/daemon.sh "$B"
		bash bench/fabric/daemon_md.sh bench/results
	elif [ "$s" = auth ]; then
		# the cost of authentication: tokens vs AES-GCM vs raw UDP (bash;
		# bench/results/auth.md)
		MRC_BENCH_REPS=${MRC_BENCH_REPS:-5} bash bench/fabric/auth.sh "$B"
	elif [ "$s" = coll ]; then
		# libmrc-coll vs Open MPI (bash; bench/results/coll.md)
		bash bench/fabric/coll.sh "$B"
	elif [ "$s" = libfabric ]; then
		# libfabric clients and Open MPI over the mrc provider vs tcp;ofi_rxm
		# and the TCP BTL (bash; bench/results/libfabric.md)
		MRC_BENCH_REPS=${MRC_BENCH_REPS:-3} bash bench/fabric/libfabric.sh "$B"
	elif [ "$s" = tclass ]; then
		# urgent vs bulk (bash; bench/results/tclass.md)
		MRC_BENCH_REPS=${MRC_BENCH_REPS:-5} bash bench/fabric/tclass.sh "$B"
	elif [ "$s" = failover ]; then
		MRC_BENCH_REPS=${MRC_BENCH_FAILOVER_REPS:-3} sh "bench/fabric/$s.sh"
	else
		MRC_BENCH_REPS=${MRC_BENCH_REPS:-5} sh "bench/fabric/$s.sh"
	fi
done
python3 bench/fabric/report.py bench/results
echo "=== fabric benchmarks done in $(($(date +%s) - t0)) s: bench/results/fabric.md"
