/* mrc-step's figures (per mode the step times, MLPerf's time to N steps:
 * several runs, the best and the worst dropped; the exposed communication)
 * and its report, as text or one JSON object (docs/step.md "Report");
 * libc only, so that tests/test_step_args.c and the Open MPI step link it. */
#include <stdlib.h>
#include <string.h>

#include "tools/step/step.h"

static const char *const mode_name[STEP_NMODES] = { "blocking", "overlap" };

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

static void stat_mode(const struct step_par *p, const double *col, int m, struct step_stat *o)
{
	size_t N = p->steps, R = p->runs, per = R * N * STEP_NMODES;
	const double *sec = col, *stg = col + STEP_C_STAGE * per;
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
	for (int j = STEP_C_MOE; j <= STEP_C_TAIL; j++) {
		for (size_t run = 0; run < R; run++)
			for (size_t i = 0; i < N; i++)
				all[run * N + i] = col[j * per + (run * STEP_NMODES + (size_t)m) * N + i] * 1e6;
		*(j == STEP_C_MOE ? &o->moe_med : &o->tail_med) = med(all, N * R);
	}
	for (size_t run = 0; run < R; run++)
		for (size_t i = 0; i < N; i++) {
			size_t k = (run * STEP_NMODES + (size_t)m) * N + i;
			all[run * N + i] = sec[k] * 1e6, sv[run * N + i] = stg[k] * 1e6;
		}
	/* Exposed: per step, its time less compute and staging; the median. */
	for (size_t i = 0; i < N * R; i++)
		sv[i] = all[i] - o->compute - sv[i];
	o->exposed_med = med(sv, N * R);
	o->step_med = med(all, N * R);
out:
	free(all), free(sv);
}

void mrc__step_figures(const struct step_par *p, const double *col, struct step_report *rep)
{
	const double *sec = col;
	for (int m = 0; m < STEP_NMODES; m++)
		if (p->modes >> m & 1)
			stat_mode(p, col, m, &rep->m[m]);
	if (p->fault_step) {
		/* The first run, the first mode run: before and from the fault. */
		int m = p->modes & 1 << STEP_BLOCKING ? STEP_BLOCKING : STEP_OVERLAP;
		double b = 0, a = 0;
		for (uint32_t i = 0; i < p->steps; i++)
			*(i < p->fault_step ? &b : &a) += sec[(size_t)m * p->steps + i] * 1e6;
		rep->fault_before = b / p->fault_step;
		rep->fault_after = a / (p->steps - p->fault_step);
	}
}

static void print_json(const struct step_par *p, const struct step_report *r, FILE *f)
{
	fprintf(f, "{\"ranks\": %u, \"layers\": %u, \"moe\": %d, \"steps\": %u, \"runs\": %u, "
		   "\"fwd_us\": %.1f, \"bwd_us\": %.1f, \"tokens_per_rank\": %llu, \"tok\": %llu, "
		   "\"topk\": %u, \"local\": %u, \"cap\": %.3f, \"skew\": %.3f, \"grad\": %llu, "
		   "\"bucket\": %llu, \"bulk\": %llu, \"stage\": %llu, \"tokens\": %llu, "
		   "\"dropped\": %llu, \"drop_share\": %.4f, \"bulk_bytes\": %llu, \"wrong\": %lld",
		r->ranks, p->layers, p->moe == UINT32_MAX ? -1 : (int)p->moe, p->steps, p->runs,
		p->fwd_us, p->bwd_us, (unsigned long long)p->tokens, (unsigned long long)p->tok,
		p->topk, p->local, p->cap, p->skew, (unsigned long long)p->grad,
		(unsigned long long)p->bucket, (unsigned long long)p->bulk,
		(unsigned long long)p->stage, (unsigned long long)r->tokens,
		(unsigned long long)r->dropped, r->tokens ? (double)r->dropped / (double)r->tokens : 0,
		(unsigned long long)r->bulk_bytes, (long long)r->wrong);
	if (p->fault_step)
		fprintf(f, ", \"fault_step\": %u, \"fault_before_us\": %.1f, \"fault_after_us\": %.1f",
			p->fault_step, r->fault_before, r->fault_after);
	for (int m = 0; m < STEP_NMODES; m++) {
		const struct step_stat *s = &r->m[m];
		if (!(p->modes >> m & 1))
			continue;
		fprintf(f, ", \"%s\": {\"step_us\": %.1f, \"step_min_us\": %.1f, \"step_max_us\": %.1f, "
			   "\"step_trimmed_us\": %.1f, \"time_to_n_us\": %.1f, \"compute_us\": %.1f, "
			   "\"stage_us\": %.1f, \"exposed_us\": %.1f, \"moe_wait_us\": %.1f, "
			   "\"grad_wait_us\": %.1f, \"time_to_n_runs_us\": [",
			mode_name[m], s->step_med, s->step_min, s->step_max, s->step_trimmed,
			s->ttn_trimmed, s->compute, s->stage_med, s->exposed_med, s->moe_med, s->tail_med);
		for (uint32_t i = 0; i < p->runs; i++)
			fprintf(f, "%s%.1f", i ? ", " : "", s->time_to_n[i]);
		fprintf(f, "]}");
	}
	fprintf(f, "}\n");
}

void mrc__step_print(const struct step_par *p, const struct step_report *r, FILE *f)
{
	if (p->json) {
		print_json(p, r, f);
		return;
	}
	fprintf(f, "# mrc-step: %u ranks, %u layers (fwd %.0f us, bwd %.0f us), MoE at layer %d "
		   "(%llu tokens x %llu B, top-%u, cap %.2f, %s), grad %llu B/layer in %llu B buckets, "
		   "bulk %llu B/step, staging %llu B/step; %u runs of %u steps\n",
		r->ranks, p->layers, p->fwd_us, p->bwd_us, p->moe == UINT32_MAX ? -1 : (int)p->moe,
		(unsigned long long)p->tokens, (unsigned long long)p->tok, p->topk, p->cap,
		p->local > 1 ? "2-D" : "flat", (unsigned long long)p->grad,
		(unsigned long long)p->bucket, (unsigned long long)p->bulk,
		(unsigned long long)p->stage, p->runs, p->steps);
	fprintf(f, "# %-9s %10s %10s %10s %11s %13s %10s %10s %10s %10s %10s\n", "mode", "step_us",
		"min_us", "max_us", "trimmed_us", "time_to_n_ms", "compute_us", "stage_us",
		"exposed_us", "moe_wait", "grad_wait");
	for (int m = 0; m < STEP_NMODES; m++) {
		const struct step_stat *s = &r->m[m];
		if (p->modes >> m & 1)
			fprintf(f, "  %-9s %10.0f %10.0f %10.0f %11.0f %13.2f %10.0f %10.0f %10.0f %10.0f %10.0f\n",
				mode_name[m], s->step_med, s->step_min, s->step_max, s->step_trimmed,
				s->ttn_trimmed / 1e3, s->compute, s->stage_med, s->exposed_med,
				s->moe_med, s->tail_med);
	}
	fprintf(f, "# MoE pairs %llu, dropped %llu (%.2f%%); background %llu B landed\n",
		(unsigned long long)r->tokens, (unsigned long long)r->dropped,
		r->tokens ? 100.0 * (double)r->dropped / (double)r->tokens : 0,
		(unsigned long long)r->bulk_bytes);
	if (p->fault_step)
		fprintf(f, "# fault at step %u: mean step %.0f us before, %.0f us from it (%.3fx)\n",
			p->fault_step, r->fault_before, r->fault_after,
			r->fault_before > 0 ? r->fault_after / r->fault_before : 0);
	fprintf(f, "# Out of bounds values : %lld %s\n", (long long)r->wrong, r->wrong ? "FAILED" : "OK");
}
