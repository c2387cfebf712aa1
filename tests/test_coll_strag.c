/* Stragglers (coll/strag.c, docs/coll.md "Stragglers").
 *   - The verdict from stamps: seeded synthetic calls (noise on every
 *     rank's start, length and deliveries) with one rank started late, or
 *     one rank's deliveries to one peer slow on one plane, or neither:
 *     the injected rank (and path, plane, QP) named in >= 95 % of trials,
 *     nobody named when nothing was injected.
 *   - A late rank in a step whose slowest call nobody held back: named,
 *     in the call it held back (test_late_in_faster_call).
 *   - Retransmissions (synthetic mrcd counters, struct
 *     mrc__coll_strag_loss): one rank's link lossy on one plane among
 *     deliveries whose times show nothing, or only spurious ones
 *     scattered over every QP: the lossy rank, plane and a lossy QP named
 *     in >= 95 % of trials, nobody in >= 95 % (test_loss_offline).
 *   - Live, ranks as threads against a real mrcd (no root): in each of 24
 *     runs one seeded rank sleeps before an all-reduce (its sleep
 *     measured: the injection happened), then mrc_coll_straggler on every
 *     rank: every rank names the same record, and the sleeper as a
 *     compute straggler in >= 95 % of runs (the rate is printed).  Each
 *     mrc_coll_straggler asks mrcd for all the rank's QP counters in
 *     ceil(QPs / 12) round trips (mrc_qp_stats_n), not one per QP
 *     (counted by the context's request ids), and the batch's counters
 *     lie between those mrc_qp_stats reads just before and after.
 * A slow path live needs loss on one rank's QPs, which the loopback
 * fabric cannot inject (every datagram stays inside the one mrcd):
 * bench/fabric/strag.sh does it on the emulated fabric. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "tests/support/coll_ranks.h"
#include "tests/support/mrcd_spawn.h"
#include "tests/support/skip.h"

#include "coll/coll_int.h"
#include "lib/internal.h"
#include "common/prng.h"

#define CALLS MRC_COLL_STRAG_CALLS
#define TRIALS 400
#define LIVE_RUNS 24
/* Longer than the scheduling stalls of a loaded 2-core machine: one of
 * 103 ms (another rank late into another call of the step) beat a
 * 100 ms sleep in 1 of 60 seeded runs. */
#define SLEEP_MS 250

static uint64_t seed;

static int64_t jitter(struct mrc_rng *g, int64_t span)
{
	return (int64_t)(mrc_rng_next(g) % (uint64_t)(2 * span + 1)) - span;
}

/* n ranks' stamps of `calls` calls of about dur_ns each: hosts r / 2,
 * every rank's slowest delivery about typ_ns to its right neighbour, the
 * slowest call at slot `hot`; late >= 0: that rank of the hot call
 * started late_ns late (the others waited that much longer); slow >= 0:
 * that rank's link loses packets on plane `plane`: every rank's slowest
 * delivery (to it; its own to slow_to) took about slow_ns. */
struct synth {
	uint32_t n;
	int late, slow, slow_to, plane;
	int64_t dur, typ, late_ns, slow_ns;
	size_t hot, calls;
};

static void synth_make(struct mrc_rng *g, const struct synth *s, struct mrc__coll_strag_call *all)
{
	for (uint32_t r = 0; r < s->n; r++)
		for (size_t i = 0; i < CALLS; i++) {
			struct mrc__coll_strag_call *k = &all[r * CALLS + i];
			/* The hot call: longer by the wait on the late rank (not
			 * the late rank itself), or by the slow path. */
			int64_t dur = s->dur;
			if (i == s->hot)
				dur += s->late >= 0 ? ((int)r == s->late ? 0 : s->late_ns) : s->dur / 2;
			*k = (struct mrc__coll_strag_call){
				.seq = i < s->calls ? (int64_t)(100 + i) : -1,
				.start_rt = 1000000000000 + (int64_t)i * 10000000 + jitter(g, 50000),
				.dur = dur + jitter(g, dur / 20), .host = r / 2,
				.worst_rank = (r + 1) % s->n, .worst_plane = -1,
				.worst_lat = s->typ + jitter(g, s->typ / 4),
				.med_lat = s->typ + jitter(g, s->typ / 4), .worst_qpn = 1000 + r };
			if (i != s->hot)
				continue;
			if ((int)r == s->late)
				k->start_rt += s->late_ns;
			/* A lossy host: every rank's slowest path is to it, and
			 * its own slowest is one of its paths. */
			if (s->slow >= 0) {
				k->worst_rank = (int)r == s->slow ? (uint32_t)s->slow_to : (uint32_t)s->slow;
				k->worst_plane = s->plane;
				k->worst_lat = s->slow_ns + jitter(g, s->slow_ns / 10);
				k->worst_qpn = 500 + r;
			}
		}
}

/* One trial of each kind; 1 when the verdict is the injected one. */
static int trial(struct mrc_rng *g, int kind, uint32_t *n_out)
{
	/* Of two ranks, a lossy link of either looks the same from both:
	 * three or more for the network. */
	uint32_t lo = kind == MRC_COLL_STRAG_NETWORK ? 3 : 2;
	uint32_t n = lo + (uint32_t)(mrc_rng_next(g) % (17 - lo));
	struct synth s = { .n = n, .late = -1, .slow = -1, .plane = -1,
			   .dur = 5000000 + (int64_t)(mrc_rng_next(g) % 20000000),
			   .typ = 300000 + (int64_t)(mrc_rng_next(g) % 300000),
			   .calls = 1 + mrc_rng_next(g) % CALLS };
	s.hot = mrc_rng_next(g) % s.calls;
	if (kind == MRC_COLL_STRAG_COMPUTE) {
		s.late = (int)(mrc_rng_next(g) % n);
		s.late_ns = s.dur / 2 + (int64_t)(mrc_rng_next(g) % (uint64_t)(2 * s.dur));
	} else if (kind == MRC_COLL_STRAG_NETWORK) {
		s.slow = (int)(mrc_rng_next(g) % n);
		s.slow_to = (int)((s.slow + 1 + mrc_rng_next(g) % (n - 1)) % n);
		s.plane = (int)(mrc_rng_next(g) % 3) - 1;
		s.slow_ns = 3 * s.typ + (int64_t)(mrc_rng_next(g) % 50000000);
	}
	struct mrc__coll_strag_call all[16 * CALLS];
	struct mrc_coll_straggler rec;
	synth_make(g, &s, all);
	*n_out = n;
	if (mrc__coll_strag_name(n, all, NULL, &rec))
		return 0;
	if (rec.call != 100 + s.hot || rec.cause != kind)
		return 0;
	if (kind == MRC_COLL_STRAG_COMPUTE)
		return rec.rank == (uint32_t)s.late && rec.host == (uint32_t)s.late / 2 &&
		       rec.late_us >= (uint64_t)s.late_ns / 2000;
	if (kind == MRC_COLL_STRAG_NETWORK)
		return rec.rank == (uint32_t)s.slow && rec.host == (uint32_t)s.slow / 2 &&
		       rec.peer_rank != rec.rank && rec.peer_host == rec.peer_rank / 2 &&
		       rec.plane == s.plane &&
		       rec.qpn == 500 + (rec.rank_sends ? rec.rank : rec.peer_rank) &&
		       (!rec.rank_sends || rec.peer_rank == (uint32_t)s.slow_to);
	return 1;
}

static void test_name_offline(void **state)
{
	static const char *const what[] = { "none", "compute", "network" };
	for (int kind = MRC_COLL_STRAG_NONE; kind <= MRC_COLL_STRAG_NETWORK; kind++) {
		struct mrc_rng g;
		mrc_rng_seed(&g, seed + (uint64_t)kind);
		int ok = 0;
		uint32_t n = 0;
		for (int t = 0; t < TRIALS; t++)
			ok += trial(&g, kind, &n);
		printf("# offline %s: named right in %d of %d trials (seed %llu)\n", what[kind], ok,
		       TRIALS, (unsigned long long)seed);
		if (ok * 100 < TRIALS * 95)
			fail_msg("%s: %d of %d (seed %llu)", what[kind], ok, TRIALS,
				 (unsigned long long)seed);
	}
	/* No call stamped on some rank: nothing to name. */
	struct mrc__coll_strag_call all[2 * CALLS];
	struct mrc_coll_straggler rec;
	for (size_t i = 0; i < 2 * CALLS; i++)
		all[i] = (struct mrc__coll_strag_call){ .seq = -1 };
	assert_int_equal(mrc__coll_strag_name(2, all, NULL, &rec), -ENODATA);
	/* A peer's record naming a rank out of range (or itself) is not
	 * followed. */
	struct mrc_rng g;
	mrc_rng_seed(&g, seed);
	struct synth s = { .n = 2, .late = -1, .slow = 0, .slow_to = 1, .plane = 0, .dur = 5000000,
			   .typ = 300000, .slow_ns = 30000000, .calls = 1 };
	synth_make(&g, &s, all);
	all[0].worst_rank = 7;
	all[CALLS].worst_rank = 1;
	assert_int_equal(mrc__coll_strag_name(2, all, NULL, &rec), 0);
	assert_int_equal(rec.cause, MRC_COLL_STRAG_NONE);
	/* A rank slow to every peer alike (its median QP 4x the others', no
	 * path of its standing out, its peer out of range) is not named by
	 * the network rule (a loaded host is; a rule that named it crashed
	 * the fabric bench's ranks once). */
	struct mrc__coll_strag_call three[3 * CALLS];
	s = (struct synth){ .n = 3, .late = -1, .slow = -1, .plane = -1, .dur = 5000000,
			    .typ = 300000, .calls = 1 };
	synth_make(&g, &s, three);
	three[CALLS].med_lat = 4 * s.typ;
	three[CALLS].worst_lat = 5 * s.typ;
	three[CALLS].worst_rank = 7;   /* out of range: the peer is not followed */
	assert_int_equal(mrc__coll_strag_name(3, three, NULL, &rec), 0);
	assert_int_equal(rec.cause, MRC_COLL_STRAG_NONE);
}

/* Nobody late in the slowest call of a step (a slow scheduler on the
 * loaded fabric bench), a rank late in a faster one: the late rank is
 * named, in its call.  The rule before it named the slowest call's
 * (none): 3 of the fabric bench's 20 late ranks missed. */
static void test_late_in_faster_call(void **state)
{
	struct mrc_rng g;
	mrc_rng_seed(&g, seed);
	struct mrc__coll_strag_call all[4 * CALLS];
	struct mrc_coll_straggler rec;
	/* Three calls of ~50 ms; call 1 ~110 ms with nobody late; rank 2
	 * 45 ms late into call 2 (its length ~80 ms, its own ~35 ms). */
	struct synth s = { .n = 4, .late = 2, .slow = -1, .plane = -1, .dur = 50000000,
			   .typ = 2000000, .late_ns = 45000000, .hot = 2, .calls = 3 };
	synth_make(&g, &s, all);
	for (uint32_t r = 0; r < 4; r++)
		all[r * CALLS + 1].dur = 110000000 + jitter(&g, 2000000);
	assert_int_equal(mrc__coll_strag_name(4, all, NULL, &rec), 0);
	assert_int_equal(rec.cause, MRC_COLL_STRAG_COMPUTE);
	assert_int_equal(rec.rank, 2);
	assert_int_equal(rec.call, 102);
	/* min(45 ms by start, ~45 +- 7 ms by length): the smaller. */
	assert_true(rec.late_us >= 30000 && rec.late_us <= 46000);
	/* Two late ranks in two calls: the later one. */
	all[0 * CALLS + 0].start_rt += 20000000;
	all[0 * CALLS + 0].dur -= 20000000;
	assert_int_equal(mrc__coll_strag_name(4, all, NULL, &rec), 0);
	assert_int_equal(rec.rank, 2);
	assert_int_equal(rec.call, 102);
}

/* One rank's QP counters: retx[y][p] to peer y on plane p (planes 2),
 * qpn 1000 + 16 * r + 2 * y + p. */
static void loss_of(uint32_t n, uint32_t r, int64_t retx[16][2], struct mrc__coll_strag_loss *l)
{
	int64_t per[3] = { 0, 0, 0 };
	*l = (struct mrc__coll_strag_loss){ .valid = 1, .worst_rank = -1, .worst_plane = -1 };
	for (uint32_t y = 0; y < n; y++)
		for (uint32_t p = 0; p < 2; p++)
			if (y != r)
				mrc__coll_strag_loss_qp(l, per, y, 1 + p, retx[y][p], 64, 1000 + 16 * r + 2 * y + p);
}

/* One trial: n ranks' calls with nothing in their times (no late start,
 * no slow path), spurious retransmissions (0 or 1 on any QP, now and then
 * 2 or 3), and with lossy >= 0 rank `lossy`'s link losing on plane
 * `plane`: every QP of it or to it on that plane 5-12 retransmissions
 * (5 % of the fabric bench's ~70 packets per QP and step).
 * 1 when the verdict is the injected one. */
static int loss_trial(struct mrc_rng *g, int lossy_kind)
{
	uint32_t n = 3 + (uint32_t)(mrc_rng_next(g) % 14);
	int x = lossy_kind ? (int)(mrc_rng_next(g) % n) : -1, plane = (int)(mrc_rng_next(g) % 2);
	struct synth s = { .n = n, .late = -1, .slow = -1, .plane = -1, .dur = 50000000,
			   .typ = 2000000, .calls = 3 };
	struct mrc__coll_strag_call all[16 * CALLS];
	struct mrc__coll_strag_loss loss[16];
	synth_make(g, &s, all);
	for (uint32_t r = 0; r < n; r++) {
		int64_t retx[16][2];
		for (uint32_t y = 0; y < n; y++)
			for (int p = 0; p < 2; p++) {
				uint64_t u = mrc_rng_next(g) % 100;
				retx[y][p] = u < 70 ? 0 : u < 95 ? 1 : 2 + (int64_t)(u % 2);
				if (p == plane && ((int)r == x || (int)y == x))
					retx[y][p] = 5 + (int64_t)(mrc_rng_next(g) % 8);
			}
		loss_of(n, r, retx, &loss[r]);
	}
	struct mrc_coll_straggler rec;
	if (mrc__coll_strag_name(n, all, loss, &rec))
		return 0;
	if (x < 0)
		return rec.cause == MRC_COLL_STRAG_NONE;
	uint32_t sender = rec.rank_sends ? rec.rank : rec.peer_rank;
	uint32_t to = rec.rank_sends ? rec.peer_rank : rec.rank;
	return rec.cause == MRC_COLL_STRAG_NETWORK && rec.rank == (uint32_t)x &&
	       rec.host == (uint32_t)x / 2 && rec.peer_rank != rec.rank && rec.plane == plane &&
	       rec.qpn == 1000 + 16 * sender + 2 * to + (uint32_t)plane && rec.retx >= 3;
}

static void test_loss_offline(void **state)
{
	for (int kind = 0; kind < 2; kind++) {
		struct mrc_rng g;
		mrc_rng_seed(&g, seed + 10 + (uint64_t)kind);
		int ok = 0;
		for (int t = 0; t < TRIALS; t++)
			ok += loss_trial(&g, kind);
		printf("# offline loss, %s: named right in %d of %d trials (seed %llu)\n",
		       kind ? "a lossy link" : "spurious only", ok, TRIALS, (unsigned long long)seed);
		if (ok * 100 < TRIALS * 95)
			fail_msg("%s: %d of %d (seed %llu)", kind ? "lossy" : "spurious", ok, TRIALS,
				 (unsigned long long)seed);
	}
	/* An older mrcd (no counters: valid 0) or no record at all: the
	 * delivery times alone, as before. */
	struct mrc_rng g;
	mrc_rng_seed(&g, seed);
	struct synth s = { .n = 4, .late = -1, .slow = -1, .plane = -1, .dur = 50000000,
			   .typ = 2000000, .calls = 3 };
	struct mrc__coll_strag_call all[4 * CALLS];
	struct mrc__coll_strag_loss loss[4];
	struct mrc_coll_straggler rec;
	synth_make(&g, &s, all);
	for (uint32_t r = 0; r < 4; r++)
		loss[r] = (struct mrc__coll_strag_loss){ .valid = 0, .self_retx = 50, .worst_rank = 1,
							 .worst_retx = 50, .worst_plane = 0 };
	assert_int_equal(mrc__coll_strag_name(4, all, loss, &rec), 0);
	assert_int_equal(rec.cause, MRC_COLL_STRAG_NONE);
	/* Spurious retransmissions alike on every QP (4 each, 6 ranks): no
	 * QP stands out, nobody is named (counting ties, every rank's
	 * lossiest was its lowest peer's, and rank 0 was named). */
	struct mrc__coll_strag_call six[6 * CALLS];
	struct mrc__coll_strag_loss loss6[6];
	s.n = 6;
	synth_make(&g, &s, six);
	for (uint32_t r = 0; r < 6; r++) {
		int64_t retx[16][2];
		for (uint32_t y = 0; y < 6; y++)
			retx[y][0] = retx[y][1] = 4;
		loss_of(6, r, retx, &loss6[r]);
	}
	assert_int_equal(mrc__coll_strag_name(6, six, loss6, &rec), 0);
	assert_int_equal(rec.cause, MRC_COLL_STRAG_NONE);
	/* A lossy link (rank 1, plane 0: 8 on each of its QPs there) and a
	 * rank 30 ms late into one call of 50 (a CPU's stall under load): the
	 * link is named (naming the late start first named rank 2 in 5 of
	 * the fabric bench's 20 lossy steps). */
	s = (struct synth){ .n = 4, .late = 2, .slow = -1, .plane = -1, .dur = 50000000,
			    .typ = 2000000, .late_ns = 30000000, .hot = 1, .calls = 3 };
	synth_make(&g, &s, all);
	for (uint32_t r = 0; r < 4; r++) {
		int64_t retx[16][2] = { { 0 } };
		for (uint32_t y = 0; y < 4; y++)
			if (r == 1 || y == 1)
				retx[y][0] = 8;
		loss_of(4, r, retx, &loss[r]);
	}
	assert_int_equal(mrc__coll_strag_name(4, all, loss, &rec), 0);
	assert_int_equal(rec.cause, MRC_COLL_STRAG_NETWORK);
	assert_int_equal(rec.rank, 1);
	assert_int_equal(rec.plane, 0);
	assert_int_equal(rec.retx, 8);
	/* Without the counters, the late start is named. */
	assert_int_equal(mrc__coll_strag_name(4, all, NULL, &rec), 0);
	assert_int_equal(rec.cause, MRC_COLL_STRAG_COMPUTE);
	assert_int_equal(rec.rank, 2);
	/* A peer's record naming a rank out of range is not followed. */
	s = (struct synth){ .n = 4, .late = -1, .slow = -1, .plane = -1, .dur = 50000000,
			    .typ = 2000000, .calls = 3 };
	synth_make(&g, &s, all);
	for (uint32_t r = 0; r < 4; r++)
		loss[r] = (struct mrc__coll_strag_loss){ .valid = 1, .worst_rank = 9, .worst_retx = 50,
							 .worst_plane = 0 };
	assert_int_equal(mrc__coll_strag_name(4, all, loss, &rec), 0);
	assert_int_equal(rec.cause, MRC_COLL_STRAG_NONE);
}

/* ---- live ------------------------------------------------------------- */

struct live {
	struct mrc_coll_straggler rec[LIVE_RUNS];
	int rc[LIVE_RUNS];
	int slept;                 /* runs in which this rank slept (measured) */
	uint32_t trips[LIVE_RUNS]; /* mrcd round trips of mrc_coll_straggler */
	uint32_t nqp;              /* this rank's QPs through mrcd */
	int stats_ok;              /* batch read between two single reads */
};

/* The rank's QPs through mrcd (the ones mrc_coll_straggler reads). */
static uint32_t rank_qps(struct mrc_coll *c, struct mrc_qp **qps)
{
	uint32_t k = 0;
	for (uint32_t j = 0; j < c->np; j++)
		if (j % c->n != c->me && !c->p[j].shm && c->p[j].qp)
			qps[k++] = c->p[j].qp;
	return k;
}

/* mrc_qp_stats_n's counters for every QP lie between mrc_qp_stats reads
 * just before and just after (monotonic counters, traffic done), and the
 * data the rank sent shows. */
static int batch_matches_single(struct mrc_coll *c)
{
	struct mrc_qp *qps[256];
	struct mrc_qp_stats a[256], b[256], z[256];
	int st[256];
	uint32_t k = c->np <= 256 ? rank_qps(c, qps) : 0;
	uint64_t sent = 0;
	for (uint32_t i = 0; i < k; i++)
		if (mrc_qp_stats(qps[i], &a[i]))
			return 0;
	if (!k || mrc_qp_stats_n(qps, k, b, st))
		return 0;
	for (uint32_t i = 0; i < k; i++) {
		if (st[i] || mrc_qp_stats(qps[i], &z[i]) || b[i].tx_pkts < a[i].tx_pkts ||
		    b[i].tx_pkts > z[i].tx_pkts || b[i].retx < a[i].retx || b[i].retx > z[i].retx)
			return 0;
		sent += b[i].tx_pkts;
	}
	return sent > 0;
}

static uint32_t late_rank(int run, uint32_t n)
{
	uint64_t x = seed ^ (uint64_t)run * 0x9e3779b97f4a7c15ull;
	return (uint32_t)(mrc_splitmix64(&x) % n);
}

static int body_live(struct coll_rank *r)
{
	struct live *L = r->arg;
	struct live *me = &L[mrc_coll_rank(r->c)];
	uint32_t n = mrc_coll_size(r->c);
	size_t count = 16384;
	float *in = calloc(count, sizeof(float)), *out = calloc(count, sizeof(float));
	int rc = in && out ? 0 : -ENOMEM;
	for (int run = 0; !rc && run < LIVE_RUNS; run++) {
		/* Two calls before the slow one: a step of three. */
		for (int k = 0; !rc && k < 2; k++)
			rc = mrc_coll_allreduce(r->c, in, out, count, MRC_COLL_FLOAT32, MRC_COLL_SUM);
		if (!rc && late_rank(run, n) == mrc_coll_rank(r->c)) {
			int64_t t0 = mrcd_spawn_now_ms();
			struct timespec ts = { 0, SLEEP_MS * 1000000L };
			while (nanosleep(&ts, &ts) && errno == EINTR)
				;
			me->slept += mrcd_spawn_now_ms() - t0 >= SLEEP_MS;
		}
		if (!rc)
			rc = mrc_coll_allreduce(r->c, in, out, count, MRC_COLL_FLOAT32, MRC_COLL_SUM);
		/* Not while a call is in flight: its number would disagree. */
		if (!rc && run == 0) {
			struct mrc_coll_req *q;
			struct mrc_coll_straggler x;
			rc = mrc_coll_ibarrier(r->c, &q);
			if (!rc && mrc_coll_straggler(r->c, &x) != -EBUSY)
				rc = -EPROTO;
			int w = rc ? 0 : mrc_coll_wait(q);
			rc = rc ? rc : w;
		}
		uint32_t req0 = r->c->ctx->next_req;
		if (!rc)
			rc = me->rc[run] = mrc_coll_straggler(r->c, &me->rec[run]);
		me->trips[run] = r->c->ctx->next_req - req0;
	}
	struct mrc_qp *qps[256];
	me->nqp = r->c->np <= 256 ? rank_qps(r->c, qps) : 0;
	me->stats_ok = !rc && batch_matches_single(r->c);
	free(in);
	free(out);
	return rc;
}

static void test_slow_rank_live(void **state)
{
	MRCD_GROUP_NEED();
	enum { N = 4 };
	struct coll_rank R[N];
	struct live L[N];
	memset(L, 0, sizeof(L));
	coll_ranks_run(R, N, body_live, 0, L);
	coll_ranks_check_ok(R, N);
	int named = 0, slept = 0;
	for (uint32_t i = 0; i < N; i++)
		slept += L[i].slept;
	/* The injection happened: one measured sleep per run. */
	if (slept != LIVE_RUNS)
		fail_msg("%d sleeps measured, %d runs (seed %llu)", slept, LIVE_RUNS,
			 (unsigned long long)seed);
	/* mrcd round trips per mrc_coll_straggler: one per 12 QPs, and the
	 * record filed by rank 0 and the named rank. */
	for (uint32_t i = 0; i < N; i++) {
		if (!L[i].stats_ok || !L[i].nqp)
			fail_msg("rank %u: %u QPs, batch counters %s (seed %llu)", i, L[i].nqp,
				 L[i].stats_ok ? "ok" : "not between two single reads",
				 (unsigned long long)seed);
		for (int run = 0; run < LIVE_RUNS; run++) {
			const struct mrc_coll_straggler *a = &L[i].rec[run];
			uint32_t filed = a->cause != MRC_COLL_STRAG_NONE && (i == 0 || i == a->rank);
			uint32_t want = (L[i].nqp + MRC_CLI_QP_STATS_N_MAX - 1) / MRC_CLI_QP_STATS_N_MAX;
			if (L[i].trips[run] != want + filed)
				fail_msg("rank %u run %d: %u mrcd round trips for %u QPs (want %u + %u filed, seed %llu)",
					 i, run, L[i].trips[run], L[i].nqp, want, filed,
					 (unsigned long long)seed);
		}
	}
	for (int run = 0; run < LIVE_RUNS; run++) {
		const struct mrc_coll_straggler *a = &L[0].rec[run];
		for (uint32_t i = 1; i < N; i++)
			if (memcmp(a, &L[i].rec[run], sizeof(*a)))
				fail_msg("run %d: rank %u's record differs from rank 0's (seed %llu)", run,
					 i, (unsigned long long)seed);
		int ok = a->cause == MRC_COLL_STRAG_COMPUTE && a->rank == late_rank(run, N);
		named += ok;
		if (!ok)
			printf("# run %d: slept rank %u, named %s rank %u (late %llu us, call %llu us)\n",
			       run, late_rank(run, N), mrc_coll_straggler_cause_name(a->cause), a->rank,
			       (unsigned long long)a->late_us, (unsigned long long)a->call_us);
	}
	printf("# live: the sleeping rank named in %d of %d runs (%.0f %%, seed %llu)\n", named,
	       LIVE_RUNS, 100.0 * named / LIVE_RUNS, (unsigned long long)seed);
	if (named * 100 < LIVE_RUNS * 95)
		fail_msg("named %d of %d (seed %llu)", named, LIVE_RUNS, (unsigned long long)seed);
}

int main(void)
{
	const char *e = getenv("MRC_TEST_SEED");
	seed = e ? strtoull(e, NULL, 0) : (uint64_t)time(NULL);
	printf("# seed %llu (MRC_TEST_SEED replays it)\n", (unsigned long long)seed);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_name_offline),
		cmocka_unit_test(test_late_in_faster_call),
		cmocka_unit_test(test_loss_offline),
		cmocka_unit_test(test_slow_rank_live),
	};
	setenv("MRC_COLL_SHM", "0", 1);   /* the QP path through mrcd, as a fabric's */
	return cmocka_run_group_tests(tests, mrcd_group_setup, mrcd_group_teardown);
}
