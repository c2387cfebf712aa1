/* mrc-step's figures: per mode the slowest rank's step times, MLPerf's
 * time to N steps (several runs, the best and the worst dropped), the
 * exposed communication (printed by print.c). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "common/clock.h"
#include "mrc/coll.h"
#include "tools/step/step.h"

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double med(double *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Before step fault_step of the first run, rank 0 says so and waits
 * (bounded) for the fault file: the script has injected the fault.  The
 * other ranks wait in the step's barrier. */
int mrc__step_fault_wait(struct mrc_coll *c, const struct step_par *p, uint32_t run)
{
	if (mrc_coll_rank(c) != 0)
		return 0;
	printf("# mrc-step: at step %u of run %u\n", p->fault_step, run);
	fflush(stdout);
	struct stat sb;
	for (int64_t end = mrc__mono_ms() + 20000; stat(p->fault_file, &sb);) {
		if (mrc__mono_ms() > end)
			return -ETIMEDOUT;
		nanosleep(&(struct timespec){ 0, 1000000 }, NULL);   /* an outside event: polled */
	}
	return 0;
}

static void stat_mode(const struct step_par *p, const double *sec, const double *stg, int m,
		      struct step_stat *o)
{
	size_t N = p->steps, R = p->runs;
	double *all = malloc(N * R * sizeof(*all)), *sv = malloc(N * R * sizeof(*sv));
	if (!all || !sv)
		goto out;
	double lo = 1e300, hi = 0;
	for (size_t run = 0; run < R; run++) {
		double ttn = 0;
		for (size_t i = 0; i < N; i++) {
			size_t k = (run * STEP_NMODES + (size_t)m) * N + i;
			all[run * N + i] = sec[k] * 1e6, sv[run * N + i] = stg[k] * 1e6;
			ttn += sec[k] * 1e6;
			lo = sec[k] * 1e6 < lo ? sec[k] * 1e6 : lo, hi = sec[k] * 1e6 > hi ? sec[k] * 1e6 : hi;
		}
		o->time_to_n[run] = ttn;
	}
	double ttn[64], sum = 0;
	memcpy(ttn, o->time_to_n, R * sizeof(*ttn));
	qsort(ttn, R, sizeof(*ttn), cmp);
	size_t a = R >= 3 ? 1 : 0, b = R >= 3 ? R - 1 : R;   /* MLPerf: drop best and worst */
	for (size_t i = a; i < b; i++)
		sum += ttn[i];
	o->ttn_trimmed = sum / (double)(b - a);
	o->step_trimmed = o->ttn_trimmed / (double)N;
	o->step_min = lo, o->step_max = hi;
	o->compute = (p->fwd_us + p->bwd_us) * (p->layers + (p->moe != UINT32_MAX));
	o->stage_med = med(sv, N * R);
	/* Exposed: per step, its time less compute and staging; the median. */
	for (size_t i = 0; i < N * R; i++)
		sv[i] = all[i] - o->compute - sv[i];
	o->exposed_med = med(sv, N * R);
	o->step_med = med(all, N * R);
out:
	free(all), free(sv);
}

/* The slowest rank's time of every step (a step waits for it), then the
 * figures on rank 0. */
int mrc__step_collect(struct mrc_coll *c, const struct step_par *p, double *sec, double *stg,
		      struct step_report *rep)
{
	size_t per = (size_t)p->runs * p->steps * STEP_NMODES;
	int r = mrc_coll_allreduce(c, sec, sec, per, MRC_COLL_FLOAT64, MRC_COLL_MAX);
	if (!r)
		r = mrc_coll_allreduce(c, stg, stg, per, MRC_COLL_FLOAT64, MRC_COLL_MAX);
	int64_t v[3] = { (int64_t)rep->tokens, (int64_t)rep->dropped, rep->wrong };
	if (!r)
		r = mrc_coll_allreduce(c, v, v, 3, MRC_COLL_INT64, MRC_COLL_SUM);
	if (r)
		return r;
	rep->tokens = (uint64_t)v[0], rep->dropped = (uint64_t)v[1], rep->wrong = v[2];
	rep->ranks = mrc_coll_size(c);
	for (int m = 0; m < STEP_NMODES; m++)
		if (p->modes >> m & 1)
			stat_mode(p, sec, stg, m, &rep->m[m]);
	if (p->fault_step) {
		/* The first run, the first mode run: before and from the fault. */
		int m = p->modes & 1 << STEP_BLOCKING ? STEP_BLOCKING : STEP_OVERLAP;
		double b = 0, a = 0;
		for (uint32_t i = 0; i < p->steps; i++)
			*(i < p->fault_step ? &b : &a) += sec[(size_t)m * p->steps + i] * 1e6;
		rep->fault_before = b / p->fault_step;
		rep->fault_after = a / (p->steps - p->fault_step);
	}
	return 0;
}
