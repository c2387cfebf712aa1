/* mrcd's connection manager against a slow acceptor (issue 32): a
 * connection request nobody accepts while its requester waits is refused
 * at the requester, and is never accepted after the requester gave up.
 * Before the fix the acceptor kept such a request 10 s while the requester
 * gave up after 2 s: a later accept connected a QP to one nobody used,
 * whose every packet the requester's mrcd dropped, until the QP failed
 * "retries exhausted" on GOOD paths.  A real mrcd on the loopback fabric;
 * skipped when build/bin/mrcd has not been built. */
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>

#include "tests/support/mrcd_spawn.h"
#include "tests/support/skip.h"

#include "mrc/mrc.h"

#define SID 4545

struct acc {
	struct mrc_qp *qp;
	struct mrc_qp_addr remote;
	int rc;
};

static void *acceptor(void *arg)
{
	struct acc *a = arg;
	a->rc = mrc_accept(a->qp, SID, 1, MRCD_SPAWN_WAIT_MS, &a->remote);
	return NULL;
}

static void test_unaccepted_request(void **state)
{
	(void)state;
	MRCD_GROUP_NEED();
	struct mrcd_proc *d = &mrcd_group.d;
	struct mrc_ctx *lc, *cc;
	struct mrc_qp *lqp, *cqp;
	assert_int_equal(mrc_open(d->sock, &lc), 0);
	assert_int_equal(mrc_open(d->sock, &cc), 0);
	assert_int_equal(mrc_create_qp(lc, NULL, &lqp), 0);
	assert_int_equal(mrc_create_qp(cc, NULL, &cqp), 0);
	assert_int_equal(mrc_listen(lc, SID, 4), 0);

	/* Nobody accepts: the request sits in the listener's backlog until
	 * the connect returns (it blocks until answered or given up). */
	struct mrc_qp_addr remote;
	int r = mrc_connect(cqp, 0, SID, 2, &remote);
	print_message("connect with no accept: %d\n", r);
	/* refused by the acceptor's CM (or, on a daemon stalled past both
	 * deadlines, timed out at the requester): either way it failed */
	assert_true(r == -ECONNREFUSED || r == -ETIMEDOUT);

	/* The given-up request must not connect the acceptor's QP. */
	r = mrc_accept(lqp, SID, 1, 100, &remote);
	print_message("accept after the requester gave up: %d\n", r);
	assert_int_equal(r, -ETIMEDOUT);

	/* The listener still works: a connect with an accept waiting. */
	struct mrc_qp *cqp2;
	assert_int_equal(mrc_create_qp(cc, NULL, &cqp2), 0);
	struct acc a = { .qp = lqp };
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, acceptor, &a), 0);
	int cr;
	/* the accept may not be posted yet: refused then, so try again */
	for (int i = 0; i < 200; i++) {
		cr = mrc_connect(cqp2, 0, SID, 2, &remote);
		if (cr != -ECONNREFUSED)
			break;
	}
	pthread_join(th, NULL);
	assert_int_equal(cr, 0);
	assert_int_equal(a.rc, 0);
	assert_int_equal(remote.qpn, mrc_qp_num(lqp));
	assert_int_equal(a.remote.qpn, mrc_qp_num(cqp2));
	mrc_close(cc);
	mrc_close(lc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_unaccepted_request),
	};
	return cmocka_run_group_tests(tests, mrcd_group_setup, mrcd_group_teardown);
}
