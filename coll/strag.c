/* Stragglers (docs/coll.md "Stragglers"): every rank stamps each call it
 * runs (start, length, the delivery time of each chunk it sends) at the
 * cost of a clock read per chunk; mrc_coll_straggler exchanges the stamps
 * of the last calls in one all-gather, and every rank names the same rank
 * (and, for the network, path) that held the slowest call back. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "coll/coll_int.h"

static int64_t clock_ns(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t mrc__coll_strag_now_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

void mrc__coll_strag_delivered(struct mrc_coll *c, struct mrc__coll_peer *p)
{
	p->lat_sum += mrc__coll_strag_now_ns() - p->tpost[p->data_done % c->window];
	p->lat_n++;
}

void mrc__coll_strag_begin(struct mrc_coll *c)
{
	struct mrc__coll_strag *g = &c->strag;
	if (g->off)
		return;
	g->t0 = mrc__coll_strag_now_ns();
	g->t0_rt = clock_ns(CLOCK_REALTIME);
	for (uint32_t j = 0; j < c->np; j++)
		c->p[j].lat_sum = c->p[j].lat_n = 0;
}

void mrc__coll_strag_end(struct mrc_coll *c)
{
	struct mrc__coll_strag *g = &c->strag;
	if (g->off)
		return;
	struct mrc__coll_strag_call *k = &g->call[g->seq % MRC_COLL_STRAG_CALLS];
	*k = (struct mrc__coll_strag_call){ .seq = (int64_t)g->seq, .start_rt = g->t0_rt,
				       .dur = mrc__coll_strag_now_ns() - g->t0, .host = c->host,
				       .worst_rank = -1, .worst_plane = -1 };
	g->seq++;
	/* Our QP with the slowest mean delivery this call, and the median
	 * over our QPs that delivered anything.  Means, not maxima: a CPU
	 * stall of a loaded host delays one chunk of any QP as much as a
	 * lost packet does, but a lossy link delays many of one QP's. */
	int64_t lat[64];
	size_t nl = 0;
	for (uint32_t j = 0; j < c->np; j++) {
		const struct mrc__coll_peer *p = &c->p[j];
		if (j % c->n == c->me || p->shm || !p->lat_n)
			continue;
		int64_t mean = p->lat_sum / p->lat_n;
		if (nl < sizeof(lat) / sizeof(lat[0]))
			lat[nl++] = mean;
		if (mean > k->worst_lat) {
			k->worst_lat = mean;
			k->worst_rank = j % c->n;
			k->worst_plane = j / c->n ? (int64_t)(j / c->n) - 1 : -1;
			k->worst_qpn = mrc_qp_num(p->qp);
		}
	}
	k->med_lat = mrc__coll_strag_median(lat, nl, 0);
}

/* Files a verdict with our mrcd for `mrcctl stragglers` (docs/coll.md):
 * rank 0 and the named rank do, so the records are on the named host's
 * mrcd and one other, not on every host.  Best effort: an mrcd that
 * refuses (rate bound, older daemon) costs the application nothing. */
static void strag_file(struct mrc_coll *c, const struct mrc_coll_straggler *s)
{
	if (s->cause == MRC_COLL_STRAG_NONE || (c->me != 0 && c->me != s->rank))
		return;
	int net = s->cause == MRC_COLL_STRAG_NETWORK;
	struct mrc_straggler_rec m = {
		.size = sizeof(m), .comm = c->nonce, .call = s->call, .rank = s->rank, .host = s->host,
		.cause = net ? MRC_STRAG_NETWORK : MRC_STRAG_COMPUTE, .plane = -1,
		.call_us = s->call_us, .late_us = s->late_us };
	if (net) {
		m.peer_rank = s->peer_rank, m.peer_host = s->peer_host, m.qpn = s->qpn;
		m.plane = s->plane, m.rank_sends = !!s->rank_sends, m.typical_us = s->typical_us;
	}
	mrc_straggler_file(c->ctx, &m);
}

/* Counters of k QPs: one round trip per 12 (mrc_qp_stats_n), or one per
 * QP from an mrcd that predates it. */
static int strag_stats(struct mrc_qp **qps, uint32_t k, struct mrc_qp_stats *st, int *rc)
{
	int r = mrc_qp_stats_n(qps, k, st, rc);
	if (r != -EOPNOTSUPP)
		return r;
	for (uint32_t i = 0; i < k; i++)
		rc[i] = mrc_qp_stats(qps[i], &st[i]);
	return 0;
}

/* Our QPs' retransmissions since the last exchange, from mrcd (every QP
 * at once, on demand only, never per call). */
static void strag_loss(struct mrc_coll *c, struct mrc__coll_strag_loss *l)
{
	/* MRC_COLL_STRAG_TRACE: each QP's counts to stderr (the fabric
	 * bench keeps them, to check the rule against what it saw). */
	static int trace = -1;
	if (trace < 0)
		trace = getenv("MRC_COLL_STRAG_TRACE") != NULL;
	int64_t per_set[c->sets];
	memset(per_set, 0, sizeof(per_set));
	*l = (struct mrc__coll_strag_loss){ .valid = 1, .worst_rank = -1, .worst_plane = -1 };
	struct mrc_qp **qps = calloc(c->np, sizeof(*qps));
	uint32_t *idx = calloc(c->np, sizeof(*idx));   /* qps[i] is peer idx[i]'s */
	struct mrc_qp_stats *st = calloc(c->np, sizeof(*st));
	int *rc = calloc(c->np, sizeof(*rc));
	uint32_t k = 0;
	if (qps && idx && st && rc)
		for (uint32_t j = 0; j < c->np; j++)
			if (j % c->n != c->me && !c->p[j].shm && c->p[j].qp) {
				idx[k] = j;
				qps[k++] = c->p[j].qp;
			}
	if (!qps || !idx || !st || !rc || (k && strag_stats(qps, k, st, rc))) {
		l->valid = 0;
		k = 0;
	}
	for (uint32_t i = 0; i < k; i++) {
		uint32_t j = idx[i];
		struct mrc__coll_peer *p = &c->p[j];
		if (rc[i]) {
			l->valid = 0;
			continue;
		}
		int64_t retx = (int64_t)(st[i].retx - p->retx_base);
		int64_t pkts = (int64_t)(st[i].tx_pkts - p->pkts_base);
		p->retx_base = st[i].retx, p->pkts_base = st[i].tx_pkts;
		mrc__coll_strag_loss_qp(l, per_set, j % c->n, j / c->n, retx, pkts, mrc_qp_num(p->qp));
		if (trace)
			fprintf(stderr, "mrc_coll_straggler: rank %u call %llu qp to %u plane %d retx %lld pkts %lld\n",
				c->me, (unsigned long long)c->strag.seq, j % c->n, (int)(j / c->n) - 1,
				(long long)retx, (long long)pkts);
	}
	free(qps);
	free(idx);
	free(st);
	free(rc);
}

int mrc_coll_straggler(struct mrc_coll *c, struct mrc_coll_straggler *rec)
{
	if (!c || !rec)
		return -EINVAL;
	/* Calls in flight would run unstamped during the exchange on some
	 * ranks and not others: the calls' numbers would disagree. */
	if (c->inflight)
		return -EBUSY;
	struct mrc__coll_strag *g = &c->strag;
	struct mrc__coll_strag_xch mine;
	for (size_t i = 0; i < MRC_COLL_STRAG_CALLS; i++) {
		mine.call[i] = g->call[i];
		/* Stamped before the last exchange, or never: not ours to name. */
		if (mine.call[i].seq % MRC_COLL_STRAG_CALLS != (int64_t)i ||
		    mine.call[i].seq < (int64_t)g->since || mine.call[i].seq >= (int64_t)g->seq)
			mine.call[i].seq = -1;
	}
	strag_loss(c, &mine.loss);
	struct mrc__coll_strag_xch *xch = calloc(c->n, sizeof(mine));
	struct mrc__coll_strag_call *all = calloc(c->n, sizeof(mine.call));
	struct mrc__coll_strag_loss *loss = calloc(c->n, sizeof(mine.loss));
	int r = xch && all && loss ? 0 : -ENOMEM;
	g->off = 1;   /* the exchange is no call of the application's */
	if (!r)
		r = mrc_coll_allgather(c, &mine, xch, MRC__COLL_STRAG_WORDS, MRC_COLL_INT64);
	g->off = 0;
	g->since = g->seq;
	for (uint32_t k = 0; !r && k < c->n; k++) {
		memcpy(&all[k * MRC_COLL_STRAG_CALLS], xch[k].call, sizeof(mine.call));
		loss[k] = xch[k].loss;
	}
	if (!r)
		r = mrc__coll_strag_name(c->n, all, loss, rec);
	free(xch);
	free(all);
	free(loss);
	if (!r)
		strag_file(c, rec);
	return r;
}

const char *mrc_coll_straggler_cause_name(int cause)
{
	switch (cause) {
	case MRC_COLL_STRAG_NONE: return "none";
	case MRC_COLL_STRAG_COMPUTE: return "compute";
	case MRC_COLL_STRAG_NETWORK: return "network";
	}
	return "?";
}
