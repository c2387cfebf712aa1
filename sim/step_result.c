/* What a training-step run reports (sim/step.c has the whole picture):
 * each host's phase intervals and the per-step times, exposed
 * communication included. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sim/step_int.h"

const struct mrc_sim_phase_iv *mrc_sim_phases(const struct mrc_sim *s, uint32_t h,
					      uint32_t *n)
{
	*n = 0;
	if (!s->step || h >= s->step->H)
		return NULL;
	*n = s->step->hs[h].niv;
	return s->step->hs[h].iv;
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

int mrc_sim_step_result(const struct mrc_sim *s, struct mrc_sim_step_result *r)
{
	const struct sim_step_rt *rt = s->step;
	memset(r, 0, sizeof(*r));
	if (!rt)
		return -ENOENT;
	r->steps = rt->N;
	r->hosts = rt->H;
	r->compute_ns = sim_step_compute_ps(rt) / SIM_PS_PER_NS;
	r->tokens = rt->N ? rt->tokens / rt->N : 0;
	r->dropped = rt->N ? rt->dropped / rt->N : 0;
	r->done = rt->pending == 0;
	uint64_t prev_end = rt->start_ps;
	for (uint32_t st = 0; st < rt->N; st++) {
		uint64_t end = 0, sum = 0, mx = 0;
		for (uint32_t h = 0; h < rt->H; h++) {
			uint64_t e = rt->step_end[(size_t)st * rt->H + h];
			uint64_t b = st ? rt->step_end[(size_t)(st - 1) * rt->H + h] : rt->start_ps;
			if (!e)
				continue;
			/* Exposed: the host's step minus its compute. */
			uint64_t x = e - b > sim_step_compute_ps(rt) ? e - b - sim_step_compute_ps(rt) : 0;
			sum += x;
			if (x > mx)
				mx = x;
			if (e > end)
				end = e;
		}
		r->step_ns[st] = end > prev_end ? (end - prev_end) / SIM_PS_PER_NS : 0;
		r->exposed_mean_ns[st] = sum / rt->H / SIM_PS_PER_NS;
		r->exposed_max_ns[st] = mx / SIM_PS_PER_NS;
		prev_end = end;
		r->time_to_n_ns = end / SIM_PS_PER_NS;
	}
	uint64_t v[64];
	memcpy(v, r->step_ns, rt->N * sizeof(uint64_t));
	qsort(v, rt->N, sizeof(uint64_t), u64_cmp);
	uint32_t lo = rt->N >= 3 ? 1 : 0, hi = rt->N >= 3 ? rt->N - 1 : rt->N;
	uint64_t sum = 0;
	for (uint32_t i = lo; i < hi; i++)
		sum += v[i];
	r->step_trimmed_ns = hi > lo ? sum / (hi - lo) : 0;
	return 0;
}

uint32_t sim_step_nb(const struct mrc_sim *s)
{
	return s->step ? s->step->nb : 0;
}
