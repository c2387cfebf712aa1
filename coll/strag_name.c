/* Stragglers: the verdict from every rank's stamps (docs/coll.md
 * "Stragglers"), a pure function of what the all-gather brought, so every
 * rank names the same.  In order of how unambiguous the evidence is:
 *   1. loss: retransmissions since the last exchange (mrcd's counters,
 *      struct mrc__coll_strag_loss): the rank at one end of most of them
 *      (a CPU stall does not make them; it does make late starts);
 *   2. compute: of the step's calls, the one where a rank started latest
 *      (by both clocks, name_compute), if late enough to matter;
 *   3. delay: only without counters (an older mrcd), the slowest call's
 *      slow paths by mean delivery (votes).
 * Why this order and these rules: bench/results/strag.md. */
#include <errno.h>
#include <stdlib.h>

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
/* Loss: at least this many retransmissions at the named rank, 3/2 of
 * the next rank's, and the lossiest QP of two other ranks and of half of
 * them leading to it.
 * A lossy host link is at one end of every lossy QP, any other rank at
 * one end of two (its own to it, and its to it), so of n ranks it scores
 * about 2(n - 1) / (1 + the largest / the mean): 1.7x the next of 3,
 * 2.5x of 4, more of more, and the lossiest QP of most ranks leads to
 * it; spurious retransmissions (a CPU stall past the RTO) scatter over
 * QPs and ranks. */
/* 15: the fabric bench's healthy steps scored at most 11 (spurious
 * retransmissions under load), a host link losing 5 % at least 19 (run
 * 8, bench/results/strag.md): an absolute count, for steps of about as
 * many packets (~1,700 over 4 ranks). */
#define STRAG_RETX_MIN 15
#define STRAG_RETX_MUL_NUM 3
#define STRAG_RETX_MUL_DEN 2
#define STRAG_RETX_VOTES 2

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

int64_t mrc__coll_strag_median(int64_t *v, size_t n, int hi)
{
	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), cmp_i64);
	return v[hi ? n / 2 : (n - 1) / 2];
}
#define median mrc__coll_strag_median

#define CALL(all, r, i) (&(all)[(size_t)(r) * MRC_COLL_STRAG_CALLS + (i)])

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
		v[r] = CALL(all, r, i)->start_rt;
	int64_t med_start = median(v, n, 0);
	*late = INT64_MIN;
	for (uint32_t r = 0; r < n; r++) {
		const struct mrc__coll_strag_call *k = CALL(all, r, i);
		int64_t a = k->start_rt - med_start, b = med_dur - k->dur;
		int64_t l = a < b ? a : b;
		if (l > *late) {
			*late = l;
			*who = r;
		}
	}
}

/* Slot i's median length over the ranks, or -1 unless every rank stamped
 * the same call there. */
static int64_t call_dur(uint32_t n, const struct mrc__coll_strag_call *all, size_t i)
{
	int64_t v[n];
	if (all[i].seq < 0)
		return -1;
	for (uint32_t r = 0; r < n; r++) {
		const struct mrc__coll_strag_call *k = CALL(all, r, i);
		if (k->seq != all[i].seq || k->dur < 0)
			return -1;
		v[r] = k->dur;
	}
	return median(v, n, 1);
}

/* A network verdict: rank x, the path's other end, who sent, its QP. */
static void net_path(struct mrc_coll_straggler *rec, const struct mrc__coll_strag_call *all, size_t i,
		     uint32_t x, uint32_t other, int x_sends, int64_t qpn, int64_t plane)
{
	rec->cause = MRC_COLL_STRAG_NETWORK;
	rec->rank = x;
	rec->host = (uint32_t)CALL(all, x, i)->host;
	rec->peer_rank = other;
	rec->peer_host = (uint32_t)CALL(all, other, i)->host;
	rec->rank_sends = (uint32_t)x_sends;
	rec->qpn = (uint32_t)qpn;
	rec->plane = (int32_t)plane;
}

/* Nobody was late: votes.  A rank whose slowest QP is slow (its mean
 * delivery at least STRAG_NET_MUL x that rank's median QP: against its
 * own, since a loaded host is slow to every peer) while its others are
 * not suspects the far end: one vote for it.  The rank with most votes
 * is named (ties: the larger sum of the slow paths' latencies), with its
 * slowest slow path.  A rank slow to every peer alike gets none: voting
 * for it too named rank 0 in 15 of 20 healthy steps on the loaded fabric
 * bench (bench/results/strag.md, run 5). */
static int slow_path(const struct mrc__coll_strag_call *k, uint32_t r, uint32_t n)
{
	return k->worst_rank >= 0 && k->worst_rank < n && k->worst_rank != r &&
	       k->worst_lat >= STRAG_MIN_NS && k->worst_lat >= STRAG_NET_MUL * k->med_lat;
}

static void name_delay(uint32_t n, const struct mrc__coll_strag_call *all, size_t i,
		       struct mrc_coll_straggler *rec)
{
	int64_t v[n], sum[n];
	uint32_t votes[n];
	for (uint32_t r = 0; r < n; r++) {
		v[r] = CALL(all, r, i)->med_lat;
		votes[r] = 0, sum[r] = 0;
	}
	int64_t typ = median(v, n, 0);
	for (uint32_t r = 0; r < n; r++) {
		const struct mrc__coll_strag_call *k = CALL(all, r, i);
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
		return;   /* NONE: rank names the latest starter */
	/* Its slowest path, sent by it or to it. */
	const struct mrc__coll_strag_call *best = NULL;
	uint32_t from = x;
	for (uint32_t r = 0; r < n; r++) {
		const struct mrc__coll_strag_call *k = CALL(all, r, i);
		if ((r == x || k->worst_rank == x) && slow_path(k, r, n) &&
		    (!best || k->worst_lat > best->worst_lat)) {
			best = k;
			from = r;
		}
	}
	if (!best)   /* named by its own vote alone: its slowest QP, whatever it took */
		best = CALL(all, x, i);
	uint32_t other = from != x ? from
		: best->worst_rank >= 0 && best->worst_rank < n ? (uint32_t)best->worst_rank : x;
	net_path(rec, all, i, x, other, from == x, best->worst_qpn, best->worst_plane);
	rec->late_us = (uint64_t)best->worst_lat / 1000;
	rec->typical_us = (uint64_t)typ / 1000;
}

void mrc__coll_strag_loss_qp(struct mrc__coll_strag_loss *l, int64_t *per_set, uint32_t peer, uint32_t set,
			     int64_t retx, int64_t pkts, uint32_t qpn)
{
	per_set[set] += retx;
	if (per_set[set] > l->self_retx)
		l->self_retx = per_set[set];
	if (retx <= l->worst_retx) {
		if (retx > l->second_retx)
			l->second_retx = retx;
		return;
	}
	l->second_retx = l->worst_retx;
	l->worst_retx = retx, l->worst_pkts = pkts, l->worst_rank = peer, l->worst_qpn = qpn;
	l->worst_plane = set ? (int64_t)set - 1 : -1;
}

/* Rank r's lossiest QP stands out (more than its next: a tie of one
 * spurious retransmission each is no evidence, and would vote for the
 * lowest peer), its record valid, its peer in range. */
static int loss_path(const struct mrc__coll_strag_loss *l, uint32_t r, uint32_t n)
{
	return l->valid && l->worst_retx > l->second_retx && l->worst_rank >= 0 && l->worst_rank < n &&
	       l->worst_rank != r;
}

/* Retransmissions: every rank's own (on its lossiest plane) count for
 * it, and its lossiest QP's for that QP's far end.  A host whose link
 * loses packets both ways is at one end of every lossy QP: its own
 * retransmit (its data lost on the way out) and so do its peers' to it
 * (their data lost on the way in).  A CPU stall delays every QP alike and
 * retransmits little.  1 when named. */
static int name_loss(uint32_t n, const struct mrc__coll_strag_call *all, const struct mrc__coll_strag_loss *loss,
		     size_t i, struct mrc_coll_straggler *rec)
{
	int64_t score[n];
	uint32_t votes[n];
	for (uint32_t r = 0; r < n; r++)
		score[r] = loss[r].valid ? loss[r].self_retx : 0, votes[r] = 0;
	for (uint32_t r = 0; r < n; r++)
		if (loss_path(&loss[r], r, n)) {
			score[loss[r].worst_rank] += loss[r].worst_retx;
			votes[loss[r].worst_rank]++;
		}
	uint32_t x = 0;
	for (uint32_t r = 1; r < n; r++)
		if (score[r] > score[x])
			x = r;
	int64_t next = 0;
	for (uint32_t r = 0; r < n; r++)
		if (r != x && score[r] > next)
			next = score[r];
	if (score[x] < STRAG_RETX_MIN || STRAG_RETX_MUL_DEN * score[x] < STRAG_RETX_MUL_NUM * next ||
	    votes[x] < STRAG_RETX_VOTES || 2 * votes[x] < n - 1)
		return 0;
	/* The named path: its lossiest QP, or a peer's to it with more. */
	const struct mrc__coll_strag_loss *best = loss_path(&loss[x], x, n) ? &loss[x] : NULL;
	uint32_t from = x;
	for (uint32_t r = 0; r < n; r++)
		if (r != x && loss_path(&loss[r], r, n) && loss[r].worst_rank == x &&
		    (!best || loss[r].worst_retx > best->worst_retx)) {
			best = &loss[r];
			from = r;
		}
	if (!best)
		return 0;   /* its own count alone, no path to show: not named */
	uint32_t other = from != x ? from : (uint32_t)best->worst_rank;
	net_path(rec, all, i, x, other, from == x, best->worst_qpn, best->worst_plane);
	rec->retx = (uint64_t)best->worst_retx;
	rec->pkts = (uint64_t)best->worst_pkts;
	/* Its mean delivery when it was also the sender's slowest QP. */
	const struct mrc__coll_strag_call *k = CALL(all, from, i);
	if (k->worst_qpn == best->worst_qpn)
		rec->late_us = (uint64_t)k->worst_lat / 1000;
	int64_t v[n];
	for (uint32_t r = 0; r < n; r++)
		v[r] = CALL(all, r, i)->med_lat;
	rec->typical_us = (uint64_t)median(v, n, 0) / 1000;
	return 1;
}

int mrc__coll_strag_name(uint32_t n, const struct mrc__coll_strag_call *all,
			 const struct mrc__coll_strag_loss *loss, struct mrc_coll_straggler *rec)
{
	/* The slowest call, and the one with the latest starter: a late
	 * rank is named in the call it held back, not in a slower one that
	 * nobody held back (the fabric bench's misses, strag.md). */
	int slow = -1, hot = -1;
	int64_t slow_dur = 0, hot_dur = 0, hot_late = 0;
	uint32_t hot_who = 0;
	for (size_t i = 0; n && i < MRC_COLL_STRAG_CALLS; i++) {
		int64_t d = call_dur(n, all, i), late;
		uint32_t who = 0;
		if (d < 0)
			continue;
		if (slow < 0 || d > slow_dur)
			slow = (int)i, slow_dur = d;
		name_compute(n, all, i, d, &who, &late);
		if (late >= STRAG_MIN_NS && late >= d / STRAG_LATE_DIV && (hot < 0 || late > hot_late))
			hot = (int)i, hot_dur = d, hot_late = late, hot_who = who;
	}
	if (slow < 0)
		return -ENODATA;
	/* Retransmissions first: under load a rank starts some call late
	 * as a matter of course (run 8 named 5 such instead of a lossy
	 * link); a lossy link is not a scheduling accident. */
	int64_t late;
	*rec = (struct mrc_coll_straggler){ .call = (uint64_t)all[slow].seq, .plane = -1,
					    .call_us = (uint64_t)slow_dur / 1000 };
	if (loss && name_loss(n, all, loss, (size_t)slow, rec))
		return 0;
	size_t i = (size_t)(hot >= 0 ? hot : slow);
	if (hot >= 0) {
		*rec = (struct mrc_coll_straggler){ .call = (uint64_t)all[i].seq, .plane = -1,
						    .call_us = (uint64_t)hot_dur / 1000,
						    .cause = MRC_COLL_STRAG_COMPUTE, .rank = hot_who,
						    .host = (uint32_t)CALL(all, hot_who, i)->host,
						    .late_us = (uint64_t)hot_late / 1000 };
		return 0;
	}
	/* NONE names the latest starter of the slowest call, for the record. */
	name_compute(n, all, i, slow_dur, &rec->rank, &late);
	rec->host = (uint32_t)CALL(all, rec->rank, i)->host;
	/* Delivery times only without counters: with them, a slow path
	 * that retransmits nothing is a CPU's stall as often as not. */
	int counted = 0;
	for (uint32_t r = 0; loss && r < n; r++)
		counted |= (int)loss[r].valid;
	if (!counted)
		name_delay(n, all, i, rec);
	return 0;
}
