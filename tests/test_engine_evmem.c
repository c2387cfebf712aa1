/* The memory of a path record (issue 33, transport/store.h): one 64-byte
 * line per EV, the rest (losses, trims, ECN, bad paths) in a cold side
 * array whose pages a clean run never touches; a path's RTT kept in
 * 32 bits saturates instead of wrapping.
 * Seed: MRC_TEST_SEED=<n> replays a run; it is printed with every failure. */
#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <cmocka.h>

#include "common/prng.h"
#include "tests/support/etest_case.h"
#include "tests/support/resident.h"
#include "transport/store.h"   /* the records themselves */

static size_t cold_resident(struct mrce *e, uint32_t peer)
{
	const struct mrce__peer *p = &e->peers[peer];
	return resident_pages(p->cold, (size_t)p->nev * sizeof(*p->cold));
}

/* Resident pages of a QP's own arrays (mapped: each is >= a page at the
 * defaults). */
static size_t qp_resident(struct mrce *e, uint32_t qpn, const char *which)
{
	const struct mrce__qp *qp = mrce__qp_get(e, qpn);
	const struct mrce_cfg *c = &e->cfg;
	CHECK(qp != NULL);
	if (!strcmp(which, "sq"))
		return resident_pages(qp->sq, c->sq_depth * sizeof(*qp->sq));
	return resident_pages(qp->rq, c->rq_depth * sizeof(*qp->rq));
}

/* Resident pages of the engine's window pool (transport/wpool.c): every
 * send block ("slots"), or one array of every receive block ("rslots",
 * "rcq"); each array is whole pages at the defaults. */
static size_t pool_resident(struct mrce *e, const char *which)
{
	size_t w = e->cfg.window, k = 0;
	if (!strcmp(which, "slots"))
		return resident_pages(e->wp_send, e->wp_n * w * sizeof(struct mrce__slot));
	size_t rs = w * sizeof(struct mrce__rslot), rc = w * sizeof(struct mrce__rcqe);
	for (size_t i = 0; i < e->wp_n; i++) {
		const uint8_t *b = e->wp_recv + i * (rs + rc);
		k += !strcmp(which, "rslots") ? resident_pages(b, rs) : resident_pages(b + rs, rc);
	}
	return k;
}

/* 264 EVs in 8 planes as on the 8-plane Clos, the last 8 DENIED at setup
 * (a cross-leaf pair's one-hop paths), 2 MiB of WRITEs over equal,
 * fixed delays (no reordering, so no loss): not one cold page is
 * resident.  Then one EV retired by hand writes its cold record: the
 * page shows, so the check above could see one. */
static void test_clean_run_leaves_cold_untouched(void **s)
{
	(void)s;
	struct chan_cfg cc;
	static struct etest t;   /* outlives a failed CHECK's longjmp: the
	                            teardown finishes it (etest_cleanup_all) */
	struct mrce_stats st;
	struct mrce_ev_info ei;

	cfg_two(&cc, 264, 8);
	cc.delay_min = cc.delay_max = 0;
	cc.path.delay_ns = 5 * US;
	CHECK_EQ(etest_init(&t, &cc, 2 << 20, 2 << 20, 0), 0);
	for (int n = 0; n < 2; n++)
		for (uint32_t ev = 256; ev < 264; ev++)
			CHECK_EQ(mrce_ev_set_denied(E(&t, n), t.ch->now, t.ch->node[n].peer[1 - n],
						    ev, 1), 0);
	for (uint64_t i = 0; i < 8; i++)
		write_and_wait_at(&t, t.qa, i << 18, 1 << 18, i);
	check_placed(&t, 0, 0, 2 << 20);
	uint32_t p0 = t.ch->node[0].peer[1], p1 = t.ch->node[1].peer[0];
	mrce_stats(E(&t, 0), &st);
	CHECK_EQ(st.loss_detected, 0);          /* a clean run, as meant */
	CHECK(st.tx_data >= 512);
	/* Before mrce_ev_info, which reads the cold record (mincore counts
	 * a page read, mapped to the zero page, as resident; RSS does not). */
	CHECK_EQ(cold_resident(E(&t, 0), p0), 0);
	CHECK_EQ(cold_resident(E(&t, 1), p1), 0);
	CHECK_EQ(mrce_ev_info(E(&t, 0), p0, 260, &ei), 0);
	CHECK_EQ(ei.state, MRCE_EV_DENIED);     /* setup changed state */
	CHECK_EQ(ei.lost, 0);

	/* The QPs' arrays too: the target of WRITEs touches none of its
	 * send side nor its RECV rings (its effect records, rslots, it
	 * does: one per PSN), the sender none of its receive side; its
	 * in-flight slots are the control that the check sees a page.  The
	 * window state is the pool's (one block each used, and given back). */
	CHECK_EQ(qp_resident(E(&t, 1), t.qb, "sq"), 0);
	CHECK_EQ(pool_resident(E(&t, 1), "slots"), 0);
	CHECK_EQ(qp_resident(E(&t, 1), t.qb, "rq"), 0);
	CHECK_EQ(pool_resident(E(&t, 1), "rcq"), 0);
	CHECK_EQ(pool_resident(E(&t, 1), "rslots"), 2);   /* 256 x 32 B, all used */
	CHECK_EQ(pool_resident(E(&t, 0), "rslots"), 0);
	CHECK_EQ(qp_resident(E(&t, 0), t.qa, "rq"), 0);
	CHECK_EQ(pool_resident(E(&t, 0), "rcq"), 0);
	CHECK_EQ(pool_resident(E(&t, 0), "slots"), 2);   /* 256 x 32 B, all used */
	CHECK(qp_resident(E(&t, 0), t.qa, "sq") >= 1);

	CHECK_EQ(mrce_ev_set_bad(E(&t, 0), t.ch->now, p0, 0), 0);
	CHECK_EQ(mrce_ev_info(E(&t, 0), p0, 0, &ei), 0);
	CHECK_EQ(ei.state, MRCE_EV_ASSUMED_BAD);
	CHECK_EQ(resident_pages(E(&t, 0)->peers[p0].cold, 1), 1);   /* EV 0's page */
	etest_fini(&t);
}

/* The 64-bit RFC 6298 update, kept in 32 bits: equal to it below 2^32 ns
 * (seeded samples), saturating at the boundary and above it, and back
 * down from the saturated value as the 64-bit one would from there. */
static void test_path_rtt_saturates(void **s)
{
	(void)s;
	struct mrce__ev pa;
	uint64_t srtt = 0, var = 0;
	struct mrc_rng r;

	memset(&pa, 0, sizeof(pa));
	mrc_rng_seed(&r, g_seed);
	for (int i = 0; i < 10000; i++) {
		uint64_t rtt = 1 + mrc_rng_range(&r, 0, (1ull << 31) - 1);
		mrce__rtt_update(&srtt, &var, rtt);
		mrce__ev_rtt_update(&pa, rtt);
		CHECK_EQ(pa.srtt, srtt);
		CHECK_EQ(pa.rttvar, var);
	}

	memset(&pa, 0, sizeof(pa));
	mrce__ev_rtt_update(&pa, UINT32_MAX);             /* the last that fits */
	CHECK_EQ(pa.srtt, UINT32_MAX);
	CHECK_EQ(pa.rttvar, UINT32_MAX / 2);
	memset(&pa, 0, sizeof(pa));
	mrce__ev_rtt_update(&pa, (uint64_t)UINT32_MAX + 1);
	CHECK_EQ(pa.srtt, UINT32_MAX);                     /* not 0 */
	CHECK_EQ(pa.rttvar, 1ull << 31);
	for (int i = 0; i < 6; i++) {                       /* 2.3 x the range */
		srtt = pa.srtt;
		var = pa.rttvar;
		mrce__rtt_update(&srtt, &var, 10ull * SEC);
		mrce__ev_rtt_update(&pa, 10ull * SEC);
		CHECK_EQ(pa.srtt, UINT32_MAX);              /* not srtt mod 2^32 */
		CHECK_EQ(pa.rttvar, var > UINT32_MAX ? UINT32_MAX : var);
		if (i == 0)   /* (3 x 2^31 + 10 s - (2^32 - 1)) / 4 */
			CHECK_EQ(pa.rttvar, 3036870912u);
	}
	CHECK_EQ(pa.rttvar, UINT32_MAX);
	srtt = pa.srtt;
	var = pa.rttvar;
	mrce__rtt_update(&srtt, &var, 10 * US);
	mrce__ev_rtt_update(&pa, 10 * US);
	CHECK_EQ(pa.srtt, srtt);
	CHECK_EQ(pa.rttvar, var);
	CHECK(pa.srtt < UINT32_MAX);
}

int main(void)
{
	etest_seed("test_engine_evmem", 5);
	const struct CMUnitTest tests[] = {
		T(test_clean_run_leaves_cold_untouched),
		T(test_path_rtt_saturates),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
