/* Stragglers (docs/coll.md "Stragglers"): every rank stamps each call it
 * runs (start, length, the delivery time of each chunk it sends) at the
 * cost of a clock read per chunk; mrc_coll_straggler exchanges the stamps
 * of the last calls in one all-gather, and every rank names the same rank
 * (and, for the network, path) that held the slowest call back. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "codec/climsg.h"
#include "coll/coll_int.h"

/* Below this nothing is named: a scheduler tick, not a straggler. */
#define STRAG_MIN_NS 200000
/* Late start: by at least this fraction of the call's median length
 * (the others' length includes their wait for it).  An eighth named
 * ranks late by 7-10 ms of 40-58 ms calls on the loaded fabric bench,
 * where nobody slept (scheduling, or the previous call's end). */
#define STRAG_LATE_DIV 4
/* Slow path: a delivery this many times the typical one. */
#define STRAG_NET_MUL 2

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

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

/* The median of v[0..n) (sorts v); 0 for none.  Of an even count, the
 * upper one (hi) or the lower: of two ranks, one late, the median length
 * must be the one that waited and the median start the one on time. */
static int64_t median(int64_t *v, size_t n, int hi)
{
	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), cmp_i64);
	return v[hi ? n / 2 : (n - 1) / 2];
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
	k->med_lat = median(lat, nl, 0);
}

/* The late starter of call slot i: how late each rank was by two clocks
 * that fail differently, the smaller of them (a rank's start against the
 * median start needs the hosts' clocks in step; its length against the
 * median length needs the ranks to end together, which a chain's root
 * does not): a rank is late only when both say so. */
static void name_compute(uint32_t n, const struct mrc__coll_strag_call *all, size_t i, int64_t med_dur,
			 uint32_t *who, int64_t *late)
{
	int64_t v[n];
	for (uint32_t r = 0; r < n; r++)
		v[r] = all[r * MRC_COLL_STRAG_CALLS + i].start_rt;
	int64_t med_start = median(v, n, 0);
	*late = INT64_MIN;
	for (uint32_t r = 0; r < n; r++) {
		const struct mrc__coll_strag_call *k = &all[r * MRC_COLL_STRAG_CALLS + i];
		int64_t a = k->start_rt - med_start, b = med_dur - k->dur;
		int64_t l = a < b ? a : b;
		if (l > *late) {
			*late = l;
			*who = r;
		}
	}
}

/* The slot of the slowest call every rank stamped (by median length). */
static int slowest_call(uint32_t n, const struct mrc__coll_strag_call *all, int64_t *med_dur)
{
	int best = -1;
	int64_t v[n];
	for (size_t i = 0; i < MRC_COLL_STRAG_CALLS; i++) {
		int ok = all[i].seq >= 0;
		for (uint32_t r = 0; ok && r < n; r++) {
			const struct mrc__coll_strag_call *k = &all[r * MRC_COLL_STRAG_CALLS + i];
			ok = k->seq == all[i].seq && k->dur >= 0;
			v[r] = k->dur;
		}
		int64_t m = ok ? median(v, n, 1) : -1;
		if (ok && (best < 0 || m > *med_dur)) {
			best = (int)i;
			*med_dur = m;
		}
	}
	return best;
}

/* Nobody was late: votes.  A rank whose slowest QP is slow (its mean
 * delivery at least STRAG_NET_MUL x that rank's median QP: against its
 * own, since a loaded host is slow to every peer) while its others are
 * not suspects the far end: one vote for it.  The rank with most votes
 * is named (ties: the larger sum of the slow paths' latencies), with its
 * slowest slow path.  A host whose link loses packets gets a vote from
 * every rank that sends to it.  A rank slow to every peer alike gets
 * none: voting for it too named rank 0 in 15 of 20 healthy steps on the
 * loaded fabric bench (bench/results/strag.md, run 5). */
/* Rank r's slowest QP is a slow path (its peer in range). */
static int slow_path(const struct mrc__coll_strag_call *k, uint32_t r, uint32_t n)
{
	return k->worst_rank >= 0 && k->worst_rank < n && k->worst_rank != r &&
	       k->worst_lat >= STRAG_MIN_NS && k->worst_lat >= STRAG_NET_MUL * k->med_lat;
}

static int name_network(uint32_t n, const struct mrc__coll_strag_call *all, size_t i,
			struct mrc_coll_straggler *rec)
{
	int64_t v[n], sum[n];
	uint32_t votes[n];
	for (uint32_t r = 0; r < n; r++) {
		v[r] = all[r * MRC_COLL_STRAG_CALLS + i].med_lat;
		votes[r] = 0, sum[r] = 0;
	}
	int64_t typ = median(v, n, 0);
	for (uint32_t r = 0; r < n; r++) {
		const struct mrc__coll_strag_call *k = &all[r * MRC_COLL_STRAG_CALLS + i];
		if (slow_path(k, r, n)) {
			votes[k->worst_rank]++;
			sum[k->worst_rank] += k->worst_lat;
		}
	}
	uint32_t x = 0;
	for (uint32_t r = 1; r < n; r++)
		if (votes[r] > votes[x] || (votes[r] == votes[x] && sum[r] > sum[x]))
			x = r;
	if (!votes[x])
		return 0;   /* NONE: rank names the latest starter */
	/* Its slowest path, sent by it or to it. */
	const struct mrc__coll_strag_call *best = NULL;
	uint32_t from = 0;
	for (uint32_t r = 0; r < n; r++) {
		const struct mrc__coll_strag_call *k = &all[r * MRC_COLL_STRAG_CALLS + i];
		if ((r == x || k->worst_rank == x) && slow_path(k, r, n) &&
		    (!best || k->worst_lat > best->worst_lat)) {
			best = k;
			from = r;
		}
	}
	if (!best) {
		/* Named by its own vote alone (slow to most peers, no single
		 * path standing out): its slowest QP, whatever it took. */
		best = &all[x * MRC_COLL_STRAG_CALLS + i];
		from = x;
	}
	uint32_t other = from != x ? from
		: best->worst_rank >= 0 && best->worst_rank < n ? (uint32_t)best->worst_rank : x;
	rec->cause = MRC_COLL_STRAG_NETWORK;
	rec->rank = x;
	rec->host = (uint32_t)all[x * MRC_COLL_STRAG_CALLS + i].host;
	rec->peer_rank = other;
	rec->peer_host = (uint32_t)all[other * MRC_COLL_STRAG_CALLS + i].host;
	rec->rank_sends = from == x;
	rec->qpn = (uint32_t)best->worst_qpn;
	rec->plane = (int32_t)best->worst_plane;
	rec->late_us = (uint64_t)best->worst_lat / 1000;
	rec->typical_us = (uint64_t)typ / 1000;
	return 0;
}

int mrc__coll_strag_name(uint32_t n, const struct mrc__coll_strag_call *all, struct mrc_coll_straggler *rec)
{
	int64_t med_dur = 0;
	int i = n ? slowest_call(n, all, &med_dur) : -1;
	if (i < 0)
		return -ENODATA;
	*rec = (struct mrc_coll_straggler){ .call = (uint64_t)all[i].seq, .plane = -1,
					    .call_us = (uint64_t)med_dur / 1000 };
	uint32_t who = 0;
	int64_t late;
	name_compute(n, all, (size_t)i, med_dur, &who, &late);
	rec->rank = who;
	rec->host = (uint32_t)all[who * MRC_COLL_STRAG_CALLS + i].host;
	if (late >= STRAG_MIN_NS && late >= med_dur / STRAG_LATE_DIV) {
		rec->cause = MRC_COLL_STRAG_COMPUTE;
		rec->late_us = (uint64_t)late / 1000;
		return 0;
	}
	return name_network(n, all, (size_t)i, rec);
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
	struct mrc_cli_straggler m = {
		.comm = c->nonce, .call = s->call, .rank = s->rank, .host = s->host,
		.cause = net ? MRC_CLI_STRAG_NETWORK : MRC_CLI_STRAG_COMPUTE, .plane = -1,
		.call_us = s->call_us, .late_us = s->late_us };
	if (net) {
		m.peer_rank = s->peer_rank, m.peer_host = s->peer_host, m.qpn = s->qpn;
		m.plane = s->plane, m.rank_sends = !!s->rank_sends, m.typical_us = s->typical_us;
	}
	mrc_straggler_file(c->ctx, &m);
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
	struct mrc__coll_strag_call mine[MRC_COLL_STRAG_CALLS];
	for (size_t i = 0; i < MRC_COLL_STRAG_CALLS; i++) {
		mine[i] = g->call[i];
		/* Stamped before the last exchange, or never: not ours to name. */
		if (mine[i].seq % MRC_COLL_STRAG_CALLS != (int64_t)i ||
		    mine[i].seq < (int64_t)g->since || mine[i].seq >= (int64_t)g->seq)
			mine[i].seq = -1;
	}
	struct mrc__coll_strag_call *all = calloc(c->n, sizeof(mine));
	if (!all)
		return -ENOMEM;
	g->off = 1;   /* the exchange is no call of the application's */
	int r = mrc_coll_allgather(c, mine, all, MRC_COLL_STRAG_CALLS * MRC__COLL_STRAG_WORDS,
				   MRC_COLL_INT64);
	g->off = 0;
	g->since = g->seq;
	if (!r)
		r = mrc__coll_strag_name(c->n, all, rec);
	free(all);
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
