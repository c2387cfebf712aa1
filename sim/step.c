/* The training-step workload (issue 33 item 4): per host a program of
 * compute stubs and communication, the same for every host, run step after
 * step:
 *
 *   forward:  layer 0..L-1 compute; at the MoE layer: dispatch (two
 *             all-to-all phases), expert compute, combine (two phases)
 *   backward: layer L-1..0 compute, each adding its gradient to the open
 *             bucket; a full bucket (or layer 0) starts a ring
 *             reduce-scatter + all-gather that runs while the backward pass
 *             goes on; at the MoE layer the two all-to-alls again
 *   end:      wait for this host's buckets; the next step starts
 *
 * The all-to-all is Tutel's 2-D hierarchical one inside each expert-parallel
 * group of ep hosts (its shapes and routing: step_a2a.c).  A host so talks
 * to local-1 + ep/local-1 peers instead of ep-1, which is what lets 1,024
 * and 8,192 hosts fit (each peer costs its engine a record per EV, 128
 * bytes x 264 EVs on an 8-plane Clos).  Each directed host pair has one QP
 * pair for all of a run's step traffic (the bulk flows one of their own, so
 * step traffic never waits behind them).
 *
 * This file builds the run: the program, every step's flows and their
 * QPs, and the state the run keeps.  Running it: step_run.c; what it
 * reports: step_result.c; the shared runtime: step_int.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errf.h"
#include "sim/step_int.h"

static int ins_add(struct sim_step_rt *rt, uint32_t *cap, struct step_ins in)
{
	if (rt->nprog == *cap) {
		uint32_t nc = *cap ? *cap * 2 : 64;
		struct step_ins *n = realloc(rt->prog, nc * sizeof(*n));
		if (!n)
			return -ENOMEM;
		rt->prog = n;
		*cap = nc;
	}
	rt->prog[rt->nprog++] = in;
	return 0;
}

static int build_prog(struct sim_step_rt *rt)
{
	const struct mrc_sim_step *p = &rt->p;
	uint32_t cap = 0;
	int rc = 0;
	uint64_t fwd = p->fwd_ns * SIM_PS_PER_NS, bwd = p->bwd_ns * SIM_PS_PER_NS;
	for (uint32_t l = 0; l < p->layers && !rc; l++) {
		rc = ins_add(rt, &cap, (struct step_ins){ I_COMPUTE, MRC_SIM_PH_FWD, l, fwd, 0 });
		if (rt->nops && l == p->moe_layer) {
			for (uint32_t o = 0; o < 4 && !rc; o++) {
				rc = ins_add(rt, &cap, (struct step_ins){ I_A2A, 0, o, 0, 0 });
				if (o == 1 && !rc)
					rc = ins_add(rt, &cap, (struct step_ins){ I_COMPUTE,
						MRC_SIM_PH_EXPERT, l, fwd, 0 });
			}
		}
	}
	uint64_t fill = 0;
	rt->nb = 0;
	for (uint32_t l = p->layers; l-- > 0 && !rc;) {
		if (rt->nops && l == p->moe_layer) {
			for (uint32_t o = 4; o < 8 && !rc; o++) {
				rc = ins_add(rt, &cap, (struct step_ins){ I_A2A, 0, o, 0, 0 });
				if (o == 5 && !rc)
					rc = ins_add(rt, &cap, (struct step_ins){ I_COMPUTE,
						MRC_SIM_PH_EXPERT, l, bwd, 0 });
			}
		}
		if (!rc)
			rc = ins_add(rt, &cap, (struct step_ins){ I_COMPUTE, MRC_SIM_PH_BWD, l, bwd, 0 });
		if (!rc && p->grad && p->dp > 1) {
			fill += p->grad;
			rc = ins_add(rt, &cap, (struct step_ins){ I_GRAD, 0, l == 0, 0, p->grad });
			if (fill >= p->bucket || l == 0) {
				rt->nb++;
				fill = 0;
			}
		}
	}
	if (!rc)
		rc = ins_add(rt, &cap, (struct step_ins){ I_END, 0, 0, 0, 0 });
	return rc;
}

/* ---- building ---------------------------------------------------------- */

struct key { uint64_t k; uint32_t f; };

static int key_cmp(const void *a, const void *b)
{
	const struct key *x = a, *y = b;
	if (x->k != y->k)
		return x->k < y->k ? -1 : 1;
	return x->f < y->f ? -1 : x->f > y->f;
}

int sim_step_push_flow(struct mrc_sim *s, uint32_t *cap, uint32_t src, uint32_t dst,
		       uint64_t size, uint32_t w)
{
	if (s->n_flows == *cap) {
		uint32_t nc = *cap ? 2 * *cap : 1024;
		struct sim_flow *f = realloc(s->flows, nc * sizeof(*f));
		if (!f)
			return -ENOMEM;
		s->flows = f;
		*cap = nc;
	}
	s->flows[s->n_flows++] = (struct sim_flow){ .src = src, .dst = dst, .wl = w,
		.conn0 = SIM_NONE, .nconn = 1, .dep = SIM_NONE, .size = size,
		.start_ps = UINT64_MAX, .triggered = 1 };
	return 0;
}

static void rt_free(struct sim_step_rt *rt)
{
	if (!rt)
		return;
	free(rt->prog);
	for (int i = 0; i < 4; i++) {
		free(rt->soff[i]);
		free(rt->rcnt[i]);
	}
	free(rt->recv_cnt);
	free(rt->sent_cnt);
	free(rt->posted);
	free(rt->qhead);
	free(rt->qtail);
	free(rt->qnext);
	free(rt->step_end);
	if (rt->hs)
		for (uint32_t h = 0; h < rt->H; h++)
			free(rt->hs[h].iv);
	free(rt->hs);
	free(rt);
}

void sim_step_free(struct mrc_sim *s)
{
	rt_free(s->step);
	s->step = NULL;
}

/* The step's parameters, defaults resolved (ep: every host; local: a
 * leaf's hosts, or half a fat tree's k), checked. */
static int check_params(struct mrc_sim *s, struct sim_step_rt *rt, char *err, size_t errlen)
{
	struct mrc_sim_step *p = &rt->p;
	uint32_t H = rt->H, w = rt->w;
	if (!p->ep)
		p->ep = H;
	if (!p->local) {
		p->local = s->fab.kind == MRC_SIM_CLOS ? s->cfg.topo.hosts_per_leaf :
			   s->cfg.topo.k / 2;
		if (p->local > p->ep)
			p->local = p->ep;
	}
	if (p->ep < 2 || H % p->ep || p->ep % p->local)
		return mrc__errf(err, errlen, "workload[%u] (step): ep=%u, local=%u: ep must divide the %u hosts and local divide ep",
			    w, p->ep, p->local, H);
	if (p->dp > 1 && H % p->dp)
		return mrc__errf(err, errlen, "workload[%u] (step): dp=%u must divide the %u hosts",
			    w, p->dp, H);
	if (p->layers < 1 || p->moe_layer >= p->layers)
		return mrc__errf(err, errlen, "workload[%u] (step): moe=%u: the MoE layer must be one of the %u layers",
			    w, p->moe_layer, p->layers);
	if (p->steps < 1 || p->steps > 64)
		return mrc__errf(err, errlen, "workload[%u] (step): steps=%u: 1..64", w, p->steps);
	if (p->bulk && H < 2)
		return mrc__errf(err, errlen, "workload[%u] (step): bulk needs 2 hosts", w);
	return 0;
}

/* Every step's flows, in the order op_start, bucket_start and bulk_start
 * say: its all-to-all ops', its buckets' rings', its bulk flows. */
static int gen_flows(struct mrc_sim *s, struct sim_step_rt *rt, uint32_t *cap_flows)
{
	const struct mrc_sim_step *p = &rt->p;
	uint32_t H = rt->H, w = rt->w, L = p->local, G = p->ep / L;
	uint64_t *P1 = NULL, *P2 = NULL;
	if (rt->nops) {
		P1 = malloc((size_t)H * L * sizeof(*P1));
		P2 = malloc((size_t)H * G * sizeof(*P2));
		if (!P1 || !P2) {
			free(P1);
			free(P2);
			return -ENOMEM;
		}
	}
	/* Bucket sizes, as the program fills them. */
	uint64_t *bsz = calloc(rt->nb ? rt->nb : 1, sizeof(*bsz));
	if (!bsz) {
		free(P1);
		free(P2);
		return -ENOMEM;
	}
	uint32_t nb = 0;
	for (uint32_t i = 0; i < rt->nprog; i++)
		if (rt->prog[i].op == I_GRAD) {
			bsz[nb] += rt->prog[i].bytes;
			if (bsz[nb] >= p->bucket || rt->prog[i].arg)
				nb++;
		}
	int rc = 0;
	for (uint32_t st = 0; st < rt->N && !rc; st++) {
		if ((rc = sim_step_a2a_gen(s, rt, P1, P2, cap_flows)))
			break;
		for (uint32_t b = 0; b < rt->nb && !rc; b++) {
			uint64_t chunk = bsz[b] / p->dp;
			for (uint32_t h = 0; h < H && !rc; h++)
				for (uint32_t k = 0; k < rt->R && !rc; k++)
					rc = sim_step_push_flow(s, cap_flows, h, (h + rt->stride) % H,
								chunk, w);
		}
		for (uint32_t h = 0; p->bulk && h < H && !rc; h++)
			rc = sim_step_push_flow(s, cap_flows, h, (h + H / 2) % H, p->bulk, w);
	}
	free(P1);
	free(P2);
	free(bsz);
	return rc;
}

/* One QP pair per directed host pair (bulk: its own), in pair order.  Not
 * one pair for both ways: a QP that also sends holds its ACKs up to
 * ack_delay_ns (32 us) for data to ride on, which stretched every
 * all-to-all phase on an idle fabric by up to that; NCCL, too, keeps one
 * connection per direction. */
static int gen_conns(struct mrc_sim *s, struct sim_step_rt *rt, uint32_t *cap_conns)
{
	struct key *ks = malloc((size_t)rt->nflows * sizeof(*ks));
	if (!ks)
		return -ENOMEM;
	for (uint32_t i = 0; i < rt->nflows; i++) {
		uint32_t f = rt->flow0 + i;
		uint32_t r = i % rt->per_step;
		uint32_t a = s->flows[f].src, b = s->flows[f].dst;
		ks[i] = (struct key){ (uint64_t)a << 33 | (uint64_t)b << 1 | (r >= rt->bulk_start), f };
	}
	qsort(ks, rt->nflows, sizeof(*ks), key_cmp);
	rt->conn0 = s->n_conns;
	uint64_t rtt = 0, wire_cap = s->host_cap_mbit;
	for (uint32_t i = 0; i < rt->nflows; i++) {
		struct sim_flow *fl = &s->flows[ks[i].f];
		if (!i || ks[i].k != ks[i - 1].k) {
			if (s->n_conns == *cap_conns) {
				uint32_t nc = *cap_conns ? 2 * *cap_conns : 1024;
				struct sim_conn *c = realloc(s->conns, nc * sizeof(*c));
				if (!c) {
					free(ks);
					return -ENOMEM;
				}
				s->conns = c;
				*cap_conns = nc;
			}
			s->conns[s->n_conns++] = (struct sim_conn){ .flow = ks[i].f };
			rtt = sim_pair_rtt_ps(s, fl->src, fl->dst);
		}
		fl->conn0 = s->n_conns - 1;
		fl->rtt_ps = rtt;
		fl->ideal_ps = (sim_wire_bytes(s, fl->size) * s->ser_num + wire_cap - 1) /
			       wire_cap + rtt;
		fl->loff = ((uint64_t)ks[i].f * 64) % 4096;
	}
	free(ks);
	rt->nconns = s->n_conns - rt->conn0;
	return 0;
}

/* What the run counts per step, op and host, the send queues' waiting
 * lists and the hosts' state. */
static int alloc_state(struct sim_step_rt *rt)
{
	size_t nslot = (size_t)rt->N * (8 + rt->nb) * rt->H;
	rt->recv_cnt = calloc(nslot, sizeof(uint32_t));
	rt->sent_cnt = calloc(nslot, sizeof(uint32_t));
	rt->posted = calloc(nslot, sizeof(uint32_t));
	rt->qhead = malloc(((size_t)rt->nconns * 2 + 1) * sizeof(uint32_t));
	rt->qtail = malloc(((size_t)rt->nconns * 2 + 1) * sizeof(uint32_t));
	rt->qnext = malloc(((size_t)rt->nflows + 1) * sizeof(uint32_t));
	rt->step_end = calloc((size_t)rt->N * rt->H, sizeof(uint64_t));
	rt->hs = calloc(rt->H, sizeof(*rt->hs));
	if (!rt->recv_cnt || !rt->sent_cnt || !rt->posted || !rt->qhead || !rt->qtail ||
	    !rt->qnext || !rt->step_end || !rt->hs)
		return -ENOMEM;
	for (uint32_t c = 0; c < 2 * rt->nconns; c++)
		rt->qhead[c] = rt->qtail[c] = SIM_NONE;
	rt->pending = rt->H;
	return 0;
}

int sim_step_gen(struct mrc_sim *s, uint32_t w, uint32_t *cap_flows, uint32_t *cap_conns,
		 char *err, size_t errlen)
{
	const struct mrc_sim_workload *wl = &s->cfg.wl[w];
	uint32_t H = s->fab.n_hosts;
	if (s->step)
		return mrc__errf(err, errlen, "workload[%u]: one step workload per scenario", w);
	struct sim_step_rt *rt = calloc(1, sizeof(*rt));
	if (!rt)
		return mrc__errf(err, errlen, "step: out of memory"), -ENOMEM;
	s->step = rt;
	rt->p = wl->step;
	struct mrc_sim_step *p = &rt->p;
	rt->w = w;
	rt->H = H;
	rt->N = p->steps;
	rt->start_ps = wl->start_ns * SIM_PS_PER_NS;
	int rc = check_params(s, rt, err, errlen);
	if (rc)
		return rc;
	s->step_ep = p->ep;
	s->step_local = p->local;
	rt->nops = p->tokens ? 8 : 0;
	if (build_prog(rt))
		return mrc__errf(err, errlen, "step: out of memory"), -ENOMEM;
	rt->R = p->dp > 1 ? 2 * (p->dp - 1) : 0;
	rt->stride = p->dp > 1 ? H / p->dp : 0;
	if (sim_step_a2a_layout(rt))
		return mrc__errf(err, errlen, "step: out of memory"), -ENOMEM;
	uint32_t off = rt->op_start[8];
	rt->bucket_start = off;
	off += rt->nb * H * rt->R;
	rt->bulk_start = off;
	off += p->bulk ? H : 0;
	rt->per_step = off;
	if ((uint64_t)off * rt->N + s->n_flows > UINT32_MAX / 2)
		return mrc__errf(err, errlen, "workload[%u] (step): too many flows", w);
	rt->flow0 = s->n_flows;
	rt->nflows = off * rt->N;
	if (gen_flows(s, rt, cap_flows) || gen_conns(s, rt, cap_conns) || alloc_state(rt))
		return mrc__errf(err, errlen, "step: out of memory"), -ENOMEM;
	return 0;
}

/* Pure compute per step per host, ps. */
uint64_t sim_step_compute_ps(const struct sim_step_rt *rt)
{
	uint64_t t = 0;
	for (uint32_t i = 0; i < rt->nprog; i++)
		t += rt->prog[i].op == I_COMPUTE ? rt->prog[i].dur_ps : 0;
	return t;
}

uint64_t sim_step_ideal_ps(const struct mrc_sim *s)
{
	return s->step ? sim_step_compute_ps(s->step) * s->step->N : 0;
}

int sim_step_kick(struct mrc_sim *s)
{
	struct sim_step_rt *rt = s->step;
	for (uint32_t h = 0; rt && h < rt->H; h++)
		if (sim_schedule(s, rt->start_ps, SE_STEP, h))
			return -ENOMEM;
	return 0;
}
