/* mrc-step's report, as text or one JSON object (docs/step.md "Report");
 * libc only, so that tests/test_step_args.c links it alone. */
#include "tools/step/step.h"

static const char *const mode_name[STEP_NMODES] = { "blocking", "overlap" };

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
			   "\"stage_us\": %.1f, \"exposed_us\": %.1f, \"time_to_n_runs_us\": [",
			mode_name[m], s->step_med, s->step_min, s->step_max, s->step_trimmed,
			s->ttn_trimmed, s->compute, s->stage_med, s->exposed_med);
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
	fprintf(f, "# %-9s %10s %10s %10s %11s %13s %10s %10s %10s\n", "mode", "step_us", "min_us",
		"max_us", "trimmed_us", "time_to_n_ms", "compute_us", "stage_us", "exposed_us");
	for (int m = 0; m < STEP_NMODES; m++) {
		const struct step_stat *s = &r->m[m];
		if (p->modes >> m & 1)
			fprintf(f, "  %-9s %10.0f %10.0f %10.0f %11.0f %13.2f %10.0f %10.0f %10.0f\n",
				mode_name[m], s->step_med, s->step_min, s->step_max, s->step_trimmed,
				s->ttn_trimmed / 1e3, s->compute, s->stage_med, s->exposed_med);
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
