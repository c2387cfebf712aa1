/* mrc-coll-perf's overlap mode (-C overlap; docs/coll.md "Non-blocking
 * calls"): a backward pass as a loop of B buckets, each a calibrated
 * compute stub (time, not FLOPs) followed by the all-reduce of that
 * bucket's gradients, run side by side two ways in one process:
 *   blocking  compute(b), mrc_coll_allreduce(b), for each b;
 *   overlap   compute(b) while the earlier buckets' mrc_coll_iallreduce
 *             are in flight (the stub tests the oldest every tick us),
 *             mrc_coll_iallreduce(b); at the end mrc_coll_waitall;
 * and the all-reduces alone (comm: no compute).  The stub spins on the
 * CPU, or sleeps (the compute runs elsewhere, as a GPU's: the CPU is free
 * for mrcd and the tests).  Per variant the step
 * time (median over the steps, the slowest rank's), the compute in it,
 * and the exposed communication = step - compute.  Every bucket of every
 * step is checked element by element (exact inputs, mrc__coll_wrong). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "coll/coll_int.h"
#include "tools/coll-perf/perf_overlap.h"

struct ov {
	struct mrc_coll *c;
	size_t B, count;           /* buckets, float32 elements each */
	double t_comp, tick;       /* seconds per bucket, between tests */
	int sleep;                 /* the stub sleeps (compute elsewhere: a GPU) */
	float **g;
	struct mrc_coll_req **q;
	size_t head;               /* oldest request not yet complete */
	int64_t wrong;
};

/* Computes for t seconds; with requests in flight, tests the oldest every
 * tick (the caller's progress, as an MPI code's MPI_Test).  The time in
 * the tests does not count as compute: the stub runs t seconds besides
 * it (a real kernel would not be done sooner because the CPU also posted
 * chunks), so the exposed time includes what the tests cost. */
static int compute(struct ov *o, double t, int poll)
{
	double now = mrc__mono_s(), end = now + t;
	while (now < end) {
		double next = poll ? now + o->tick : end;
		if (o->sleep) {
			double d = (next < end ? next : end) - now;
			struct timespec ts = { (time_t)d, (long)((d - (time_t)d) * 1e9) };
			nanosleep(&ts, NULL);   /* the stub itself, not a synchronisation */
		}
		while ((now = mrc__mono_s()) < next && now < end)
			;
		double t1 = now;
		while (poll && o->head < o->B && o->q[o->head]) {
			int r = mrc_coll_test(o->q[o->head]);
			if (r == -EINPROGRESS)
				break;
			o->q[o->head++] = NULL;
			if (r)
				return r;
		}
		if (poll) {
			now = mrc__mono_s();
			end += now - t1;
		}
	}
	return 0;
}

/* One step of variant v (0 blocking, 1 overlap, 2 comm only): its time
 * in seconds, every bucket checked. */
static int step(struct ov *o, int v, double *sec)
{
	struct mrc_coll *c = o->c;
	uint32_t n = mrc_coll_size(c), me = mrc_coll_rank(c);
	for (size_t b = 0; b < o->B; b++)
		mrc__coll_fill(MRC__C_ALLREDUCE, o->g[b], n, me, o->count, MRC_COLL_FLOAT32,
			       MRC_COLL_SUM, 0);
	int r = mrc_coll_barrier(c);
	o->head = 0;
	double t0 = mrc__mono_s();
	for (size_t b = 0; b < o->B && !r; b++) {
		if (v != 2)
			r = compute(o, o->t_comp, v == 1);
		if (r)
			break;
		r = v == 1 ? mrc_coll_iallreduce(c, o->g[b], o->g[b], o->count, MRC_COLL_FLOAT32,
						 MRC_COLL_SUM, &o->q[b])
			   : mrc_coll_allreduce(c, o->g[b], o->g[b], o->count, MRC_COLL_FLOAT32,
						MRC_COLL_SUM);
	}
	if (v == 1) {
		int w = mrc_coll_waitall(o->q + o->head, o->B - o->head);
		r = r ? r : w;
	}
	*sec = mrc__mono_s() - t0;
	for (size_t b = 0; b < o->B && !r; b++)
		o->wrong += (int64_t)mrc__coll_wrong(MRC__C_ALLREDUCE, o->g[b], n, me, o->count,
						     MRC_COLL_FLOAT32, MRC_COLL_SUM, 0);
	return r;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int mrc__perf_overlap(struct mrc_coll *c, size_t B, size_t bucket_bytes, double comp_us,
		      double tick_us, int sleep, int iters, int warm)
{
	uint32_t me = mrc_coll_rank(c);
	if (B < 1 || bucket_bytes < 4 || iters < 1)
		return -EINVAL;
	struct ov o = { .c = c, .B = B, .count = bucket_bytes / 4, .t_comp = comp_us * 1e-6,
			.tick = tick_us * 1e-6, .sleep = sleep };
	o.g = calloc(B, sizeof(*o.g));
	o.q = calloc(B, sizeof(*o.q));
	double *ts = calloc((size_t)iters, sizeof(*ts));
	int r = o.g && o.q && ts ? 0 : -ENOMEM;
	for (size_t b = 0; b < B && !r; b++)
		if (!(o.g[b] = malloc(o.count * 4 + 4)))
			r = -ENOMEM;
	if (!r && B > MRC_COLL_INFLIGHT_DEFAULT)
		r = mrc_coll_set_max_inflight(c, (uint32_t)B);
	static const char *const name[] = { "blocking", "overlap", "comm_only" };
	double med[3] = { 0 };
	if (!r && me == 0)
		printf("# mrc-coll-perf overlap: %u ranks, %zu buckets of %zu bytes (float32 all-reduce), compute %.0f us per bucket (%s), tests every %.0f us, %d steps\n"
		       "# %-10s %12s %12s %12s %9s\n", mrc_coll_size(c), B, o.count * 4, comp_us,
		       sleep ? "sleeping: the CPU is free, as while a GPU computes" : "spinning on the CPU",
		       tick_us, iters, "variant", "step_us", "compute_us", "exposed_us", "exposed%");
	/* The variants in turn, step by step, so that a drift of the machine
	 * over the run touches each alike. */
	double *all = calloc(3 * (size_t)iters, sizeof(*all));
	if (!all && !r)
		r = -ENOMEM;
	for (int i = -warm; i < iters && !r; i++)
		for (int v = 0; v < 3 && !r; v++) {
			double s;
			r = step(&o, v, &s);
			if (!r && i >= 0)
				all[v * iters + i] = s;
		}
	for (int v = 0; v < 3 && !r; v++) {
		memcpy(ts, all + v * iters, (size_t)iters * sizeof(*ts));
		qsort(ts, (size_t)iters, sizeof(*ts), cmp);
		med[v] = ts[iters / 2] * 1e6;
		/* The slowest rank's median: the step waits for it. */
		r = mrc_coll_allreduce(c, &med[v], &med[v], 1, MRC_COLL_FLOAT64, MRC_COLL_MAX);
	}
	if (!r)
		r = mrc_coll_allreduce(c, &o.wrong, &o.wrong, 1, MRC_COLL_INT64, MRC_COLL_SUM);
	if (!r && me == 0) {
		double comp = (double)B * comp_us;
		for (int v = 0; v < 3; v++) {
			double cu = v == 2 ? 0 : comp, ex = med[v] - cu;
			printf("  %-10s %12.0f %12.0f %12.0f %8.1f%%\n", name[v], med[v], cu, ex,
			       med[v] > 0 ? 100 * ex / med[v] : 0);
		}
		printf("# exposed communication: overlap %.0f us vs blocking %.0f us per step (%.2fx less); communication alone %.0f us\n",
		       med[1] - comp, med[0] - comp, med[1] - comp > 0 ? (med[0] - comp) / (med[1] - comp) : 0,
		       med[2]);
		printf("# Out of bounds values : %lld %s\n", (long long)o.wrong, o.wrong ? "FAILED" : "OK");
	}
	for (size_t b = 0; o.g && b < B; b++)
		free(o.g[b]);
	free(o.g), free(o.q), free(ts), free(all);
	if (!r && o.wrong)
		r = -EPROTO;
	return r;
}
