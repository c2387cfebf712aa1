/* 10,000 idle QPs from one client against a real mrcd on the loopback
 * fabric (no root): client protocol 4 gives each client one doorbell, so
 *   - the fds of the client and of the daemon do not grow with the QPs
 *     (both run with RLIMIT_NOFILE 256, far below two per QP);
 *   - every QP still works: a descriptor posted on each of the 10,000
 *     armed QPs is picked up (its pending byte and the one bell) and
 *     completes;
 *   - wakeups are not lost: threads sleeping in mrc_wait on different
 *     QPs of one context, sharing its one CQ bell, each get every
 *     completion of their own QP.
 * The QPs are not connected: a WRITE on one completes with the engine's
 * refusal, which goes through the same pickup and completion path.
 * The busy QP's round trip with 0, 1,000 and 10,000 idle QPs is a
 * benchmark: bench/bench_qpmem.c.  Skipped when build/bin/mrcd has not
 * been built. */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>
#include <cmocka.h>

#include "tests/support/mrcd_spawn.h"
#include "tests/support/skip.h"

#include "mrc/mrc.h"

#define WAIT_MS MRCD_SPAWN_WAIT_MS
#define N_IDLE 10000
#define NOFILE 256             /* far below two fds per QP */
#define THREADS 4
#define ROUNDS 300

static struct mrcd_proc D;
static int have;

static long nfds(pid_t pid)
{
	char p[64];
	snprintf(p, sizeof(p), "/proc/%d/fd", (int)pid);
	DIR *d = opendir(p);
	if (!d)
		return -1;
	long n = 0;
	for (struct dirent *e; (e = readdir(d));)
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

/* The daemon closes a QP's rings memfd just after sending it: poll, with
 * a deadline, until its count is back (it must not stay above). */
static long dfd_want;
static int dfds_back(void *arg)
{
	(void)arg;
	return nfds(D.pid) <= dfd_want;
}

static int setup(void **state)
{
	(void)state;
	if (!mrcd_spawn_available())
		return 0;
	/* The daemon inherits the limit: neither side may need an fd per QP. */
	struct rlimit rl = { NOFILE, NOFILE };
	if (setrlimit(RLIMIT_NOFILE, &rl))
		return -1;
	static const char *const extra[] = { "--client_max_qps=10016", "--uid_max_qps=10016",
					     "--window=4", NULL };
	if (mrcd_spawn_start(&D, extra))
		return -1;
	have = 1;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	if (have)
		mrcd_spawn_stop(&D);
	return 0;
}

/* Posts one WRITE on q and waits (mrc_wait) for its completion. */
static int round_trip(struct mrc_qp *q, uint32_t lkey, uint64_t id)
{
	int r = mrc_post_write(q, id, lkey, 0, 64, 1, 0);
	if (r)
		return r;
	struct mrc_completion c;
	int64_t end = mrcd_spawn_now_ms() + WAIT_MS;
	while ((r = mrc_poll_cq(q, &c, 1)) == 0) {
		if (mrcd_spawn_now_ms() > end)
			return -ETIMEDOUT;
		r = mrc_wait(q, WAIT_MS);
		if (r)
			return r;
	}
	if (r < 0)
		return r;
	return c.wr_id == id ? 0 : -EPROTO;
}

struct waiter {
	struct mrc_qp *qp;
	uint32_t lkey;
	int err;
	unsigned done;
};

static void *waiter_main(void *arg)
{
	struct waiter *w = arg;
	for (unsigned i = 0; i < ROUNDS && !w->err; i++) {
		w->err = round_trip(w->qp, w->lkey, 1000 + i);
		w->done += !w->err;
	}
	return NULL;
}

static void test_ten_thousand_idle(void **state)
{
	(void)state;
	if (!have)
		MRC_SKIP("build/bin/mrcd not built");
	struct mrc_ctx *ctx;
	struct mrc_mr *mr;
	assert_int_equal(mrc_open(D.sock, &ctx), 0);
	assert_int_equal(mrc_alloc_mr(ctx, 4096, MRC_MR_LOCAL_READ, &mr), 0);
	uint32_t lkey = mrc_mr_key(mr);
	struct mrc_qp_cfg cfg = { .sq_entries = 8, .cq_entries = 8 };
	struct mrc_qp *first;
	assert_int_equal(mrc_create_qp(ctx, &cfg, &first), 0);
	long cfd0 = nfds(getpid()), dfd0 = nfds(D.pid);

	struct mrc_qp **qps = calloc(N_IDLE, sizeof(*qps));
	assert_non_null(qps);
	for (unsigned i = 0; i < N_IDLE; i++) {
		int r = mrc_create_qp(ctx, &cfg, &qps[i]);
		if (r)
			fail_msg("QP %u of %u: %s (%s)", i + 1, N_IDLE, mrc_strerror(r),
				 mrc_last_error(ctx));
	}
	/* fds constant in the QP count, both sides */
	dfd_want = dfd0;
	assert_true(nfds(getpid()) <= cfd0);
	assert_int_equal(mrcd_spawn_wait_for(dfds_back, NULL, WAIT_MS), 0);
	assert_int_equal(mrc_qp_fd(qps[0]), mrc_qp_fd(qps[N_IDLE - 1]));

	/* Every QP works, armed or not: one WRITE each, then every
	 * completion (the CQ holds 8: one outstanding per QP fits). */
	for (unsigned i = 0; i < N_IDLE; i++)
		assert_int_equal(mrc_post_write(qps[i], i, lkey, 0, 64, 1, 0), 0);
	for (unsigned i = 0; i < N_IDLE; i++) {
		struct mrc_completion c;
		int64_t end = mrcd_spawn_now_ms() + WAIT_MS;
		int r;
		while ((r = mrc_poll_cq(qps[i], &c, 1)) == 0 && mrcd_spawn_now_ms() < end)
			mrc_wait(qps[i], 100);
		if (r != 1)
			fail_msg("QP %u of %u: no completion (%d)", i + 1, N_IDLE, r);
		assert_int_equal(c.wr_id, i);
	}

	/* Threads sharing the context's one CQ bell, each on its own QP
	 * (spread over the 10,000), all of its completions. */
	struct waiter w[THREADS];
	pthread_t t[THREADS];
	for (unsigned k = 0; k < THREADS; k++) {
		w[k] = (struct waiter){ .qp = qps[k * (N_IDLE / THREADS)], .lkey = lkey };
		assert_int_equal(pthread_create(&t[k], NULL, waiter_main, &w[k]), 0);
	}
	for (unsigned k = 0; k < THREADS; k++) {
		pthread_join(t[k], NULL);
		if (w[k].err)
			fail_msg("thread %u: round %u: %s", k, w[k].done, mrc_strerror(w[k].err));
		assert_int_equal(w[k].done, ROUNDS);
	}
	assert_int_equal(mrcd_spawn_wait_for(dfds_back, NULL, WAIT_MS), 0);

	free(qps);
	mrc_close(ctx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ten_thousand_idle),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
