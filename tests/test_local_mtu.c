/* Two clients of one mrcd (no wire between them) move local_mtu bytes per
 * packet (daemon/core/node.c, cm.c; docs/client.md "Clients of one
 * mrcd"), on a real loopback mrcd:
 *   stream_64m: a 64 MiB WRITE, checked byte for byte, is 64 MiB / 8192
 *     fresh packets (mrc_qp_stats), where mtu would make it twice that;
 *   cm_connect: the same for a QP pair connected by listen/accept (the
 *     limits negotiated in REQ/REP, not out of band);
 *   aead: the same with payload_encryption=aes-gcm (the sealed datagram
 *     is larger than the packet);
 *   local_mtu_key: local_mtu=4096 gives mtu's packets back; a local_mtu
 *     below mtu counts as mtu;
 *   bad_rkey: a WRITE naming a key the target does not hold fails with
 *     -EACCES and leaves the target region as it was;
 *   peer_destroyed: the target QP destroyed under a stream of 8 MiB
 *     WRITEs: the sender's work fails with -ECONNRESET (the QP is gone),
 *     the rest flushed with -ECANCELED, and the daemon keeps serving.
 * The pattern is seeded (printed; MRC_SEED to repeat). */
#include <errno.h>
#include <pthread.h>
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

#include "common/prng.h"
#include "mrc/mrc.h"
#include "tests/support/get1.h"
#include "tests/support/mrcd_one.h"
#include "tests/support/qp_pair.h"
#include "tests/support/skip.h"

static uint64_t seed;

/* One WRITE of len from src to dst on qp, checked byte for byte; the
 * fresh data packets it took. */
static uint64_t write_checked(struct mrc_qp *qp, struct mrc_mr *src, struct mrc_mr *dst,
			      uint64_t len)
{
	qp_pair_fill(mrc_mr_addr(src), len, seed);
	memset(mrc_mr_addr(dst), 0, len);
	struct mrc_qp_stats s0, s1;
	assert_int_equal(mrc_qp_stats(qp, &s0), 0);
	assert_int_equal(mrc_post_write(qp, 1, mrc_mr_key(src), 0, len, mrc_mr_key(dst), 0), 0);
	struct mrc_completion c = mrcd_get1(qp);
	assert_int_equal(c.status, 0);
	assert_int_equal(c.wr_id, 1);
	if (memcmp(mrc_mr_addr(src), mrc_mr_addr(dst), len)) {
		print_error("seed %llu: the target differs\n", (unsigned long long)seed);
		fail();
	}
	assert_int_equal(mrc_qp_stats(qp, &s1), 0);
	return (s1.tx_pkts - s1.retx) - (s0.tx_pkts - s0.retx);
}

static int start(struct mrcd_proc *d, const char *a1, const char *a2)
{
	const char *argv[] = { a1, a2, NULL };
	return one_start(d, argv);
}

static void test_stream_64m(void **state)
{
	(void)state;
	static struct mrcd_proc d;   /* outlives a failed test: teardown */
	ONE_NEED(start(&d, NULL, NULL));
	const uint64_t len = 64ull << 20;
	struct qp_pair p;
	qp_pair_open(&d, &p, len);
	assert_int_equal(write_checked(p.a, p.src, p.dst, len), len / 8192);
	mrc_close(p.ctx);
	one_stop(&d);
}

static void test_aead(void **state)
{
	(void)state;
	static struct mrcd_proc d;   /* outlives a failed test: teardown */
	ONE_NEED(start(&d, "--payload_encryption=aes-gcm", NULL));
	const uint64_t len = 16u << 20;
	struct qp_pair p;
	qp_pair_open(&d, &p, len);
	assert_int_equal(write_checked(p.a, p.src, p.dst, len), len / 8192);
	mrc_close(p.ctx);
	one_stop(&d);
}

static void test_cm_connect(void **state)
{
	(void)state;
	static struct mrcd_proc d;   /* outlives a failed test: teardown */
	ONE_NEED(start(&d, NULL, NULL));
	const uint64_t len = 4u << 20;
	struct cm_pair p;
	cm_pair_open(&d, &p, 4545, len);
	assert_int_equal(write_checked(p.qp, p.src, p.dst, len), len / 8192);
	cm_pair_close(&p);
	one_stop(&d);
}

static void test_local_mtu_key(void **state)
{
	(void)state;
	const uint64_t len = 4u << 20;
	static struct mrcd_proc d;   /* outlives a failed test: teardown */
	struct qp_pair p;
	ONE_NEED(start(&d, "--local_mtu=4096", NULL));
	qp_pair_open(&d, &p, len);
	assert_int_equal(write_checked(p.a, p.src, p.dst, len), len / 4096);
	mrc_close(p.ctx);
	one_stop(&d);
	/* below mtu: mtu */
	ONE_NEED(start(&d, "--mtu=2048", "--local_mtu=1024"));
	qp_pair_open(&d, &p, len);
	assert_int_equal(write_checked(p.a, p.src, p.dst, len), len / 2048);
	mrc_close(p.ctx);
	one_stop(&d);
}

static void test_bad_rkey(void **state)
{
	(void)state;
	static struct mrcd_proc d;   /* outlives a failed test: teardown */
	ONE_NEED(start(&d, NULL, NULL));
	const uint64_t len = 1u << 20;
	struct qp_pair p;
	qp_pair_open(&d, &p, len);
	qp_pair_fill(mrc_mr_addr(p.src), len, seed);
	memset(mrc_mr_addr(p.dst), 0x5c, len);
	assert_int_equal(mrc_post_write(p.a, 1, mrc_mr_key(p.src), 0, len,
					mrc_mr_key(p.dst) ^ 0x5a5a, 0), 0);
	struct mrc_completion c = mrcd_get1(p.a);
	assert_int_equal(c.wr_id, 1);
	assert_int_equal(c.status, -EACCES);
	const uint8_t *t = mrc_mr_addr(p.dst);
	for (uint64_t i = 0; i < len; i++)
		if (t[i] != 0x5c)
			fail_msg("target byte %llu written through a bad key", (unsigned long long)i);
	mrc_close(p.ctx);
	one_stop(&d);
}

static void test_peer_destroyed(void **state)
{
	(void)state;
	static struct mrcd_proc d;   /* outlives a failed test: teardown */
	ONE_NEED(start(&d, NULL, NULL));
	const uint64_t len = 8u << 20;
	struct qp_pair p;
	qp_pair_open(&d, &p, len);
	const int n = 64;
	int posted = 0;
	for (; posted < n; posted++)
		if (mrc_post_write(p.a, (uint64_t)posted, mrc_mr_key(p.src), 0, len,
				   mrc_mr_key(p.dst), 0))
			break;
	assert_true(posted >= 2);
	/* The first completes, so the stream is under way when its target
	 * goes. */
	struct mrc_completion c = mrcd_get1(p.a);
	assert_int_equal(c.status, 0);
	assert_int_equal(mrc_destroy_qp(p.b), 0);
	int ok = 1, reset = 0, cancelled = 0;
	for (int i = 1; i < posted; i++) {
		c = mrcd_get1(p.a);
		assert_int_equal(c.wr_id, (uint64_t)i);
		if (c.status == 0) {
			assert_int_equal(reset + cancelled, 0);   /* none after a failure */
			ok++;
		} else if (c.status == -ECONNRESET) {
			assert_int_equal(reset + cancelled, 0);
			reset++;
		} else {
			assert_int_equal(c.status, -ECANCELED);
			assert_int_equal(reset, 1);
			cancelled++;
		}
	}
	print_message("seed %llu: %d posted, %d done, then -ECONNRESET, %d cancelled\n",
		      (unsigned long long)seed, posted, ok, cancelled);
	/* Had every WRITE finished before the QP went, nothing was tested. */
	assert_int_equal(reset, 1);
	mrc_close(p.ctx);
	/* still serving */
	qp_pair_open(&d, &p, 65536);
	assert_int_equal(write_checked(p.a, p.src, p.dst, 65536), 65536 / 8192);
	mrc_close(p.ctx);
	one_stop(&d);
}

int main(void)
{
	seed = getenv("MRC_SEED") ? strtoull(getenv("MRC_SEED"), NULL, 0) : (uint64_t)time(NULL);
	printf("test_local_mtu: seed %llu (MRC_SEED to repeat)\n", (unsigned long long)seed);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_stream_64m, one_teardown),
		cmocka_unit_test_teardown(test_cm_connect, one_teardown),
		cmocka_unit_test_teardown(test_aead, one_teardown),
		cmocka_unit_test_teardown(test_local_mtu_key, one_teardown),
		cmocka_unit_test_teardown(test_bad_rkey, one_teardown),
		cmocka_unit_test_teardown(test_peer_destroyed, one_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
