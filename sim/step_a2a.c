/* The training step's MoE all-to-all (sim/step.c has the whole picture):
 * Tutel's 2-D hierarchical all-to-all inside each expert-parallel group
 * of ep hosts, seen as (ep/local) x local.  Phase 1 among the local hosts
 * (a leaf), host (A,a) giving (A,b) every token bound for rank b of any
 * group; phase 2 among the hosts of the same rank, (A,b) giving (B,b) what
 * is bound for group B.
 *
 * Routing: every token picks topk experts (one per host of its group) at
 * random by popularity weights exp(skew * N(0,1)), drawn per step; an
 * expert takes at most cap * tokens * topk / ep of them and drops the
 * rest, proportionally from every source (Switch/GShard capacity).  A
 * phase's flow carries the kept tokens' bytes; empty flows are still sent
 * (the counts a real all-to-all exchanges first). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/step_int.h"

static double gauss(struct mrc_rng *r)
{
	/* Box-Muller on two uniforms in (0, 1]. */
	double u = ((double)(mrc_rng_next(r) >> 11) + 1.0) / 9007199254740993.0;
	double v = (double)(mrc_rng_next(r) >> 11) / 9007199254740992.0;
	return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

/* Kept token counts of one step into shape sizes: P1[h * local + b] (host
 * h to local rank b of its group) and P2[h * G + B] (host h to group B). */
static int route(struct mrc_sim *s, struct sim_step_rt *rt, uint64_t *P1, uint64_t *P2)
{
	const struct mrc_sim_step *p = &rt->p;
	uint32_t H = rt->H, E = p->ep, L = p->local, G = E / L;
	double *cum = malloc(E * sizeof(*cum));
	uint32_t *cnt = calloc((size_t)E * E, sizeof(*cnt));
	uint64_t *recv = calloc(E, sizeof(*recv));
	if (!cum || !cnt || !recv) {
		free(cum);
		free(cnt);
		free(recv);
		return -ENOMEM;
	}
	/* An expert (one per host) takes cap times its mean share: the group
	 * routes E * tokens * topk, over E experts. */
	uint64_t capn = (uint64_t)ceil(p->cap * p->tokens * p->topk);
	for (uint32_t g0 = 0; g0 < H; g0 += E) {
		double tot = 0;
		for (uint32_t e = 0; e < E; e++) {
			tot += exp(p->skew * gauss(&s->rng));
			cum[e] = tot;
		}
		memset(cnt, 0, (size_t)E * E * sizeof(*cnt));
		memset(recv, 0, E * sizeof(*recv));
		for (uint32_t i = 0; i < E; i++)
			for (uint64_t t = 0; t < (uint64_t)p->tokens * p->topk; t++) {
				double x = (double)(mrc_rng_next(&s->rng) >> 11) /
					   9007199254740992.0 * tot;
				uint32_t lo = 0, hi = E - 1;
				while (lo < hi) {
					uint32_t m = (lo + hi) / 2;
					if (cum[m] > x)
						hi = m;
					else
						lo = m + 1;
				}
				cnt[(size_t)i * E + lo]++;
				recv[lo]++;
			}
		for (uint32_t i = 0; i < E; i++) {
			uint32_t A = i / L;
			for (uint32_t d = 0; d < E; d++) {
				uint64_t c = cnt[(size_t)i * E + d], k = c;
				if (recv[d] > capn)
					k = c * capn / recv[d];
				rt->tokens += c;
				rt->dropped += c - k;
				uint32_t B = d / L, b = d % L;
				/* phase 1 carries it to (A, b); phase 2 on to (B, b) */
				P1[(size_t)(g0 + i) * L + b] += k;
				P2[(size_t)(g0 + A * L + b) * G + B] += k;
			}
		}
	}
	free(cum);
	free(cnt);
	free(recv);
	return 0;
}

int sim_step_a2a_layout(struct sim_step_rt *rt)
{
	uint32_t H = rt->H, L = rt->p.local, G = rt->p.ep / L;
	/* Shapes: flows per host and due per host. */
	uint32_t sn[4] = { L - 1, G - 1, G - 1, L - 1 };
	for (int sh = 0; sh < 4 && rt->nops; sh++) {
		rt->soff[sh] = malloc(((size_t)H + 1) * sizeof(uint32_t));
		rt->rcnt[sh] = malloc((size_t)H * sizeof(uint32_t));
		if (!rt->soff[sh] || !rt->rcnt[sh])
			return -ENOMEM;
		for (uint32_t h = 0; h <= H; h++)
			rt->soff[sh][h] = h * sn[sh];
		for (uint32_t h = 0; h < H; h++)
			rt->rcnt[sh][h] = sn[sh];
	}
	uint32_t off = 0;
	for (uint32_t o = 0; o < 8; o++) {
		rt->op_start[o] = off;
		off += rt->nops ? H * sn[o & 3] : 0;
	}
	rt->op_start[8] = off;
	return 0;
}

/* Host h's flows of op o (shape o & 3). */
static int op_gen(struct mrc_sim *s, struct sim_step_rt *rt, const uint64_t *P1,
		  const uint64_t *P2, uint32_t o, uint32_t h, uint32_t *cap_flows)
{
	const struct mrc_sim_step *p = &rt->p;
	uint32_t L = p->local, G = p->ep / L, sh = o & 3, w = rt->w;
	uint32_t g0 = h / p->ep * p->ep, e = h - g0, A = e / L, a = e % L;
	uint64_t tok = p->tok_bytes;
	int rc = 0;
	if (sh == 0 || sh == 3) {
		/* dispatch 1: (A,a) -> (A,b); combine 2: the same bytes back,
		 * (A,a) -> (A,b) sends what (A,b) gave it. */
		for (uint32_t b = 0; b < L && !rc; b++) {
			if (b == a)
				continue;
			uint32_t d = g0 + A * L + b;
			uint64_t sz = sh == 0 ? P1[(size_t)h * L + b] : P1[(size_t)d * L + a];
			rc = sim_step_push_flow(s, cap_flows, h, d, sz * tok, w);
		}
	} else {
		for (uint32_t B = 0; B < G && !rc; B++) {
			if (B == A)
				continue;
			uint32_t d = g0 + B * L + a;
			uint64_t sz = sh == 1 ? P2[(size_t)h * G + B] : P2[(size_t)d * G + A];
			rc = sim_step_push_flow(s, cap_flows, h, d, sz * tok, w);
		}
	}
	return rc;
}

int sim_step_a2a_gen(struct mrc_sim *s, struct sim_step_rt *rt, uint64_t *P1, uint64_t *P2,
		     uint32_t *cap_flows)
{
	if (!rt->nops)
		return 0;
	uint32_t H = rt->H, L = rt->p.local, G = rt->p.ep / L;
	memset(P1, 0, (size_t)H * L * sizeof(*P1));
	memset(P2, 0, (size_t)H * G * sizeof(*P2));
	int rc = route(s, rt, P1, P2);
	for (uint32_t o = 0; o < rt->nops && !rc; o++)
		for (uint32_t h = 0; h < H && !rc; h++)
			rc = op_gen(s, rt, P1, P2, o, h, cap_flows);
	return rc;
}
