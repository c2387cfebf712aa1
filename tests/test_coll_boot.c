/* libmrc-coll's bootstrap against a real mrcd on the loopback fabric (no
 * root): interleavings that load makes rare, forced.
 *
 * "go" is the bootstrap's last message, rank 0 to every rank.  A rank
 * that has it destroys its bootstrap QP at once; when its ACK is lost or
 * late, rank 0's retransmission meets no QP and its SEND ends with
 * -ECONNRESET, which failed rank 0's mrc_coll_init ("Connection reset by
 * peer", tests/root/coll.sh under make check's load).  Here rank 1 posts
 * no receive for "go" and leaves once its "connected" is delivered, so
 * rank 0's "go" can only end on the gone QP: rank 0's init must succeed,
 * having seen that QP gone.  Skipped when build/bin/mrcd is not built. */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "tests/support/mrcd_spawn.h"
#include "tests/support/skip.h"

#include "coll/coll_int.h"

struct boot_rank {
	pthread_t th;
	struct mrc_coll_cfg cfg;
	struct mrc_coll *c;
	int rc;
};

static void *boot_main(void *p)
{
	struct boot_rank *r = p;
	r->rc = mrc_coll_init(&r->cfg, &r->c);
	return NULL;
}

static void test_go_to_gone_rank(void **state)
{
	(void)state;
	MRCD_GROUP_NEED();
	struct boot_rank R[2];
	mrc__coll_test_leave_before_go = 1;
	for (uint32_t i = 0; i < 2; i++) {
		R[i] = (struct boot_rank){ .cfg = { .sock = mrcd_group.d.sock, .nranks = 2, .rank = i,
						    .sid = 7390, .window = 2, .timeout_ms = 20000 } };
		assert_int_equal(pthread_create(&R[i].th, NULL, boot_main, &R[i]), 0);
	}
	/* Rank 1 leaves before "go"; only then can rank 0's SEND end. */
	pthread_join(R[1].th, NULL);
	assert_int_equal(R[1].rc, 0);
	mrc_coll_destroy(R[1].c);
	pthread_join(R[0].th, NULL);
	mrc__coll_test_leave_before_go = UINT32_MAX;
	if (R[0].rc)
		fail_msg("rank 0: mrc_coll_init: %s", strerror(-R[0].rc));
	/* The fault happened: rank 0's "go" met the gone QP. */
	assert_int_equal(R[0].c->boot_gone, 1);
	mrc_coll_destroy(R[0].c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_go_to_gone_rank),
	};
	/* No shared-memory rings: a rank that leaves before "go" would map
	 * rank 0's ring before rank 0 is sure to have made it (-ENOENT, seen
	 * once in make check-fresh); "go" is what orders the two, and the
	 * subject here is the bootstrap QP. */
	setenv("MRC_COLL_SHM", "0", 1);
	return cmocka_run_group_tests(tests, mrcd_group_setup, mrcd_group_teardown);
}
