/* mpi_coll: the Open MPI baseline of the fabric collective benchmark, in
 * the form of nccl-tests and of mrc-coll-perf (tools/coll-perf/perf.c).
 *
 *   mpirun ... mpi_coll [-C all_reduce|alltoall] [-b 1K] [-e 256M] [-f 2]
 *                       [-c 1] [-n 20] [-w 5] [-T seconds] [-L file]
 *
 * MPI_Allreduce (float, sum) or MPI_Alltoall (float).  Columns, busbw
 * factors (all-reduce 2(n-1)/n, all-to-all (n-1)/n), size conventions
 * (the all-to-all size is the whole buffer), input values and the #wrong
 * count (coll/verify.c, linked in: the same known inputs, checked element
 * by element) are mrc-coll-perf's, so the two tools' rows compare directly.
 * time is the slowest rank's mean over -n timed runs after -w warm-ups.
 * -T bounds each size: a rank whose size has not finished within that many
 * seconds prints "# stalled" and exits 3, which makes mpirun end the job
 * (a flow hashed onto a blackholed spine stalls TCP for minutes); so does
 * MPI_Init that has not returned within it; -L appends that line to a file
 * too. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/support/mpi_stall.h"
#include "coll/coll_int.h"

static volatile size_t cur_size;
static int my_rank = -1;

static const char *stall_file, *env_rank = "?";

/* Appends s[0..len) to fd, ignoring errors (we are about to exit). */
static void put(int fd, const char *s, size_t len)
{
	while (len) {
		ssize_t k = write(fd, s, len);
		if (k <= 0)
			return;
		s += k;
		len -= (size_t)k;
	}
}

/* The -T bound.  Async-signal-safe: formats by hand into a stack buffer;
 * writes to stdout and, with -L, to a file, since mpirun's forwarding of
 * stdout may ride the very connection that stalled. */
static void on_alarm(int sig)
{
	char buf[128];
	size_t len = mrc__stall_line(buf, sizeof(buf), env_rank,
				     my_rank < 0 ? ", in MPI_Init (launch or wire-up)" : ", size ",
				     my_rank < 0 ? -1 : (int64_t)cur_size);
	put(STDOUT_FILENO, buf, len);
	if (stall_file) {
		int fd = open(stall_file, O_WRONLY | O_APPEND | O_CREAT, 0644);
		if (fd >= 0)
			put(fd, buf, len);
	}
	_exit(3);
	(void)sig;
}

static int run(int kind, const float *in, float *out, size_t count, MPI_Comm w)
{
	if (kind == MRC__C_ALLREDUCE)
		return MPI_Allreduce(in, out, (int)count, MPI_FLOAT, MPI_SUM, w);
	return MPI_Alltoall(in, (int)count, MPI_FLOAT, out, (int)count, MPI_FLOAT, w);
}

int main(int argc, char **argv)
{
	struct mrc__coll_sweep sw = { .minb = 1024, .maxb = 256u << 20, .factor = 2, .check = 1,
				      .iters = 20, .warm = 5 };
	int kind = MRC__C_ALLREDUCE, tmo = 0, o, n, r = 0;
	MPI_Comm w = MPI_COMM_WORLD;

	/* Options first, so that -T bounds MPI_Init too (Open MPI's mpirun
	 * passes no arguments of its own to the program). */
	while ((o = getopt(argc, argv, "C:b:e:f:c:n:w:T:L:h")) != -1) {
		switch (o) {
		case 'C':
			kind = !strcmp(optarg, "all_reduce") ? MRC__C_ALLREDUCE
			     : !strcmp(optarg, "alltoall") || !strcmp(optarg, "all_to_all") ? MRC__C_ALLTOALL
			     : -1;
			break;
		case 'T': tmo = atoi(optarg); break;
		case 'L': stall_file = optarg; break;
		default:
			if (mrc__coll_sweep_opt(&sw, o, optarg))
				kind = -1;
			break;
		}
	}
	env_rank = mrc__stall_arm(tmo, on_alarm);
	MPI_Init(&argc, &argv);
	alarm(0);
	MPI_Comm_size(w, &n);
	MPI_Comm_rank(w, &my_rank);
	if (kind < 0 || sw.factor <= 1 || sw.iters < 1 || sw.warm < 0 || sw.minb > sw.maxb ||
	    tmo < 0) {
		if (my_rank == 0)
			fprintf(stderr, "usage: see the header of bench/mpi_coll.c and docs/coll.md\n");
		MPI_Finalize();
		return 2;
	}
	double busf = kind == MRC__C_ALLREDUCE ? 2.0 * (n - 1) / n : (double)(n - 1) / n;
	if (my_rank == 0) {
		char lib[MPI_MAX_LIBRARY_VERSION_STRING];
		int len;
		MPI_Get_library_version(lib, &len);
		lib[strcspn(lib, ",\n")] = 0;
		printf("# mpi_coll %s: %d ranks, %s\n", mrc__coll_name[kind], n, lib);
		mrc__coll_perf_header();
		fflush(stdout);
	}
	long long total_wrong = 0;
	for (size_t size = sw.minb; size <= sw.maxb && !r; size = mrc__coll_sweep_next(&sw, size)) {
		size_t total = size / sizeof(float);
		size_t count = kind == MRC__C_ALLREDUCE ? total : total / (size_t)n;
		size_t m = mrc__coll_in_count(kind, (uint32_t)n, count);   /* = out count here */
		float *in = malloc((m ? m : 1) * sizeof(float) * 2), *out = in + (m ? m : 1);
		if (!in) {
			fprintf(stderr, "mpi_coll: malloc: %s\n", strerror(ENOMEM));
			MPI_Abort(w, 1);
		}
		cur_size = m * sizeof(float);
		if (tmo)
			alarm((unsigned)tmo);
		mrc__coll_fill(kind, in, (uint32_t)n, (uint32_t)my_rank, count, MRC_COLL_FLOAT32,
			       MRC_COLL_SUM, 0);
		for (int i = 0; i < sw.warm && !r; i++)
			r = run(kind, in, out, count, w);
		if (!r)
			r = MPI_Barrier(w);
		double t0 = MPI_Wtime();
		long long wrong = 0;
		for (int i = 0; i < sw.iters && !r; i++) {
			r = run(kind, in, out, count, w);
			if (!r && sw.check == 2)
				wrong += (long long)mrc__coll_wrong(kind, out, (uint32_t)n, (uint32_t)my_rank,
								    count, MRC_COLL_FLOAT32, MRC_COLL_SUM, 0);
		}
		double us = (MPI_Wtime() - t0) * 1e6 / sw.iters, tmax = us;
		/* -c 1: one more run after the timed ones, checked (the inputs are
		 * never overwritten: out of place). */
		if (!r && sw.check == 1) {
			memset(out, 0, m * sizeof(float));
			r = run(kind, in, out, count, w);
			wrong = (long long)mrc__coll_wrong(kind, out, (uint32_t)n, (uint32_t)my_rank, count,
							   MRC_COLL_FLOAT32, MRC_COLL_SUM, 0);
		}
		if (!r)
			r = MPI_Allreduce(&us, &tmax, 1, MPI_DOUBLE, MPI_MAX, w);
		if (!r)
			r = MPI_Allreduce(MPI_IN_PLACE, &wrong, 1, MPI_LONG_LONG, MPI_SUM, w);
		alarm(0);
		total_wrong += wrong;
		if (!r && my_rank == 0)
			mrc__coll_perf_row(cur_size, m, "float", kind == MRC__C_ALLREDUCE ? "sum" : "none",
					   -1, tmax, busf, wrong);
		free(in);
	}
	if (r) {
		/* MPI's default handler aborts first; this is for MPI_ERRORS_RETURN. */
		fprintf(stderr, "mpi_coll: %s: MPI error %d\n", mrc__coll_name[kind], r);
		MPI_Abort(w, 1);
	}
	if (my_rank == 0)
		printf("# Out of bounds values : %lld %s\n", total_wrong, total_wrong ? "FAILED" : "OK");
	MPI_Finalize();
	return total_wrong ? 1 : 0;
}
