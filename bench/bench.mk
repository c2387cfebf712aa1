# Benchmarks (make bench): each links libmrctest.a and libmrccore.a.
BENCHES += bench_engine
bench_engine_SRCS := bench/bench_engine.c
# Helper program of the fabric benchmarks (bench/fabric/latency.sh), not a
# benchmark itself: scripts/run-bench.sh does not run it on its own.
BENCHES += pingpong
pingpong_SRCS := bench/pingpong.c
