/* mpi_coll: the Open MPI baseline of the fabric collective benchmark, in
 * the form of nccl-tests and of mrc-coll-perf (coll/perf.c).
 *
 *   mpirun ... mpi_coll [-C all_reduce|alltoall] [-b 1K] [-e 256M] [-f 2]
 *                       [-c 1] [-n 20] [-w 5] [-T seconds]
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
 * MPI_Init that has not returned within it. */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "coll/coll_int.h"

static volatile size_t cur_size;
static int my_rank = -1;

/* Async-signal-safe: formats by hand into a stack buffer, then _exit. */
static void on_alarm(int sig)
{
	char buf[96], num[24];
	int k = 0, len;
	size_t v = cur_size;
	if (my_rank < 0) {
		static const char m[] = "# stalled: in MPI_Init (the launch or the wire-up)\n";
		if (write(STDOUT_FILENO, m, sizeof(m) - 1) < 0)
			_exit(4);
		_exit(3);
	}
	do
		num[k++] = (char)('0' + v % 10);
	while ((v /= 10) && k < 23);
	len = snprintf(buf, sizeof(buf), "# stalled: rank %d, size ", my_rank);
	while (k && len < (int)sizeof(buf) - 2)
		buf[len++] = num[--k];
	buf[len++] = '\n';
	if (write(STDOUT_FILENO, buf, (size_t)len) < 0)
		_exit(4);
	_exit(3);
	(void)sig;
}

/* "256M": bytes, with a K, M or G suffix (powers of 1024), as mrc-coll-perf. */
static size_t parse_size(const char *s)
{
	char *end;
	double v = strtod(s, &end);
	const char *u = *end ? strchr("KMG", toupper((unsigned char)*end)) : NULL;
	return (size_t)(u ? v * (double)(1ull << (10 * (u - "KMG" + 1))) : v);
}

static int run(int kind, const float *in, float *out, size_t count, MPI_Comm w)
{
	if (kind == MRC__C_ALLREDUCE)
		return MPI_Allreduce(in, out, (int)count, MPI_FLOAT, MPI_SUM, w);
	return MPI_Alltoall(in, (int)count, MPI_FLOAT, out, (int)count, MPI_FLOAT, w);
}

int main(int argc, char **argv)
{
	size_t minb = 1024, maxb = 256u << 20;
	double factor = 2;
	int check = 1, iters = 20, warm = 5, kind = MRC__C_ALLREDUCE, tmo = 0, o, n, r = 0;
	MPI_Comm w = MPI_COMM_WORLD;

	/* Options first, so that -T bounds MPI_Init too (Open MPI's mpirun
	 * passes no arguments of its own to the program). */
	while ((o = getopt(argc, argv, "C:b:e:f:c:n:w:T:h")) != -1) {
		switch (o) {
		case 'C':
			kind = !strcmp(optarg, "all_reduce") ? MRC__C_ALLREDUCE
			     : !strcmp(optarg, "alltoall") || !strcmp(optarg, "all_to_all") ? MRC__C_ALLTOALL
			     : -1;
			break;
		case 'b': minb = parse_size(optarg); break;
		case 'e': maxb = parse_size(optarg); break;
		case 'f': factor = atof(optarg); break;
		case 'c': check = atoi(optarg); break;
		case 'n': iters = atoi(optarg); break;
		case 'w': warm = atoi(optarg); break;
		case 'T': tmo = atoi(optarg); break;
		default: kind = -1; break;
		}
	}
	signal(SIGALRM, on_alarm);
	if (tmo > 0)
		alarm((unsigned)tmo);
	MPI_Init(&argc, &argv);
	alarm(0);
	MPI_Comm_size(w, &n);
	MPI_Comm_rank(w, &my_rank);
	if (kind < 0 || factor <= 1 || iters < 1 || warm < 0 || minb > maxb || tmo < 0) {
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
		printf("#%12s %12s %8s %6s %6s %10s %8s %8s %7s\n", "size", "count", "type", "redop",
		       "root", "time", "algbw", "busbw", "#wrong");
		printf("#%12s %12s %8s %6s %6s %10s %8s %8s %7s\n", "(B)", "(elements)", "", "", "",
		       "(us)", "(GB/s)", "(GB/s)", "");
		fflush(stdout);
	}
	long long total_wrong = 0;
	for (size_t size = minb; size <= maxb && !r;
	     size = (size_t)(size * factor) > size ? (size_t)(size * factor) : size + 1) {
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
		for (int i = 0; i < warm && !r; i++)
			r = run(kind, in, out, count, w);
		if (!r)
			r = MPI_Barrier(w);
		double t0 = MPI_Wtime();
		long long wrong = 0;
		for (int i = 0; i < iters && !r; i++) {
			r = run(kind, in, out, count, w);
			if (!r && check == 2)
				wrong += (long long)mrc__coll_wrong(kind, out, (uint32_t)n, (uint32_t)my_rank,
								    count, MRC_COLL_FLOAT32, MRC_COLL_SUM, 0);
		}
		double us = (MPI_Wtime() - t0) * 1e6 / iters, tmax = us;
		/* -c 1: one more run after the timed ones, checked (the inputs are
		 * never overwritten: out of place). */
		if (!r && check == 1) {
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
		double algbw = tmax > 0 ? (double)cur_size / tmax / 1e3 : 0;
		if (!r && my_rank == 0) {
			printf(" %12zu %12zu %8s %6s %6d %10.1f %8.3f %8.3f %7lld\n", cur_size, m,
			       "float", kind == MRC__C_ALLREDUCE ? "sum" : "none", -1, tmax, algbw,
			       algbw * busf, wrong);
			fflush(stdout);
		}
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
