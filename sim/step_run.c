/* Running the training step (sim/step.c has the whole picture): each
 * host's program, one instruction after another, driven by its compute
 * timers (SE_STEP) and its flows' completions.  A host waits on an
 * all-to-all phase until its sends are acknowledged and everything due to
 * it has arrived; a full gradient bucket starts its ring, whose flows go
 * as the previous hop's data arrives.  What each host did when is kept as
 * intervals (mrc_sim_phases) for the power model (issue 35). */
#include <errno.h>
#include <stdlib.h>

#include "sim/step_int.h"

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
