/* libmrc-coll against a real mrcd on the loopback fabric (no root): ranks
 * as threads of this process, each with its own context
 * (tests/support/coll_ranks.h).  Every collective x type x op at sizes 0,
 * 1, not a multiple of the ranks and many chunks, in and out of place,
 * checked element by element; the bootstrap from the environment; an
 * abort on one rank reaching every other within the bound; a rank that
 * leaves mid-collective.  The MoE layer: tests/test_coll_moe.c.  Skipped
 * when build/bin/mrcd has not been built. */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "tests/support/mrcd_spawn.h"
#include "tests/support/coll_matrix.h"
#include "tests/support/coll_ranks.h"
#include "tests/support/skip.h"

#include "coll/coll_int.h"
#include "common/prng.h"

/* The no-progress bound of the failure tests; the others use a generous
 * one, so that a loaded machine (sanitizers, other tests) cannot fail a
 * correct run. */
#define TIMEOUT_MS 3000

#define NEED_DAEMON() MRCD_GROUP_NEED()

static void test_matrix_3(void **state)
{
	NEED_DAEMON();
	struct coll_rank R[3];
	coll_ranks_run(R, 3, coll_body_matrix, 4096, NULL);
	coll_ranks_check_ok(R, 3);
}

static void test_matrix_4_and_1(void **state)
{
	NEED_DAEMON();
	struct coll_rank R[5];
	coll_ranks_run(R, 4, coll_body_matrix, 4096, NULL);
	coll_ranks_check_ok(R, 4);
	/* Every size by each all-reduce algorithm (auto picks by size). */
	coll_ranks_opts.algo = MRC_COLL_ALGO_TREE;
	coll_ranks_run(R, 5, coll_body_matrix, 4096, NULL);
	coll_ranks_check_ok(R, 5);
	coll_ranks_opts.algo = MRC_COLL_ALGO_RING;
	coll_ranks_run(R, 5, coll_body_matrix, 4096, NULL);
	coll_ranks_opts.algo = MRC_COLL_ALGO_AUTO;
	coll_ranks_check_ok(R, 5);
	/* The forest on 5 ranks, over QP sets pinned to 2 planes (loopback has
	 * one: the plane-1 QPs fall back to it, as when a plane is dead). */
	coll_ranks_opts.algo = MRC_COLL_ALGO_FOREST;
	coll_ranks_opts.planes = 2;
	coll_ranks_run(R, 5, coll_body_matrix, 4096, NULL);
	coll_ranks_opts.algo = MRC_COLL_ALGO_AUTO;
	coll_ranks_opts.planes = 0;
	coll_ranks_check_ok(R, 5);
	coll_ranks_run(R, 1, coll_body_matrix, 4096, NULL);
	coll_ranks_check_ok(R, 1);
}

/* Spread over 2 plane-pinned QP sets (loopback has one plane: the
 * plane-1 QPs fall back to it): three exchanges back to back (a rank that
 * finishes first sends the next one's chunks early, which must wait in
 * their slots), then every chunk must have gone on a pinned QP. */
static int body_alltoallv_spread(struct coll_rank *r)
{
	struct mrc_coll *c = r->c;
	for (int k = 0; k < 3; k++) {
		int rc = coll_body_alltoallv(r);
		if (rc || r->wrong)
			return rc ? rc : -EIO;
	}
	for (uint32_t j = 0; j < c->n; j++) {
		if (j == c->me)
			continue;
		uint64_t bytes = (c->me * 3 + j * 5) % 7 * 1000 * 8;   /* coll_body_alltoallv's sc[j] */
		uint64_t q = c->chunk / 4;   /* the spread chunk */
		uint64_t want = 3 * ((bytes + q - 1) / q);
		uint64_t pinned = c->p[j + c->n].sent + c->p[j + 2 * c->n].sent;
		if (c->p[j].any_tx != want || pinned != want || c->p[j].sent) {
			snprintf(r->why, sizeof(r->why), "to %u: %llu chunks spread, %llu on pinned QPs, %llu on set 0; want %llu",
				 j, (unsigned long long)c->p[j].any_tx, (unsigned long long)pinned,
				 (unsigned long long)c->p[j].sent, (unsigned long long)want);
			return -EIO;
		}
	}
	return 0;
}

static void test_alltoallv(void **state)
{
	NEED_DAEMON();
	struct coll_rank R[4];
	coll_ranks_run(R, 4, coll_body_alltoallv, 2048, NULL);
	coll_ranks_check_ok(R, 4);
	/* The same exchange in two levels: 2 nodes of 2 ranks. */
	uint32_t L = 2;
	coll_ranks_run(R, 4, coll_body_alltoallv, 2048, &L);
	coll_ranks_check_ok(R, 4);
	coll_ranks_opts.planes = 2;
	coll_ranks_run(R, 4, body_alltoallv_spread, 2048, NULL);
	coll_ranks_opts.planes = 0;
	coll_ranks_check_ok(R, 4);
}

/* Rank 1 aborts before the all-reduce; the others, already waiting in it
 * for rank 1's data, return -ECONNABORTED well within the timeout: the
 * abort message, not the timeout, ended their wait. */
static int body_abort(struct coll_rank *r)
{
	int32_t x[1024] = { 0 };
	/* A rank still finishing the barrier when rank 1 aborts fails there. */
	int rc = mrc_coll_barrier(r->c);
	if (rc)
		return rc;
	int64_t *t0 = r->arg;
	if (mrc_coll_rank(r->c) == 1) {
		*t0 = mrcd_spawn_now_ms();
		return mrc_coll_abort(r->c, -ECANCELED);
	}
	rc = mrc_coll_allreduce(r->c, x, x, 1024, MRC_COLL_INT32, MRC_COLL_SUM);
	/* Sticky: the next call fails at once. */
	if (rc && mrc_coll_barrier(r->c) != rc)
		return -EINVAL;
	return rc;
}

/* Runs a failure test's body on 4 ranks with the short bound; checks that
 * the victim returned want_victim and that every other rank failed, and
 * prints how long after *t0 each one returned. */
static void run_failure(struct coll_rank *R, int (*body)(struct coll_rank *), int64_t *t0, uint32_t victim,
			int want_victim)
{
	coll_ranks_opts.timeout_ms = TIMEOUT_MS;
	coll_ranks_run(R, 4, body, 0, t0);
	coll_ranks_opts.timeout_ms = 30000;
	assert_int_equal(R[victim].rc, want_victim);
	for (uint32_t i = 0; i < 4; i++) {
		if (i == victim)
			continue;
		print_message("rank %u: %s after %lld ms\n", i, strerror(-R[i].rc),
			      (long long)(R[i].t_end - *t0));
		if (R[i].rc == 0)
			fail_msg("rank %u completed without rank %u", i, victim);
	}
}

static void test_abort_reaches_all(void **state)
{
	NEED_DAEMON();
	struct coll_rank R[4];
	int64_t t0 = 0;
	run_failure(R, body_abort, &t0, 1, -ECANCELED);
	for (uint32_t i = 0; i < 4; i++) {
		if (i == 1)
			continue;
		assert_int_equal(R[i].rc, -ECONNABORTED);
		/* Well inside the no-progress timeout (3 s). */
		assert_true(R[i].t_end - t0 < TIMEOUT_MS / 2);
	}
}

/* Rank 2 leaves (destroys its communicator, its QPs go) while the others
 * wait in an all-reduce for it: every other rank returns an error within
 * the bound (timeout_ms plus one delivery), none hangs. */
static int body_leave(struct coll_rank *r)
{
	static int32_t x[4][65536];
	if (mrc_coll_barrier(r->c))
		return -EIO;
	int64_t *t0 = r->arg;
	if (mrc_coll_rank(r->c) == 2) {
		*t0 = mrcd_spawn_now_ms();
		return -EOWNERDEAD;   /* rank_main destroys it */
	}
	return mrc_coll_allreduce(r->c, x[mrc_coll_rank(r->c)], x[mrc_coll_rank(r->c)], 65536,
				  MRC_COLL_INT32, MRC_COLL_SUM);
}

static void test_rank_leaves(void **state)
{
	NEED_DAEMON();
	struct coll_rank R[4];
	int64_t t0 = 0;
	run_failure(R, body_leave, &t0, 2, -EOWNERDEAD);
	for (uint32_t i = 0; i < 4; i++) {
		if (i == 2)
			continue;
		assert_true(R[i].t_end - t0 <= TIMEOUT_MS + 1000);
	}
}

/* Rank 2 stays alive but never calls the all-reduce (a hung process):
 * the others give up after timeout_ms without progress and every one
 * returns within the bound; the first to time out tells the rest. */
static int n_returned;

static int others_done(void *arg)
{
	return __atomic_load_n(&n_returned, __ATOMIC_ACQUIRE) == 3;
}

static int body_hang(struct coll_rank *r)
{
	static int32_t x[4][4096];
	int rc = mrc_coll_barrier(r->c);
	if (rc)
		return rc;
	int64_t *t0 = r->arg;
	uint32_t me = mrc_coll_rank(r->c);
	if (me == 2) {
		*t0 = mrcd_spawn_now_ms();
		/* Not a synchronisation sleep: the hung rank waits (bounded)
		 * for the others to give up, so its QPs outlive their wait. */
		mrcd_spawn_wait_for(others_done, NULL, 3 * TIMEOUT_MS);
		return -EOWNERDEAD;
	}
	rc = mrc_coll_allreduce(r->c, x[me], x[me], 4096, MRC_COLL_INT32, MRC_COLL_SUM);
	r->t_end = mrcd_spawn_now_ms();
	__atomic_add_fetch(&n_returned, 1, __ATOMIC_RELEASE);
	return rc;
}

static void test_rank_hangs(void **state)
{
	NEED_DAEMON();
	struct coll_rank R[4];
	int64_t t0 = 0;
	n_returned = 0;
	run_failure(R, body_hang, &t0, 2, -EOWNERDEAD);
	int timed_out = 0;
	for (uint32_t i = 0; i < 4; i++) {
		if (i == 2)
			continue;
		assert_true(R[i].rc == -ETIMEDOUT || R[i].rc == -ECONNABORTED);
		timed_out += R[i].rc == -ETIMEDOUT;
		assert_true(R[i].t_end - t0 <= TIMEOUT_MS + 1000);
	}
	assert_true(timed_out >= 1);
}

/* The bootstrap from the environment as a launcher sets it. */
static void test_cfg_from_env(void **state)
{
	struct mrc_coll_cfg cfg;
	unsetenv("MRC_COLL_SIZE");
	unsetenv("MRC_COLL_RANK");
	unsetenv("PMI_SIZE");
	unsetenv("PMI_RANK");
	unsetenv("SLURM_NTASKS");
	unsetenv("SLURM_PROCID");
	setenv("OMPI_COMM_WORLD_SIZE", "8", 1);
	setenv("OMPI_COMM_WORLD_RANK", "5", 1);
	setenv("MRC_COLL_SID", "7777", 1);
	setenv("MRC_COLL_ROOT_HOST", "3", 1);
	assert_int_equal(mrc_coll_cfg_from_env(&cfg), 0);
	assert_int_equal(cfg.nranks, 8);
	assert_int_equal(cfg.rank, 5);
	assert_int_equal(cfg.sid, 7777);
	assert_int_equal(cfg.root_host, 3);
	assert_int_equal(cfg.algo, MRC_COLL_ALGO_AUTO);
	setenv("MRC_COLL_ALGO", "tree", 1);
	assert_int_equal(mrc_coll_cfg_from_env(&cfg), 0);
	assert_int_equal(cfg.algo, MRC_COLL_ALGO_TREE);
	setenv("MRC_COLL_ALGO", "forest", 1);
	setenv("MRC_COLL_PLANES", "2", 1);
	setenv("MRC_COLL_HOSTS_PER_LEAF", "4", 1);
	assert_int_equal(mrc_coll_cfg_from_env(&cfg), 0);
	assert_int_equal(cfg.algo, MRC_COLL_ALGO_FOREST);
	assert_int_equal(cfg.planes, 2);
	assert_int_equal(cfg.hosts_per_leaf, 4);
	unsetenv("MRC_COLL_PLANES");
	unsetenv("MRC_COLL_HOSTS_PER_LEAF");
	setenv("MRC_COLL_ALGO", "bogus", 1);
	assert_int_equal(mrc_coll_cfg_from_env(&cfg), -EINVAL);
	unsetenv("MRC_COLL_ALGO");
	setenv("OMPI_COMM_WORLD_RANK", "8", 1);
	assert_int_equal(mrc_coll_cfg_from_env(&cfg), -EINVAL);
	setenv("OMPI_COMM_WORLD_RANK", "x", 1);
	assert_int_equal(mrc_coll_cfg_from_env(&cfg), -EINVAL);
	unsetenv("OMPI_COMM_WORLD_SIZE");
	unsetenv("OMPI_COMM_WORLD_RANK");
	unsetenv("MRC_COLL_ROOT_HOST");
	unsetenv("MRC_COLL_SID");
	assert_int_equal(mrc_coll_cfg_from_env(&cfg), -ENOENT);
	setenv("MRC_COLL_SIZE", "2", 1);
	setenv("MRC_COLL_RANK", "1", 1);
	assert_int_equal(mrc_coll_cfg_from_env(&cfg), 0);
	assert_int_equal(cfg.root_host, MRC_COLL_HOST_ANY);
	unsetenv("MRC_COLL_SIZE");
	unsetenv("MRC_COLL_RANK");
}

/* Rank 0's host found by probing (MRC_COLL_HOST_ANY). */
static int body_barrier(struct coll_rank *r)
{
	return mrc_coll_barrier(r->c);
}

static void test_probe_root(void **state)
{
	NEED_DAEMON();
	struct coll_rank R[3];
	coll_ranks_opts.root_host = MRC_COLL_HOST_ANY;
	coll_ranks_run(R, 3, body_barrier, 0, NULL);
	coll_ranks_opts.root_host = 0;
	coll_ranks_check_ok(R, 3);
}

/* Bad arguments are refused before anything is sent. */
static void test_bad_args(void **state)
{
	struct mrc_coll *c = NULL;
	struct mrc_coll_cfg cfg = { .nranks = 2, .rank = 2 };
	assert_int_equal(mrc_coll_init(&cfg, &c), -EINVAL);
	cfg = (struct mrc_coll_cfg){ .nranks = 2, .rank = 0, .chunk_bytes = 100 };
	assert_int_equal(mrc_coll_init(&cfg, &c), -EINVAL);
	cfg = (struct mrc_coll_cfg){ .nranks = 2, .rank = 0, .window = 65 };
	assert_int_equal(mrc_coll_init(&cfg, &c), -EINVAL);
	cfg = (struct mrc_coll_cfg){ .nranks = 2, .rank = 0, .algo = MRC_COLL_ALGO_FOREST + 1 };
	assert_int_equal(mrc_coll_init(&cfg, &c), -EINVAL);
	cfg = (struct mrc_coll_cfg){ .nranks = 2, .rank = 0, .planes = MRC_QP_MAX_PLANES + 1 };
	assert_int_equal(mrc_coll_init(&cfg, &c), -EINVAL);
	assert_int_equal(mrc_coll_dtype_size(MRC_COLL_NTYPES), 0);
	assert_string_equal(mrc_coll_dtype_name(MRC_COLL_BFLOAT16), "bfloat16");
	assert_string_equal(mrc_coll_op_name(MRC_COLL_MAX), "max");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bad_args),
		cmocka_unit_test(test_cfg_from_env),
		cmocka_unit_test(test_probe_root),
		cmocka_unit_test(test_matrix_3),
		cmocka_unit_test(test_matrix_4_and_1),
		cmocka_unit_test(test_alltoallv),
		cmocka_unit_test(test_abort_reaches_all),
		cmocka_unit_test(test_rank_leaves),
		cmocka_unit_test(test_rank_hangs),
	};
	/* The QP path through mrcd: these ranks share a host, which would
	 * otherwise put every pair on shared memory (tests/test_coll_shm.c). */
	setenv("MRC_COLL_SHM", "0", 1);
	return cmocka_run_group_tests(tests, mrcd_group_setup, mrcd_group_teardown);
}
