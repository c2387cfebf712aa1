#!/bin/sh
# Runs each benchmark binary given (from build dir $1), tees its output to
# bench/results/<name>.md and prints progress, then the fabric benchmarks
# (bench/fabric/run.sh: mrc vs TCP, MPTCP, single-path and raw UDP on an
# emulated fabric; needs root, skipped without it).
# Usage: run-bench.sh B NAME...
#   MRC_BENCH_FABRIC=0 skips the fabric benchmarks; MRC_BENCH_FABRIC="bulk
#   latency" runs only those scenarios.
set -e
b="$1"
shift
mkdir -p bench/results
n=0
for name in "$@"; do
	case $name in
	pingpong) continue ;;   # helper of bench/fabric/latency.sh, not a benchmark
	esac
	n=$((n + 1))
	echo "=== [$n] $name"
	"$b/bench/$name" | tee "bench/results/$name.md"
done
echo "=== $n engine benchmark(s) done; results in bench/results/"
# The engine before authentication (wire v1) vs now, side by side: the
# "authentication off" baseline (bench/results/auth_off.md).
echo "=== auth_off"
./bench/auth_off.sh "$b"
# mrcsim with the engine of cb92cd3 vs now (bench/results/sim_base.md)
# and the simulator of 51a60aa vs now (bench/results/sim_speed.md);
# MRC_BENCH_SIM=quick leaves out the 8,192-host rows, 0 skips it.
case ${MRC_BENCH_SIM:-1} in
0) ;;
quick) echo "=== sim_base"; ./bench/sim_base.sh "$b" --quick
	echo "=== sim_speed"; ./bench/sim_speed.sh "$b" --quick ;;
*) echo "=== sim_base"; ./bench/sim_base.sh "$b"
	echo "=== sim_speed"; ./bench/sim_speed.sh "$b" ;;
esac
case ${MRC_BENCH_FABRIC:-1} in
0) ;;
1) ./bench/fabric/run.sh "$b" ;;
*) ./bench/fabric/run.sh "$b" $MRC_BENCH_FABRIC ;;
esac
# The NCCL net plugin against libmrc directly (bench/results/nccl.md;
# needs root, skipped without it)
[ "${MRC_BENCH_FABRIC:-1}" = 0 ] || ./bench/nccl.sh "$b"
# The client path (NCCL plugin, libmrc) beside TCP on one loopback mrcd,
# against an older build when MRC_BENCH_BASE names one (no root;
# bench/results/client-path.md)
./bench/client-path.sh "${MRC_BENCH_BASE:-$b}" "$b"
# ... and on the emulated fabric, beside raw UDP, TCP and iperf3 (root;
# bench/results/client-path-fabric.md)
[ "${MRC_BENCH_FABRIC:-1}" = 0 ] || B="$b" ./bench/fabric/client-path.sh
# bench/results/daemon.md: bench_ring, bench_qpmem and (when it ran) the
# daemon fabric scenario together
[ ! -f bench/results/bench_ring.md ] || bash bench/fabric/daemon_md.sh bench/results
