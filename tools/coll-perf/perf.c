/* mrc-coll-perf: collective bandwidth in the form of nccl-tests.
 *
 *   mrc-coll-perf [-C all_reduce|reduce_scatter|all_gather|broadcast|alltoall|moe]
 *                 [-b 8] [-e 256M] [-f 2] [-c 1] [-n 20] [-w 5] [-d float|all]
 *                 [-o sum|all] [-r root] [-i] [-S sock] [-s sid] [-H host] [-T ms]
 *                 [-N count,count,...]
 *
 * One process per rank: size and rank from the environment
 * (mrc_coll_cfg_from_env: MRC_COLL_SIZE/RANK or an MPI launcher's).
 * Columns as nccl-tests: size (bytes), count (elements), type, redop,
 * root, time (us, the slowest rank's mean), algbw = size / time, busbw =
 * algbw x the collective's factor (all-reduce 2(n-1)/n; reduce-scatter,
 * all-gather, all-to-all (n-1)/n; broadcast 1), #wrong: elements that
 * differ from the expected result, summed over the ranks (-c 1: after the
 * timed runs, one more on fresh inputs, checked element by element; -c 2:
 * every timed run is refilled and checked, for tests under faults).
 * -N runs the given counts (elements per call, as the API takes them)
 * instead of the -b/-e/-f sweep.
 * -C moe: one MoE layer, flat vs 2-D (coll/perf_moe.c): -M tokens,hidden,
 * experts,top_k[,ranks per node] (default 4096,4096,8,2), -n runs.
 * -C overlap: compute overlapped with bucketed all-reduces, blocking vs
 * non-blocking side by side (tools/coll-perf/perf_overlap.c): -O buckets,
 * bucket bytes,compute us per bucket[,us between tests[,1: the stub
 * sleeps, not spins]] (default 8,4194304,2000,100,0), -n steps, -w warm-up
 * steps.
 * -C pregate: pre-gated against plain MoE dispatch with 0, 10 and 30 %
 * mispredicted experts (tools/coll-perf/perf_pregate.c): -G tokens,hidden,
 * experts,top_k,compute us,slack %[,ranks per node: 2-D] (default
 * 1024,1024,8,2,5000,20,0), -n steps, -w warm-up steps. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "coll/coll_int.h"
#include "common/parse.h"
#include "tools/coll-perf/perf_moe.h"
#include "tools/coll-perf/perf_overlap.h"
#include "tools/coll-perf/perf_pregate.h"

static int lookup(const char *s, int n, const char *(*name)(int))
{
	for (int i = 0; i < n; i++)
		if (!strcmp(s, name(i)))
			return i;
	return strcmp(s, "all") ? -2 : -1;
}

static const char *coll_name(int k) { return mrc__coll_name[k]; }

/* -o's value, whole and within lo..hi, or exit 2 saying so. */
static uint64_t num(int o, const char *arg, uint64_t lo, uint64_t hi)
{
	uint64_t v;
	if (mrc__parse_u64(arg, lo, hi, &v)) {
		fprintf(stderr, "mrc-coll-perf: -%c '%s': want a whole number from %llu to %llu\n", o,
			arg, (unsigned long long)lo, (unsigned long long)hi);
		exit(2);
	}
	return v;
}

/* -o's comma-separated list of at most max whole numbers in lo..hi. */
static size_t num_list(int o, char *arg, size_t *out, size_t max, uint64_t lo, uint64_t hi)
{
	size_t k = 0;
	char *save = NULL;
	for (char *t = strtok_r(arg, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		if (k == max) {
			fprintf(stderr, "mrc-coll-perf: -%c: at most %zu values\n", o, max);
			exit(2);
		}
		out[k++] = (size_t)num(o, t, lo, hi);
	}
	return k;
}

static void die(const char *what, int err)
{
	fprintf(stderr, "mrc-coll-perf: %s: %s\n", what, strerror(-err));
	exit(1);
}

int main(int argc, char **argv)
{
	struct mrc__coll_sweep sw = { .minb = 8, .maxb = 256u << 20, .factor = 2, .check = 1,
				      .iters = 20, .warm = 5 };
	int kind = MRC__C_ALLREDUCE, dt = MRC_COLL_FLOAT32;
	int op = MRC_COLL_SUM, inplace = 0, o;
	uint32_t root = 0;
	size_t list[64], nlist = 0;
	size_t moe[5] = { 4096, 4096, 8, 2, 0 };
	size_t ovl[5] = { 8, 4u << 20, 2000, 100, 0 };
	int overlap = 0;
	size_t pgate[7] = { 1024, 1024, 8, 2, 5000, 20, 0 };
	int pregate = 0;
	struct mrc_coll_cfg cfg;
	int r = mrc_coll_cfg_from_env(&cfg);
	if (r)
		die("MRC_COLL_SIZE/MRC_COLL_RANK (or an MPI launcher's variables)", r);
	while ((o = getopt(argc, argv, "C:b:e:f:c:n:w:d:o:r:iS:s:H:T:N:M:O:G:h")) != -1) {
		switch (o) {
		case 'C':
			overlap = !strcmp(optarg, "overlap");
			pregate = !strcmp(optarg, "pregate");
			kind = overlap || pregate ? MRC__C_ALLREDUCE
			     : strcmp(optarg, "moe") ? lookup(optarg, MRC__C_N, coll_name) : MRC__C_N;
			break;
		case 'd': dt = lookup(optarg, MRC_COLL_NTYPES, mrc_coll_dtype_name); break;
		case 'o': op = lookup(optarg, MRC_COLL_NOPS, mrc_coll_op_name); break;
		case 'r': root = (uint32_t)num(o, optarg, 0, UINT32_MAX); break;
		case 'i': inplace = 1; break;
		case 'S': cfg.sock = optarg; break;
		case 's': cfg.sid = (uint32_t)num(o, optarg, 0, UINT32_MAX); break;
		case 'H': cfg.root_host = (uint32_t)num(o, optarg, 0, UINT32_MAX); break;
		case 'T': cfg.timeout_ms = (int)num(o, optarg, 0, INT32_MAX); break;
		case 'N': nlist = num_list(o, optarg, list, 64, 0, 1ull << 40); break;
		case 'M': num_list(o, optarg, moe, 5, 0, 1ull << 32); break;
		case 'O': num_list(o, optarg, ovl, 5, 0, 1ull << 34); break;
		case 'G': num_list(o, optarg, pgate, 7, 0, 1ull << 32); break;
		default:
			if (!mrc__coll_sweep_opt(&sw, o, optarg))
				break;
			fprintf(stderr, "usage: see the header of coll/perf.c and docs/coll.md\n");
			return 2;
		}
	}
	if (kind < 0 || dt == -2 || op == -2 || sw.factor <= 1 || sw.iters < 1 || sw.minb > sw.maxb ||
	    (kind == MRC__C_ALLTOALL && inplace)) {
		fprintf(stderr, "mrc-coll-perf: bad arguments\n");
		return 2;
	}
	struct mrc_coll *c;
	if ((r = mrc_coll_init(&cfg, &c)))
		die("mrc_coll_init", r);
	if (overlap) {
		r = mrc__perf_overlap(c, ovl[0], ovl[1], (double)ovl[2], (double)ovl[3], (int)ovl[4], sw.iters,
				      sw.warm);
		mrc_coll_destroy(c);
		if (r && r != -EPROTO)
			die("overlap", r);
		return r ? 1 : 0;
	}
	if (pregate) {
		r = mrc__perf_pregate(c, pgate[0], pgate[1], (uint32_t)pgate[2], (uint32_t)pgate[3],
				      (double)pgate[4], (unsigned)pgate[5], (uint32_t)pgate[6], sw.iters,
				      sw.warm);
		mrc_coll_destroy(c);
		if (r && r != -EPROTO)
			die("pregate", r);
		return r ? 1 : 0;
	}
	if (kind == MRC__C_N) {
		r = mrc__perf_moe(c, moe[0], moe[1], (uint32_t)moe[2], (uint32_t)moe[3],
				  (uint32_t)moe[4], sw.iters);
		mrc_coll_destroy(c);
		if (r && r != -EPROTO)
			die("moe", r);
		return r ? 1 : 0;
	}
	uint32_t n = mrc_coll_size(c), me = mrc_coll_rank(c);
	int reduces = kind == MRC__C_ALLREDUCE || kind == MRC__C_REDUCE_SCATTER;
	double busf = kind == MRC__C_ALLREDUCE ? 2.0 * (n - 1) / n
		    : kind == MRC__C_BROADCAST ? 1.0 : (double)(n - 1) / n;
	if (me == 0) {
		printf("# mrc-coll-perf %s: %u ranks, chunk %u, window %u, %s; shared memory with %u peers\n",
		       mrc__coll_name[kind], n, c->chunk, c->window, inplace ? "in place" : "out of place",
		       c->nshm);
		mrc__coll_perf_header();
	}
	size_t total_wrong = 0;
	/* Types and ops to run: one, or all (ops only for reductions). */
	int d0 = dt < 0 ? 0 : dt, d1 = dt < 0 ? MRC_COLL_NTYPES : dt + 1;
	int p0 = !reduces ? MRC_COLL_SUM : op < 0 ? 0 : op;
	int p1 = !reduces ? MRC_COLL_SUM + 1 : op < 0 ? MRC_COLL_NOPS : op + 1;
	for (int d = d0; d < d1; d++)
	for (int p = p0; p < p1; p++)
	for (size_t size = nlist ? 0 : sw.minb, li = 0; nlist ? li < nlist : size <= sw.maxb;
	     li++, size = mrc__coll_sweep_next(&sw, size)) {
		size_t esz = mrc_coll_dtype_size(d);
		size_t total = size / esz;
		/* The per-rank count the call takes (nccl-tests' convention:
		 * size is the whole buffer of all-gather, reduce-scatter and
		 * all-to-all). */
		size_t count = kind == MRC__C_ALLREDUCE || kind == MRC__C_BROADCAST ? total : total / n;
		if (nlist)
			count = list[li];
		size_t inb = mrc__coll_in_count(kind, n, count) * esz;
		size_t outb = mrc__coll_out_count(kind, n, count) * esz;
		uint8_t *in = malloc(inb + outb + 64), *out = in + ((inb + 63) & ~(size_t)63);
		if (!in)
			die("malloc", -ENOMEM);
		/* In place: the input lives where the call expects it inside out. */
		uint8_t *src;
		mrc__coll_place(kind, inplace, me, count, esz, in, out, &src, &out);
		mrc__coll_fill(kind, src, n, me, count, d, p, root);
		for (int i = 0; i < sw.warm && !r; i++)
			r = mrc__coll_call(c, kind, src, out, count, d, p, root);
		if (!r)
			r = mrc_coll_barrier(c);
		double t0 = mrc__mono_s();
		int64_t wrong = 0;
		for (int i = 0; i < sw.iters && !r; i++) {
			if (sw.check == 2)
				mrc__coll_fill(kind, src, n, me, count, d, p, root);
			r = mrc__coll_call(c, kind, src, out, count, d, p, root);
			if (!r && sw.check == 2)
				wrong += (int64_t)mrc__coll_wrong(kind, out, n, me, count, d, p, root);
		}
		double us = (mrc__mono_s() - t0) * 1e6 / sw.iters;
		if (!r && sw.check) {
			mrc__coll_fill(kind, src, n, me, count, d, p, root);
			r = mrc__coll_call(c, kind, src, out, count, d, p, root);
			wrong = (int64_t)mrc__coll_wrong(kind, out, n, me, count, d, p, root);
		}
		double tmax = us;
		if (!r)
			r = mrc_coll_allreduce(c, &tmax, &tmax, 1, MRC_COLL_FLOAT64, MRC_COLL_MAX);
		if (!r)
			r = mrc_coll_allreduce(c, &wrong, &wrong, 1, MRC_COLL_INT64, MRC_COLL_SUM);
		if (r)
			die(mrc__coll_name[kind], r);
		total_wrong += (size_t)wrong;
		size_t bytes = mrc__coll_out_count(kind, n, count) > count ?
			mrc__coll_out_count(kind, n, count) * esz : mrc__coll_in_count(kind, n, count) * esz;
		if (me == 0)
			mrc__coll_perf_row(bytes, bytes / esz, mrc_coll_dtype_name(d),
					   reduces ? mrc_coll_op_name(p) : "none",
					   kind == MRC__C_BROADCAST ? (int)root : -1, tmax, busf,
					   (long long)wrong);
		free(in);
	}
	if (me == 0)
		printf("# Out of bounds values : %zu %s\n", total_wrong, total_wrong ? "FAILED" : "OK");
	mrc_coll_destroy(c);
	return total_wrong ? 1 : 0;
}
