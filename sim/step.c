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
 * group of ep hosts, seen as (ep/local) x local: phase 1 among the local
 * hosts (a leaf), host (A,a) giving (A,b) every token bound for rank b of any
 * group; phase 2 among the hosts of the same rank, (A,b) giving (B,b) what is
 * bound for group B.  A host so talks to local-1 + ep/local-1 peers instead
 * of ep-1, which is what lets 1,024 and 8,192 hosts fit (each peer costs its
 * engine a record per EV, 128 bytes x 264 EVs on an 8-plane Clos).  Each
 * directed host pair has one QP pair for all of a run's step traffic (the
 * bulk flows one of their own, so step traffic never waits behind them).
 *
 * Routing: every token picks topk experts (one per host of its group) at
 * random by popularity weights exp(skew * N(0,1)), drawn per step; an expert
 * takes at most cap * tokens * topk / ep of them and drops the rest,
 * proportionally from every source (Switch/GShard capacity).  A phase's flow
 * carries the kept tokens' bytes; empty flows are still sent (the counts a
 * real all-to-all exchanges first).
 *
 * A host waits on an all-to-all phase until its sends are acknowledged and
 * everything due to it has arrived.  What each host did when is kept as
 * intervals (mrc_sim_phases) for the power model (issue 35). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errf.h"
#include "sim/sim_int.h"

enum { I_COMPUTE, I_A2A, I_GRAD, I_END };

struct step_ins {
	uint8_t op, kind;          /* kind: enum mrc_sim_phase of a compute */
	uint32_t arg;              /* A2A: op 0..7; GRAD: 1 for the last layer */
	uint64_t dur_ps;           /* COMPUTE */
	uint64_t bytes;            /* GRAD */
};

struct step_host {
	uint32_t step, pc, nlaunched;
	uint64_t fill;
	uint64_t wait_since, comp_t0;
	uint8_t computing, entered, began, done, busy, again;
	struct mrc_sim_phase_iv *iv;
	uint32_t niv, cap_iv;
	uint64_t compute_ps;
};

struct sim_step_rt {
	struct mrc_sim_step p;
	uint32_t w, H, N;
	struct step_ins *prog;
	uint32_t nprog;
	/* all-to-all: 4 shapes (dispatch phase 1, 2, combine 1, 2), ops
	 * 0..3 forward and 4..7 backward */
	uint32_t nops;             /* 8 with MoE, else 0 */
	uint32_t *soff[4];         /* per shape: flows of host h at soff[h].. */
	uint32_t *rcnt[4];         /* per shape: flows due to host h */
	uint32_t op_start[9];      /* per op: first flow, relative to the step */
	/* buckets */
	uint32_t nb, R, stride;    /* R: ring flows per host per bucket */
	uint32_t bucket_start, bulk_start, per_step;
	uint32_t flow0, nflows;
	uint32_t *recv_cnt, *sent_cnt, *posted;   /* [(st * (8 + nb) + op) * H + h] */
	uint32_t *qhead, *qtail, *qnext;          /* per conn, per flow: SQ full */
	uint32_t conn0, nconns;
	uint64_t *step_end;        /* [st * H + h] */
	struct step_host *hs;
	uint32_t pending;          /* hosts not done */
	uint64_t tokens, dropped;
	uint64_t start_ps;
};

#define SLOT(rt, st, o, h) (((size_t)(st) * (8 + (rt)->nb) + (o)) * (rt)->H + (h))

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

/* ---- routing and sizes --------------------------------------------------- */

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

/* ---- building ---------------------------------------------------------- */

struct key { uint64_t k; uint32_t f; };

static int key_cmp(const void *a, const void *b)
{
	const struct key *x = a, *y = b;
	if (x->k != y->k)
		return x->k < y->k ? -1 : 1;
	return x->f < y->f ? -1 : x->f > y->f;
}

static int push_flow(struct mrc_sim *s, uint32_t *cap, uint32_t src, uint32_t dst,
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
	s->step_ep = p->ep;
	s->step_local = p->local;
	rt->nops = p->tokens ? 8 : 0;
	if (build_prog(rt))
		return mrc__errf(err, errlen, "step: out of memory"), -ENOMEM;
	rt->R = p->dp > 1 ? 2 * (p->dp - 1) : 0;
	rt->stride = p->dp > 1 ? H / p->dp : 0;
	uint32_t L = p->local, G = p->ep / L;
	/* Shapes: flows per host and due per host. */
	uint32_t sn[4] = { L - 1, G - 1, G - 1, L - 1 };
	for (int sh = 0; sh < 4 && rt->nops; sh++) {
		rt->soff[sh] = malloc(((size_t)H + 1) * sizeof(uint32_t));
		rt->rcnt[sh] = malloc((size_t)H * sizeof(uint32_t));
		if (!rt->soff[sh] || !rt->rcnt[sh])
			return mrc__errf(err, errlen, "step: out of memory"), -ENOMEM;
		for (uint32_t h = 0; h <= H; h++)
			rt->soff[sh][h] = h * sn[sh];
		for (uint32_t h = 0; h < H; h++)
			rt->rcnt[sh][h] = sn[sh];
	}
	uint32_t per_op[8];
	uint32_t off = 0;
	for (uint32_t o = 0; o < 8; o++) {
		rt->op_start[o] = off;
		per_op[o] = rt->nops ? H * sn[o & 3] : 0;
		off += per_op[o];
	}
	rt->op_start[8] = off;
	rt->bucket_start = off;
	off += rt->nb * H * rt->R;
	rt->bulk_start = off;
	off += p->bulk ? H : 0;
	rt->per_step = off;
	if ((uint64_t)off * rt->N + s->n_flows > UINT32_MAX / 2)
		return mrc__errf(err, errlen, "workload[%u] (step): too many flows", w);
	rt->flow0 = s->n_flows;
	rt->nflows = off * rt->N;
	uint64_t *P1 = NULL, *P2 = NULL;
	if (rt->nops) {
		P1 = malloc((size_t)H * L * sizeof(*P1));
		P2 = malloc((size_t)H * G * sizeof(*P2));
		if (!P1 || !P2) {
			free(P1);
			free(P2);
			return mrc__errf(err, errlen, "step: out of memory"), -ENOMEM;
		}
	}
	/* Bucket sizes, as the program fills them. */
	uint64_t *bsz = calloc(rt->nb ? rt->nb : 1, sizeof(*bsz));
	if (!bsz) {
		free(P1);
		free(P2);
		return mrc__errf(err, errlen, "step: out of memory"), -ENOMEM;
	}
	{
		uint32_t b = 0;
		for (uint32_t i = 0; i < rt->nprog; i++)
			if (rt->prog[i].op == I_GRAD) {
				bsz[b] += rt->prog[i].bytes;
				if (bsz[b] >= p->bucket || rt->prog[i].arg)
					b++;
			}
	}
	int rc = 0;
	uint64_t tok = p->tok_bytes;
	for (uint32_t st = 0; st < rt->N && !rc; st++) {
		if (rt->nops) {
			memset(P1, 0, (size_t)H * L * sizeof(*P1));
			memset(P2, 0, (size_t)H * G * sizeof(*P2));
			if ((rc = route(s, rt, P1, P2)))
				break;
		}
		for (uint32_t o = 0; o < rt->nops && !rc; o++) {
			uint32_t sh = o & 3;
			for (uint32_t h = 0; h < H && !rc; h++) {
				uint32_t g0 = h / p->ep * p->ep, e = h - g0, A = e / L, a = e % L;
				if (sh == 0 || sh == 3) {
					/* dispatch 1: (A,a) -> (A,b); combine 2: the
					 * same bytes back, (A,a) -> (A,b) sends what
					 * (A,b) gave it. */
					for (uint32_t b = 0; b < L && !rc; b++) {
						if (b == a)
							continue;
						uint32_t d = g0 + A * L + b;
						uint64_t sz = sh == 0 ? P1[(size_t)h * L + b] :
								   P1[(size_t)d * L + a];
						rc = push_flow(s, cap_flows, h, d, sz * tok, w);
					}
				} else {
					for (uint32_t B = 0; B < G && !rc; B++) {
						if (B == A)
							continue;
						uint32_t d = g0 + B * L + a;
						uint64_t sz = sh == 1 ? P2[(size_t)h * G + B] :
								   P2[(size_t)d * G + A];
						rc = push_flow(s, cap_flows, h, d, sz * tok, w);
					}
				}
			}
		}
		for (uint32_t b = 0; b < rt->nb && !rc; b++) {
			uint64_t chunk = bsz[b] / p->dp;
			for (uint32_t h = 0; h < H && !rc; h++)
				for (uint32_t k = 0; k < rt->R && !rc; k++)
					rc = push_flow(s, cap_flows, h, (h + rt->stride) % H, chunk, w);
		}
		for (uint32_t h = 0; p->bulk && h < H && !rc; h++)
			rc = push_flow(s, cap_flows, h, (h + H / 2) % H, p->bulk, w);
	}
	free(P1);
	free(P2);
	free(bsz);
	if (rc)
		return mrc__errf(err, errlen, "step: out of memory"), -ENOMEM;
	/* One QP pair per directed host pair (bulk: its own), in pair order.
	 * Not one pair for both ways: a QP that also sends holds its ACKs up
	 * to ack_delay_ns (32 us) for data to ride on, which stretched every
	 * all-to-all phase on an idle fabric by up to that; NCCL, too, keeps
	 * one connection per direction. */
	struct key *ks = malloc((size_t)rt->nflows * sizeof(*ks));
	if (!ks)
		return mrc__errf(err, errlen, "step: out of memory"), -ENOMEM;
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
					return mrc__errf(err, errlen, "step: out of memory"), -ENOMEM;
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
	size_t nslot = (size_t)rt->N * (8 + rt->nb) * H;
	rt->recv_cnt = calloc(nslot, sizeof(uint32_t));
	rt->sent_cnt = calloc(nslot, sizeof(uint32_t));
	rt->posted = calloc(nslot, sizeof(uint32_t));
	rt->qhead = malloc(((size_t)rt->nconns * 2 + 1) * sizeof(uint32_t));
	rt->qtail = malloc(((size_t)rt->nconns * 2 + 1) * sizeof(uint32_t));
	rt->qnext = malloc(((size_t)rt->nflows + 1) * sizeof(uint32_t));
	rt->step_end = calloc((size_t)rt->N * H, sizeof(uint64_t));
	rt->hs = calloc(H, sizeof(*rt->hs));
	if (!rt->recv_cnt || !rt->sent_cnt || !rt->posted || !rt->qhead || !rt->qtail ||
	    !rt->qnext || !rt->step_end || !rt->hs)
		return mrc__errf(err, errlen, "step: out of memory"), -ENOMEM;
	for (uint32_t c = 0; c < 2 * rt->nconns; c++)
		rt->qhead[c] = rt->qtail[c] = SIM_NONE;
	rt->pending = H;
	return 0;
}

/* Pure compute per step per host, ps. */
static uint64_t compute_ps(const struct sim_step_rt *rt)
{
	uint64_t t = 0;
	for (uint32_t i = 0; i < rt->nprog; i++)
		t += rt->prog[i].op == I_COMPUTE ? rt->prog[i].dur_ps : 0;
	return t;
}

uint64_t sim_step_ideal_ps(const struct mrc_sim *s)
{
	return s->step ? compute_ps(s->step) * s->step->N : 0;
}

int sim_step_kick(struct mrc_sim *s)
{
	struct sim_step_rt *rt = s->step;
	for (uint32_t h = 0; rt && h < rt->H; h++)
		if (sim_schedule(s, rt->start_ps, SE_STEP, h))
			return -ENOMEM;
	return 0;
}

/* ---- running ------------------------------------------------------------ */

static void iv_add(struct sim_step_rt *rt, uint32_t h, uint64_t t0, uint64_t t1, uint8_t kind)
{
	struct step_host *x = &rt->hs[h];
	if (t1 <= t0)
		return;
	if (x->niv == x->cap_iv) {
		uint32_t nc = x->cap_iv ? 2 * x->cap_iv : 32;
		struct mrc_sim_phase_iv *n = realloc(x->iv, nc * sizeof(*n));
		if (!n)
			return;   /* the record is lost, the run goes on */
		x->iv = n;
		x->cap_iv = nc;
	}
	x->iv[x->niv++] = (struct mrc_sim_phase_iv){ t0 / SIM_PS_PER_NS, t1 / SIM_PS_PER_NS,
		x->step, kind };
}

/* Posts flow f on its QP: -ENOSPC (nothing done) when the QP's send
 * queue is full. */
static int try_post(struct mrc_sim *s, uint32_t f)
{
	struct sim_flow *fl = &s->flows[f];
	struct sim_host *x = &s->hosts[fl->src];
	const struct sim_conn *cn = &s->conns[fl->conn0];
	uint32_t qpn = fl->src == s->flows[cn->flow].src ? cn->sqpn : cn->dqpn;
	struct mrc_sqe wr = { .wr_id = f, .op = MRC_SQE_WRITE_IMM, .lkey = x->src_key,
		.loff = fl->loff, .len = fl->size, .rkey = fl->rkey, .roff = 0, .imm = f };
	int rc = mrce_qp_post(x->eng, s->now / SIM_PS_PER_NS, qpn, &wr);
	if (rc == -ENOSPC)
		return rc;
	fl->posted = 1;
	fl->start_ps = s->now;
	if (s->now < s->first_start_ps)
		s->first_start_ps = s->now;
	if (rc) {
		/* Counted as failed so the run still ends. */
		sim_flow_part_done(s, f, rc);
		sim_flow_part_recv(s, f);
	}
	sim_host_service(s, fl->src);
	return 0;
}

static void enqueue(struct sim_step_rt *rt, uint32_t c, uint32_t f, int at_head)
{
	uint32_t i = f - rt->flow0;
	if (rt->qhead[c] == SIM_NONE) {
		rt->qnext[i] = SIM_NONE;
		rt->qhead[c] = rt->qtail[c] = f;
	} else if (at_head) {
		rt->qnext[i] = rt->qhead[c];
		rt->qhead[c] = f;
	} else {
		rt->qnext[i] = SIM_NONE;
		rt->qnext[rt->qtail[c] - rt->flow0] = f;
		rt->qtail[c] = f;
	}
}

/* Posts flow f, or queues it behind its QP's full send queue (a queue
 * already waiting keeps the order). */
/* The send queue a flow waits in: its QP pair's end at its source. */
static uint32_t sq_of(const struct mrc_sim *s, uint32_t f)
{
	const struct sim_flow *fl = &s->flows[f];
	return 2 * (fl->conn0 - s->step->conn0) +
	       (fl->src != s->flows[s->conns[fl->conn0].flow].src);
}

static void post(struct mrc_sim *s, uint32_t f)
{
	struct sim_step_rt *rt = s->step;
	uint32_t c = sq_of(s, f);
	if (rt->qhead[c] != SIM_NONE || try_post(s, f) == -ENOSPC)
		enqueue(rt, c, f, 0);
}

/* Flow done completed: post what waited for room in its send queue. */
static void unqueue(struct mrc_sim *s, uint32_t done)
{
	struct sim_step_rt *rt = s->step;
	uint32_t c = sq_of(s, done);
	while (rt->qhead[c] != SIM_NONE) {
		uint32_t f = rt->qhead[c];
		rt->qhead[c] = rt->qnext[f - rt->flow0];
		if (rt->qhead[c] == SIM_NONE)
			rt->qtail[c] = SIM_NONE;
		if (try_post(s, f) == -ENOSPC) {
			enqueue(rt, c, f, 1);
			return;
		}
	}
}

static uint32_t flow_of(const struct sim_step_rt *rt, uint32_t st, uint32_t rel)
{
	return rt->flow0 + st * rt->per_step + rel;
}

static int launched(const struct sim_step_rt *rt, uint32_t h, uint32_t st, uint32_t b)
{
	const struct step_host *x = &rt->hs[h];
	return x->step > st || (x->step == st && b < x->nlaunched);
}

static void ring_try(struct mrc_sim *s, uint32_t h, uint32_t st, uint32_t b)
{
	struct sim_step_rt *rt = s->step;
	size_t sl = SLOT(rt, st, 8 + b, h);
	while (rt->posted[sl] < rt->R && launched(rt, h, st, b) &&
	       (rt->posted[sl] == 0 || rt->recv_cnt[sl] >= rt->posted[sl])) {
		uint32_t k = rt->posted[sl]++;
		post(s, flow_of(rt, st, rt->bucket_start + (b * rt->H + h) * rt->R + k));
	}
}

static void advance(struct mrc_sim *s, uint32_t h);

static void begin_step(struct mrc_sim *s, uint32_t h)
{
	struct sim_step_rt *rt = s->step;
	struct step_host *x = &rt->hs[h];
	x->began = 1;
	if (rt->p.bulk)
		post(s, flow_of(rt, x->step, rt->bulk_start + h));
}

static int step_once(struct mrc_sim *s, uint32_t h)
{
	struct sim_step_rt *rt = s->step;
	struct step_host *x = &rt->hs[h];
	if (x->done || x->computing)
		return 0;
	if (!x->began)
		begin_step(s, h);
	const struct step_ins *in = &rt->prog[x->pc];
	uint32_t st = x->step;
	switch (in->op) {
	case I_COMPUTE:
		x->computing = 1;
		x->comp_t0 = s->now;
		sim_schedule(s, s->now + in->dur_ps, SE_STEP, h);
		return 0;
	case I_A2A: {
		uint32_t o = in->arg, sh = o & 3;
		size_t sl = SLOT(rt, st, o, h);
		uint32_t n = rt->soff[sh][h + 1] - rt->soff[sh][h];
		if (!x->entered) {
			x->entered = 1;
			x->wait_since = s->now;
			uint32_t f0 = rt->op_start[o] + rt->soff[sh][h];
			for (uint32_t i = 0; i < n; i++)
				post(s, flow_of(rt, st, f0 + i));
			if (x->step != st || rt->prog[x->pc].op != I_A2A)
				return 0;   /* re-entered and moved on meanwhile */
		}
		if (rt->recv_cnt[sl] < rt->rcnt[sh][h] || rt->sent_cnt[sl] < n)
			return 0;
		iv_add(rt, h, x->wait_since, s->now, MRC_SIM_PH_A2A);
		x->entered = 0;
		x->pc++;
		return 1;
	}
	case I_GRAD:
		x->fill += in->bytes;
		x->pc++;
		if (x->fill >= rt->p.bucket || in->arg) {
			x->fill = 0;
			x->nlaunched++;
			ring_try(s, h, st, x->nlaunched - 1);
		}
		return 1;
	case I_END:
		if (!x->entered) {
			x->entered = 1;
			x->wait_since = s->now;
		}
		for (uint32_t b = 0; b < rt->nb; b++) {
			size_t sl = SLOT(rt, st, 8 + b, h);
			if (rt->sent_cnt[sl] < rt->R || rt->recv_cnt[sl] < rt->R)
				return 0;
		}
		iv_add(rt, h, x->wait_since, s->now, MRC_SIM_PH_GRAD);
		rt->step_end[(size_t)st * rt->H + h] = s->now;
		x->entered = 0;
		x->pc = 0;
		x->nlaunched = 0;
		x->fill = 0;
		x->began = 0;
		if (++x->step == rt->N) {
			x->done = 1;
			rt->pending--;
			return 0;
		}
		return 1;
	}
	return 0;
}

static void advance(struct mrc_sim *s, uint32_t h)
{
	struct step_host *x = &s->step->hs[h];
	if (x->busy) {
		x->again = 1;   /* a completion inside our own post: rerun after */
		return;
	}
	x->busy = 1;
	do {
		x->again = 0;
		while (step_once(s, h))
			;
	} while (x->again);
	x->busy = 0;
}

void sim_step_event(struct mrc_sim *s, uint32_t h)
{
	struct sim_step_rt *rt = s->step;
	struct step_host *x = &rt->hs[h];
	if (x->computing) {
		const struct step_ins *in = &rt->prog[x->pc];
		iv_add(rt, h, x->comp_t0, s->now, in->kind);
		x->compute_ps += in->dur_ps;
		x->computing = 0;
		x->pc++;
	}
	advance(s, h);
}

/* Which op a step flow belongs to: 0..7 all-to-all, 8 + b bucket b, and
 * UINT32_MAX bulk. */
static uint32_t op_of(const struct sim_step_rt *rt, uint32_t f, uint32_t *st)
{
	uint32_t rel = f - rt->flow0;
	*st = rel / rt->per_step;
	rel %= rt->per_step;
	if (rel >= rt->bulk_start)
		return UINT32_MAX;
	if (rel >= rt->bucket_start)
		return 8 + (rel - rt->bucket_start) / (rt->H * rt->R);
	uint32_t o = 0;
	while (o < 7 && rel >= rt->op_start[o + 1])
		o++;
	return o;
}

int sim_step_owns(const struct mrc_sim *s, uint32_t f)
{
	const struct sim_step_rt *rt = s->step;
	return rt && f >= rt->flow0 && f - rt->flow0 < rt->nflows;
}

void sim_step_sent(struct mrc_sim *s, uint32_t f)
{
	struct sim_step_rt *rt = s->step;
	const struct sim_flow *fl = &s->flows[f];
	uint32_t st, o = op_of(rt, f, &st);
	unqueue(s, f);
	if (o == UINT32_MAX)
		return;
	rt->sent_cnt[SLOT(rt, st, o, fl->src)]++;
	advance(s, fl->src);
}

void sim_step_recv(struct mrc_sim *s, uint32_t f)
{
	struct sim_step_rt *rt = s->step;
	const struct sim_flow *fl = &s->flows[f];
	uint32_t st, o = op_of(rt, f, &st);
	if (o == UINT32_MAX)
		return;
	rt->recv_cnt[SLOT(rt, st, o, fl->dst)]++;
	if (o >= 8)
		ring_try(s, fl->dst, st, o - 8);
	advance(s, fl->dst);
}

int sim_step_pending(const struct mrc_sim *s)
{
	return s->step ? (int)s->step->pending : 0;
}

/* ---- results ------------------------------------------------------------ */

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
	r->compute_ns = compute_ps(rt) / SIM_PS_PER_NS;
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
			uint64_t x = e - b > compute_ps(rt) ? e - b - compute_ps(rt) : 0;
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
