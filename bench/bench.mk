# Benchmarks (make bench): each links libmrctest.a and libmrccore.a.
BENCHES += bench_engine
bench_engine_SRCS := bench/bench_engine.c
# Helper program of the fabric benchmarks (bench/fabric/latency.sh), not a
# benchmark itself: scripts/run-bench.sh does not run it on its own.
BENCHES += pingpong
pingpong_SRCS := bench/pingpong.c
# The daemon benchmarks (bench/results/daemon.md): the submission ring alone
# and through a real mrcd on loopback, and mrcd's memory per idle QP.  Both
# start their own mrcd (build/bin/mrcd) on loopback; libmrc comes from
# libmrctest.a (lib/lib.mk puts its objects there).
BENCHES += bench_ring
bench_ring_SRCS := bench/bench_ring.c
BENCHES += bench_qpmem
bench_qpmem_SRCS := bench/bench_qpmem.c
# The cost of authentication per packet (issue 12): engine with tokens,
# CTRL envelope, AES-256-GCM vs CRC-32C (bench/results/bench_auth.md).
BENCHES += bench_auth
bench_auth_SRCS := bench/bench_auth.c
# Adaptive polling of polled (GPU-fed) rings: post-to-pickup busy, parked
# and doorbell, and the idle daemon's CPU with 0, 1 and 1,000 parked
# polled QPs (bench/results/bench_poll.md).
BENCHES += bench_poll
bench_poll_SRCS := bench/bench_poll.c
# Posting from mrc/gpu.h host threads vs libmrc's mrc_post_write, posts/s
# and post-to-pickup (bench/results/bench_gpu_post.md).
BENCHES += bench_gpu_post
bench_gpu_post_SRCS := bench/bench_gpu_post.c
# libmrc-coll on loopback: MoE flat vs 2-D, all-reduce ring vs tree
# (bench/results/bench_coll.md).
BENCHES += bench_coll
bench_coll_SRCS := bench/bench_coll.c
# The Open MPI baseline of the fabric collective benchmark (bench/fabric/mpi.sh):
# MPI_Allreduce and MPI_Alltoall in mrc-coll-perf's columns, with its
# inputs and checks (coll/verify.c from libmrc-coll.a).  Built with mpicc
# (scripts/deps.sh installs openmpi-bin and libopenmpi-dev) and only where
# mpicc exists: elsewhere `make bench` says it skipped it.
MPICC ?= $(shell command -v mpicc 2>/dev/null)
ifneq ($(MPICC),)
all: $(B)/bench/mpi_coll
$(B)/bench/mpi_coll: bench/mpi_coll.c $(B)/lib/libmrc-coll.a $(B)/lib/libmrc.a
	@mkdir -p $(dir $@)
	$(MPICC) $(CFLAGS_ALL) $(LDFLAGS_ALL) -o $@ $^ $(COLL_LDLIBS) -lm -lpthread
else
bench: mpi-coll-skipped
.PHONY: mpi-coll-skipped
mpi-coll-skipped:
	@echo "bench/mpi_coll: skipped (no mpicc; scripts/deps.sh installs openmpi-bin libopenmpi-dev)"
endif
# The engine's cost per loop round with 0, 1,000 and 10,000 idle QPs
# (mrce_next_deadline, an idle mrce_tick; issue 16: transport/timers.c).
BENCHES += bench_timers
bench_timers_SRCS := bench/bench_timers.c
# WRITE stream from application memory registered with mrc_reg_mem vs an
# mrc_alloc_mr region vs a bounce copy (the NCCL plugin's path), and the
# cost of registering (bench/results/appmem.md).
BENCHES += bench_appmem
bench_appmem_SRCS := bench/bench_appmem.c
# Stragglers (issue 34 item 4): helper of bench/fabric/strag.sh, one rank
# of a job that injects a late rank and prints what mrc_coll_straggler
# names (bench/results/strag.md); alone it says so and exits.
BENCHES += strag_run
strag_run_SRCS := bench/strag_run.c
# h-floor: the power-floor hint's cost per WRITE round trip, off vs on
# (bench/results/bench_floor.md).
BENCHES += bench_floor
bench_floor_SRCS := bench/bench_floor.c
# h-house: mrc_qp_stats per QP vs mrc_qp_stats_n (one round trip per 12
# QPs), the read mrc_coll_straggler makes (bench/results/qpstats.md).
BENCHES += bench_qpstats
bench_qpstats_SRCS := bench/bench_qpstats.c
