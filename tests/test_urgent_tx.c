/* The daemon core's send loop while urgent QPs exist (daemon/core/tx.c
 * mrcd_flush, urgent.c; docs/step.md "Urgent dispatch", "The send
 * batch"): the urgent service runs only between send calls, so the calls
 * are short while an urgent QP exists.
 *   urgent_between_small_batches: 200 WRITEs wait on one QP; an urgent
 *     QP exists and urgent_turn_us is 1 (a service is due after every
 *     call).  The flush's first urgent service runs after at most 8
 *     packets have left (before: after a full batch of 64);
 *   no_service_without_urgent: the control: no urgent QP, the same
 *     flush sends them all and runs no service.
 * The core runs in loopback mode on a random port (seed printed), its
 * datagrams through the plane socket (loopback_inproc 0). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "auth/auth.h"
#include "daemon/core/core.h"
#include "tests/support/mrcd_spawn.h"

enum { WRITES = 200 };

static unsigned seed;
static struct mrcd_keydir kd;

struct rig {
	struct mrcd d;
	uint32_t a, b, key;
	uint8_t buf[4096];
	/* the fake urgent poller: the datapath's packets sent at each call */
	uint64_t tx0, at[WRITES];
	int calls;
};

static void on_wc(void *ctx, const struct mrce_wc *wc) { (void)ctx, (void)wc; }

static uint64_t tx_pkts(struct rig *r)
{
	struct mrc_dp_stats ds;
	mrc_dp_get_stats(r->d.dp, &ds);
	return ds.tx_pkts;
}

static int no_poll(void *ctx) { return (void)ctx, 0; }
static int urg_seen(void *ctx)
{
	struct rig *r = ctx;
	if (r->calls < WRITES)
		r->at[r->calls++] = tx_pkts(r) - r->tx0;
	return 0;
}

static void rig_up(struct rig *r)
{
	char err[512] = "";
	struct mrcd_cfg *c = &r->d.cfg;
	mrcd_cfg_default(c);
	snprintf(c->key_file, sizeof(c->key_file), "%s", kd.key);
	c->loopback_inproc = 0;   /* the packets through the plane socket, counted */
	c->urgent_turn_us = 1;    /* a service due after every send call */
	int rc = -1;
	/* Another process may hold a port: a few tries from the seed. */
	for (int t = 0; t < 8 && rc; t++) {
		c->port = 20000 + (seed * 7919u + (unsigned)t * 104729u) % 40000;
		assert_int_equal(mrcd_cfg_check(c, err, sizeof(err)), 0);
		rc = mrcd_core_init(&r->d, err, sizeof(err));
		if (rc) {
			mrcd_core_fini(&r->d);
			ev_loop_destroy(EV_DEFAULT);
			struct mrcd_cfg keep = r->d.cfg;
			memset(&r->d, 0, sizeof(r->d));
			r->d.cfg = keep;
		}
	}
	if (rc)
		fail_msg("core init (seed %u): %s", seed, err);
	struct mrce *e = r->d.eng;
	uint32_t peer;
	assert_int_equal(mrcd_peer_of_host(&r->d, 0, &peer), 0);
	struct mrce_qp_attr qa = { .pd = 1 };
	assert_int_equal(mrce_qp_open(e, &qa, &r->a), 0);
	assert_int_equal(mrce_qp_open(e, &qa, &r->b), 0);
	assert_int_equal(mrce_qp_set_tokens(e, r->a, 0x1111, 0x2222), 0);
	assert_int_equal(mrce_qp_set_tokens(e, r->b, 0x2222, 0x1111), 0);
	assert_int_equal(mrce_qp_connect(e, r->a, peer, r->b, 100, 500), 0);
	assert_int_equal(mrce_qp_connect(e, r->b, peer, r->a, 500, 100), 0);
	assert_int_equal(mrce_mr_add(e, 1, r->buf, sizeof(r->buf),
				     MRCE_ACCESS_LOCAL_READ | MRCE_ACCESS_REMOTE_WRITE |
				     MRCE_ACCESS_LOCAL_WRITE, &r->key), 0);
	assert_int_equal(mrcd_qp_bind(&r->d, r->a, on_wc, r), 0);
	assert_int_equal(mrcd_qp_bind(&r->d, r->b, on_wc, r), 0);
}

static void rig_down(struct rig *r)
{
	mrcd_core_fini(&r->d);
	ev_loop_destroy(EV_DEFAULT);   /* the next rig starts on a fresh loop */
}

/* WRITES posts on QP a, then one flush; returns the packets it sent. */
static uint64_t flush_writes(struct rig *r)
{
	for (int i = 0; i < WRITES; i++) {
		struct mrc_sqe wr = { .wr_id = (uint64_t)i, .op = MRC_SQE_WRITE, .lkey = r->key,
			.len = 8, .rkey = r->key, .roff = 2048 };
		assert_int_equal(mrce_qp_post(r->d.eng, mrcd_now(), r->a, &wr), 0);
	}
	r->tx0 = tx_pkts(r);
	r->calls = 0;
	mrcd_flush(&r->d);
	return tx_pkts(r) - r->tx0;
}

static void urgent_between_small_batches(void **state)
{
	(void)state;
	struct rig *r = calloc(1, sizeof(*r));
	assert_non_null(r);
	rig_up(r);
	struct mrcd_poller p = { .poll = no_poll, .arm = no_poll, .urgent = urg_seen, .ctx = r };
	assert_int_equal(mrcd_poller_add(&r->d, &p), 0);
	mrcd_urgent_count(&r->d, 1);   /* as a client's urgent QP does */
	uint64_t sent = flush_writes(r);
	/* The setting the test needs: more than two full batches to send. */
	if (sent <= 2 * MRC_DP_BATCH)
		fail_msg("seed %u: the flush sent %llu packets, want > %d", seed,
			 (unsigned long long)sent, 2 * MRC_DP_BATCH);
	if (r->calls < 1 || r->at[0] > 8)
		fail_msg("seed %u: the first urgent service ran after %llu of %llu packets (%d services), want <= 8",
			 seed, (unsigned long long)(r->calls ? r->at[0] : sent), (unsigned long long)sent, r->calls);
	/* and between every call after it, none more than 8 apart */
	for (int i = 1; i < r->calls; i++)
		if (r->at[i] - r->at[i - 1] > 8)
			fail_msg("seed %u: services %d and %d %llu packets apart", seed, i - 1, i,
				 (unsigned long long)(r->at[i] - r->at[i - 1]));
	mrcd_poller_del(&r->d, r);
	rig_down(r);
	free(r);
}

static void no_service_without_urgent(void **state)
{
	(void)state;
	struct rig *r = calloc(1, sizeof(*r));
	assert_non_null(r);
	rig_up(r);
	struct mrcd_poller p = { .poll = no_poll, .arm = no_poll, .urgent = urg_seen, .ctx = r };
	assert_int_equal(mrcd_poller_add(&r->d, &p), 0);
	uint64_t sent = flush_writes(r);
	assert_true(sent > 2 * MRC_DP_BATCH);
	assert_int_equal(r->calls, 0);   /* no urgent QP: no service */
	mrcd_poller_del(&r->d, r);
	rig_down(r);
	free(r);
}

static int setup(void **state)
{
	(void)state;
	const char *e = getenv("MRC_TEST_SEED");
	seed = e ? (unsigned)strtoul(e, NULL, 0) : (unsigned)time(NULL) ^ (unsigned)getpid();
	if (mrcd_keydir_make(&kd, "urgenttx"))
		return -1;
	mrcd_log_level = MRCD_LOG_WARNING;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	mrcd_keydir_remove(&kd);
	return 0;
}

int main(void)
{
	const struct CMUnitTest t[] = {
		cmocka_unit_test(urgent_between_small_batches),
		cmocka_unit_test(no_service_without_urgent),
	};
	return cmocka_run_group_tests(t, setup, teardown);
}
