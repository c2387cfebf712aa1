# Benchmarks (make bench): each links libmrctest.a and libmrccore.a.
BENCHES += bench_engine
bench_engine_SRCS := bench/bench_engine.c
