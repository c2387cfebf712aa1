/* The shared-memory rings between ranks of one host (coll/shm.c) and the
 * collectives over them.  Rings: order and content across many
 * wrap-arounds (producer and consumer threads), credit exhaustion, the
 * name's checks (O_EXCL, owner mode, size, unlinked once mapped), a
 * hostile peer (another process) writing bad indices and lengths
 * (-EPROTO, never a crash), the abort word seen by both sides.
 * Collectives: ranks as threads of this process on one mrcd share a
 * host, so every pair goes over shared memory (checked: no chunk on a
 * QP); the collective matrix, all-to-allv flat and 2-D, a corrupted ring
 * failing both ranks (-EPROTO, then the abort), an abort reaching the
 * other rank through the ring, and MRC_COLL_SHM=0 (QPs again). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "tests/support/mrcd_spawn.h"
#include "tests/support/coll_ranks.h"
#include "tests/support/skip.h"

#include "coll/coll_int.h"
#include "coll/shm.h"
#include "common/prng.h"

static uint64_t name_ctr;

/* A fresh ring name of this test process. */
static void fresh_name(char *buf, size_t n)
{
	mrc__coll_ring_name(buf, n, 9999, (uint64_t)getpid() << 20 | name_ctr++, 0, 1);
}

struct pair {
	struct mrc__coll_ring_ring tx, rx;
	char name[80];
};

static void pair_open(struct pair *p, uint32_t slots, uint32_t slot_bytes)
{
	fresh_name(p->name, sizeof(p->name));
	assert_int_equal(mrc__coll_ring_create(&p->tx, p->name, slots, slot_bytes), 0);
	assert_int_equal(mrc__coll_ring_open(&p->rx, p->name, slots, slot_bytes), 0);
}

static void pair_close(struct pair *p)
{
	mrc__coll_ring_close(&p->tx);
	mrc__coll_ring_close(&p->rx);
}

/* ---- order, wrap-around, credits ----------------------------------------- */

#define NCHUNK 20000
struct stream {
	struct pair p;
	uint64_t seed;
	int rc;
	uint64_t full;             /* times the producer found no free slot */
};

static uint32_t chunk_len(uint64_t seed, uint64_t k, uint32_t max)
{
	struct mrc_rng g;
	mrc_rng_seed(&g, seed ^ k * 0x9e3779b97f4a7c15ull);
	return (uint32_t)mrc_rng_below(&g, max + 1);   /* 0 .. max */
}

static void *producer(void *arg)
{
	struct stream *s = arg;
	for (uint64_t k = 0; k < NCHUNK;) {
		int r = mrc__coll_ring_room(&s->p.tx);
		if (r < 0) {
			s->rc = r;
			return NULL;
		}
		if (!r) {
			s->full++;
			sched_yield();
			continue;
		}
		uint32_t len = chunk_len(s->seed, k, s->p.tx.slot_bytes);
		uint8_t *d = mrc__coll_ring_slot(&s->p.tx);
		for (uint32_t i = 0; i < len; i++)
			d[i] = (uint8_t)(k * 131 + i);
		if ((s->rc = mrc__coll_ring_push(&s->p.tx, len)))
			return NULL;
		k++;
	}
	return NULL;
}

static void test_ring_order_wrap(void **state)
{
	struct stream s = { .seed = 0x5eed0001 };
	pair_open(&s.p, 4, 256);
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, producer, &s), 0);
	uint64_t k = 0, bad = 0;
	while (k < NCHUNK) {
		const uint8_t *d;
		uint32_t len;
		int r = mrc__coll_ring_peek(&s.p.rx, &d, &len);
		assert_true(r >= 0);
		if (!r) {
			sched_yield();
			continue;
		}
		if (len != chunk_len(s.seed, k, 256))
			bad++;
		for (uint32_t i = 0; i < len; i++)
			bad += d[i] != (uint8_t)(k * 131 + i);
		mrc__coll_ring_pop(&s.p.rx);
		k++;
	}
	pthread_join(th, NULL);
	if (bad || s.rc)
		fail_msg("%llu bytes wrong, producer %d (seed %#llx)", (unsigned long long)bad, s.rc,
			 (unsigned long long)s.seed);
	/* Every slot was reused thousands of times. */
	assert_int_equal(s.p.rx.pos, NCHUNK);
	pair_close(&s.p);
}

/* A window of chunks and no more until the consumer frees one. */
static void test_ring_credits(void **state)
{
	struct pair p;
	pair_open(&p, 3, 64);
	for (int k = 0; k < 3; k++) {
		assert_int_equal(mrc__coll_ring_room(&p.tx), 1);
		memset(mrc__coll_ring_slot(&p.tx), k, 64);
		assert_int_equal(mrc__coll_ring_push(&p.tx, 64), 0);
	}
	assert_int_equal(mrc__coll_ring_room(&p.tx), 0);         /* no credit left */
	assert_int_equal(mrc__coll_ring_push(&p.tx, 64), -EINVAL);   /* and push refuses */
	const uint8_t *d;
	uint32_t len;
	assert_int_equal(mrc__coll_ring_peek(&p.rx, &d, &len), 1);
	assert_int_equal(len, 64);
	assert_int_equal(d[0], 0);
	assert_int_equal(mrc__coll_ring_room(&p.tx), 0);         /* peeked, not freed */
	mrc__coll_ring_pop(&p.rx);
	assert_int_equal(mrc__coll_ring_room(&p.tx), 1);
	assert_int_equal(mrc__coll_ring_push(&p.tx, 65), -EINVAL);   /* longer than a slot */
	pair_close(&p);
}

/* ---- the name ------------------------------------------------------------- */

static void test_ring_name_checks(void **state)
{
	char name[80];
	fresh_name(name, sizeof(name));
	struct mrc__coll_ring_ring a, b;
	assert_int_equal(mrc__coll_ring_create(&a, name, 2, 128), 0);
	/* O_EXCL: a second creator (or a squatter's name) is refused. */
	assert_int_equal(mrc__coll_ring_create(&b, name, 2, 128), -EEXIST);
	int fd = shm_open(name, O_RDWR, 0);
	assert_true(fd >= 0);
	struct stat st;
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	/* Another geometry than agreed: refused. */
	assert_int_equal(mrc__coll_ring_open(&b, name, 4, 128), -EPROTO);
	/* A mode that lets others in: not our peer's ring. */
	assert_int_equal(fchmod(fd, 0644), 0);
	assert_int_equal(mrc__coll_ring_open(&b, name, 2, 128), -EPERM);
	assert_int_equal(fchmod(fd, 0600), 0);
	/* A bad magic (a file that is not a ring). */
	uint32_t *hdr = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	assert_true(hdr != MAP_FAILED);
	hdr[0] ^= 1;
	assert_int_equal(mrc__coll_ring_open(&b, name, 2, 128), -EPROTO);
	hdr[0] ^= 1;
	munmap(hdr, 4096);
	close(fd);
	assert_int_equal(mrc__coll_ring_open(&b, name, 2, 128), 0);
	/* Both sides mapped it: the name is gone. */
	assert_int_equal(shm_open(name, O_RDWR, 0), -1);
	assert_int_equal(errno, ENOENT);
	mrc__coll_ring_close(&a);
	mrc__coll_ring_close(&b);
	/* Created and never opened: close removes the name. */
	assert_int_equal(mrc__coll_ring_create(&a, name, 2, 128), 0);
	mrc__coll_ring_close(&a);
	assert_int_equal(shm_open(name, O_RDWR, 0), -1);
	assert_int_equal(errno, ENOENT);
}

/* ---- a hostile peer -------------------------------------------------------- */

/* Another process (fork: it shares the mapping) writes what a hostile
 * peer would into the header, then exits; we read after it is gone. */
enum { H_TAIL_FAR, H_TAIL_BACK, H_LEN_BIG, H_HEAD_AHEAD, H_HEAD_BACK, H_N };

static void hostile(struct mrc__coll_ring_hdr *h, int what)
{
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		switch (what) {
		case H_TAIL_FAR: atomic_store(&h->tail, atomic_load(&h->tail) + 1000); break;
		case H_TAIL_BACK: atomic_store(&h->tail, 0); break;
		case H_LEN_BIG: for (int i = 0; i < MRC__SHM_MAXSLOTS; i++) atomic_store(&h->len[i], 0xffffffffu); break;
		case H_HEAD_AHEAD: atomic_store(&h->head, 1u << 30); break;
		case H_HEAD_BACK: atomic_store(&h->head, 0); break;
		}
		_exit(0);
	}
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

static void test_ring_hostile_peer(void **state)
{
	for (int what = 0; what < H_N; what++) {
		struct pair p;
		pair_open(&p, 4, 64);
		const uint8_t *d;
		uint32_t len;
		/* Two chunks out, one taken: tail 2, head 1 (so "back" is a move). */
		for (int k = 0; k < 2; k++) {
			assert_int_equal(mrc__coll_ring_room(&p.tx), 1);
			assert_int_equal(mrc__coll_ring_push(&p.tx, 8), 0);
		}
		assert_int_equal(mrc__coll_ring_peek(&p.rx, &d, &len), 1);
		mrc__coll_ring_pop(&p.rx);
		assert_int_equal(mrc__coll_ring_room(&p.tx), 1);
		hostile(p.rx.h, what);
		if (what <= H_LEN_BIG) {   /* the producer misbehaved: the consumer sees it */
			assert_int_equal(mrc__coll_ring_peek(&p.rx, &d, &len), -EPROTO);
			assert_int_equal(mrc__coll_ring_peek(&p.rx, &d, &len), -EPROTO);   /* sticky */
		} else {                   /* the consumer misbehaved: the producer sees it */
			assert_int_equal(mrc__coll_ring_room(&p.tx), -EPROTO);
			assert_int_equal(mrc__coll_ring_push(&p.tx, 8), -EPROTO);
		}
		pair_close(&p);
	}
}

/* ---- abort ------------------------------------------------------------------ */

struct waiter {
	struct mrc__coll_ring_ring *r;
	int rc;
};

/* Waits (bounded) for a chunk that never comes. */
static void *wait_chunk(void *arg)
{
	struct waiter *w = arg;
	int64_t end = mrcd_spawn_now_ms() + 10000;
	const uint8_t *d;
	uint32_t len;
	while ((w->rc = mrc__coll_ring_peek(w->r, &d, &len)) == 0 && mrcd_spawn_now_ms() < end)
		sched_yield();
	return NULL;
}

static void test_ring_abort(void **state)
{
	struct pair p;
	pair_open(&p, 2, 64);
	struct waiter w = { .r = &p.rx };
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, wait_chunk, &w), 0);
	mrc__coll_ring_abort(&p.tx);       /* the producer gives up */
	pthread_join(th, NULL);
	assert_int_equal(w.rc, -ECONNABORTED);
	assert_int_equal(mrc__coll_ring_room(&p.tx), -ECONNABORTED);
	pair_close(&p);
	/* And the other way: the consumer's abort stops the producer. */
	pair_open(&p, 2, 64);
	mrc__coll_ring_abort(&p.rx);
	assert_int_equal(mrc__coll_ring_aborted(&p.tx), -ECONNABORTED);
	assert_int_equal(mrc__coll_ring_room(&p.tx), -ECONNABORTED);
	pair_close(&p);
}

/* ---- collectives over the rings ---------------------------------------------- */

/* all-to-allv flat, then 2-D (nodes of 2). */
static int body_alltoallv(struct coll_rank *r)
{
	static uint32_t two = 2;
	void *was = r->arg;
	int rc = coll_body_alltoallv(r);
	r->arg = &two;
	if (!rc)
		rc = coll_body_alltoallv(r);
	r->arg = was;
	return rc;
}

static int body_matrix(struct coll_rank *r)
{
	int rc = coll_body_matrix(r);
	return rc ? rc : body_alltoallv(r);
}

static void test_coll_over_shm(void **state)
{
	MRCD_GROUP_NEED();
	struct coll_rank R[4];
	unsetenv("MRC_COLL_SHM");
	coll_ranks_run(R, 4, body_matrix, 4096, NULL);
	coll_ranks_check_ok(R, 4);
	/* Every pair shares the host: all of it went through the rings. */
	for (uint32_t i = 0; i < 4; i++) {
		assert_int_equal(R[i].nshm, 3);
		assert_int_equal(R[i].qp_msgs, 0);
	}
	/* Off: the same over the QPs (through mrcd). */
	setenv("MRC_COLL_SHM", "0", 1);
	coll_ranks_run(R, 4, body_alltoallv, 4096, NULL);
	coll_ranks_check_ok(R, 4);
	for (uint32_t i = 0; i < 4; i++) {
		assert_int_equal(R[i].nshm, 0);
		assert_true(R[i].qp_msgs > 0);
	}
	/* A value that is neither: refused. */
	setenv("MRC_COLL_SHM", "yes", 1);
	struct mrc_coll *c = NULL;
	struct mrc_coll_cfg cfg = { .sock = mrcd_group.d.sock, .nranks = 1 };
	assert_int_equal(mrc_coll_init(&cfg, &c), -EINVAL);
	unsetenv("MRC_COLL_SHM");
}

/* Rank 1 corrupts the tail of its ring to rank 0 (a hostile or broken
 * peer) and stays out of the collective; rank 0 runs an all-to-all and
 * fails with -EPROTO (no crash), and its abort reaches rank 1. */
static int rank0_done;

static int is_rank0_done(void *arg)
{
	return __atomic_load_n(&rank0_done, __ATOMIC_ACQUIRE);
}

static int body_corrupt(struct coll_rank *r)
{
	static int32_t in[8192], out[8192];
	int rc = mrc_coll_barrier(r->c);
	if (rc)
		return rc;
	if (mrc_coll_rank(r->c) == 1) {
		atomic_store(&r->c->p[0].stx.h->tail, 1ull << 40);
		/* Bounded wait for rank 0 to give up, then our state. */
		mrcd_spawn_wait_for(is_rank0_done, NULL, 10000);
		r->t_end = mrcd_spawn_now_ms();
		return mrc_coll_error(r->c);
	}
	rc = mrc_coll_alltoall(r->c, in, out, 4096, MRC_COLL_INT32);
	__atomic_store_n(&rank0_done, 1, __ATOMIC_RELEASE);
	return rc;
}

static void test_coll_corrupt_ring(void **state)
{
	MRCD_GROUP_NEED();
	struct coll_rank R[2];
	rank0_done = 0;
	coll_ranks_opts.timeout_ms = 3000;
	coll_ranks_run(R, 2, body_corrupt, 4096, NULL);
	coll_ranks_opts.timeout_ms = 30000;
	assert_int_equal(R[0].nshm, 1);
	assert_int_equal(R[0].rc, -EPROTO);
	assert_int_equal(R[1].rc, -ECONNABORTED);
}

/* Rank 1 aborts while rank 0 waits for its data in an all-to-all: rank 0
 * returns -ECONNABORTED well inside the bound, told by the ring alone. */
static int body_abort(struct coll_rank *r)
{
	static int32_t in[2][65536], out[2][65536];
	uint32_t me = mrc_coll_rank(r->c);
	int rc = mrc_coll_barrier(r->c);
	if (rc)
		return rc;
	int64_t *t0 = r->arg;
	if (me == 1) {
		/* Our QP's abort message is dropped (a peer taken as gone), so
		 * only the ring's abort word can tell rank 0. */
		r->c->p[0].gone = 1;
		*t0 = mrcd_spawn_now_ms();
		return mrc_coll_abort(r->c, -ECANCELED);
	}
	return mrc_coll_alltoall(r->c, in[me], out[me], 32768, MRC_COLL_INT32);
}

static void test_coll_abort_over_shm(void **state)
{
	MRCD_GROUP_NEED();
	struct coll_rank R[2];
	int64_t t0 = 0;
	coll_ranks_opts.timeout_ms = 3000;
	coll_ranks_run(R, 2, body_abort, 4096, &t0);
	coll_ranks_opts.timeout_ms = 30000;
	assert_int_equal(R[1].rc, -ECANCELED);
	assert_int_equal(R[0].rc, -ECONNABORTED);
	assert_int_equal(R[0].nshm, 1);
	assert_true(R[0].t_end - t0 < 1500);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ring_order_wrap),
		cmocka_unit_test(test_ring_credits),
		cmocka_unit_test(test_ring_name_checks),
		cmocka_unit_test(test_ring_hostile_peer),
		cmocka_unit_test(test_ring_abort),
		cmocka_unit_test(test_coll_over_shm),
		cmocka_unit_test(test_coll_corrupt_ring),
		cmocka_unit_test(test_coll_abort_over_shm),
	};
	return cmocka_run_group_tests(tests, mrcd_group_setup, mrcd_group_teardown);
}
