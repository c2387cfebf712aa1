/* libmrc-coll on device buffers without a GPU: the executor driven through
 * the device memory operations table (coll/memops_dev.c) with a fake
 * backend in place of CUDA's, against a real mrcd on loopback, ranks as
 * threads.  The fake's "device" memory is host memory mapped PROT_NONE:
 * only the fake's own copy and reduce open it, for the duration of the
 * operation, so any direct touch by the executor faults (a SIGSEGV
 * handler names the address and fails the run); every access is
 * counted.  Checks: every collective x type x op (reductions) at sizes 0,
 * 1, not a multiple of the ranks and several chunks, in and out of place,
 * element by element; the per-call selection (AUTO: host buffers stay on
 * the host table, device buffers go to the device table, a mixed call is
 * -EINVAL; DEVICE: no pointer queries); the staging regions pinned and
 * released; a failing device operation on one rank makes every rank
 * return an error within the bound; mrc_coll_set_memory without a CUDA
 * backend.  Skipped when build/bin/mrcd has not been built. */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <cmocka.h>

#include "tests/support/mrcd_spawn.h"
#include "tests/support/coll_matrix.h"
#include "tests/support/skip.h"

#include "coll/coll_int.h"
#include "coll/devmem.h"

#define TIMEOUT_MS 3000

/* ---- the fake device --------------------------------------------------- */
#define MAXR 256
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct { uint8_t *p; size_t len; } reg[MAXR];
static struct {
	uint64_t opens, closes, wheres, copies, copy_bytes, reduces, allocs, frees, pins, unpins,
		failed;
} cnt;

struct fbe {
	uint64_t ops;              /* copies + reduces of this communicator */
	uint64_t fail_at;          /* the n-th operation fails (-EIO); 0: none */
};

static size_t pages(size_t n)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	return (n + pg - 1) / pg * pg;
}

static void *dev_alloc(size_t n)
{
	size_t len = pages(n ? n : 1);
	uint8_t *p = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	pthread_mutex_lock(&mu);
	for (int i = 0; i < MAXR; i++)
		if (!reg[i].p) {
			reg[i].p = p;
			reg[i].len = len;
			pthread_mutex_unlock(&mu);
			return p;
		}
	pthread_mutex_unlock(&mu);
	munmap(p, len);
	return NULL;
}

static void dev_free(void *p)
{
	pthread_mutex_lock(&mu);
	for (int i = 0; i < MAXR; i++)
		if (reg[i].p == p) {
			munmap(p, reg[i].len);
			reg[i].p = NULL;
		}
	pthread_mutex_unlock(&mu);
}

/* The fake device range holding p (NULL: host memory). */
static int find(const void *p, uint8_t **base, size_t *len)
{
	pthread_mutex_lock(&mu);
	for (int i = 0; i < MAXR; i++)
		if (reg[i].p && (const uint8_t *)p >= reg[i].p &&
		    (const uint8_t *)p < reg[i].p + reg[i].len) {
			*base = reg[i].p;
			*len = reg[i].len;
			pthread_mutex_unlock(&mu);
			return 1;
		}
	pthread_mutex_unlock(&mu);
	return 0;
}

/* Opens (or closes again) the device ranges an operation touches. */
static void open_dev(const void *const *ps, int n, int prot)
{
	for (int i = 0; i < n; i++) {
		uint8_t *b;
		size_t l;
		if (ps[i] && find(ps[i], &b, &l))
			assert_int_equal(mprotect(b, l, prot), 0);
	}
}

/* The test's own reads and writes of device memory (cudaMemcpy's part). */
static void dev_put(void *dst, const void *src, size_t n)
{
	const void *p[1] = { dst };
	open_dev(p, 1, PROT_READ | PROT_WRITE);
	memcpy(dst, src, n);
	open_dev(p, 1, PROT_NONE);
}

static void dev_get(void *dst, const void *src, size_t n)
{
	const void *p[1] = { src };
	open_dev(p, 1, PROT_READ | PROT_WRITE);
	memcpy(dst, src, n);
	open_dev(p, 1, PROT_NONE);
}

static void bump(uint64_t *c, uint64_t by)
{
	pthread_mutex_lock(&mu);
	*c += by;
	pthread_mutex_unlock(&mu);
}

static int f_open(void **be)
{
	bump(&cnt.opens, 1);
	*be = calloc(1, sizeof(struct fbe));
	return *be ? 0 : -ENOMEM;
}

static void f_close(void *be)
{
	bump(&cnt.closes, 1);
	free(be);
}

static int f_where(void *be, const void *p)
{
	uint8_t *b;
	size_t l;
	bump(&cnt.wheres, 1);
	return find(p, &b, &l);
}

static int injected(struct fbe *f)
{
	if (f->fail_at && ++f->ops == f->fail_at) {
		bump(&cnt.failed, 1);
		return 1;
	}
	return 0;
}

static int f_copy(void *be, void *dst, const void *src, size_t n)
{
	if (injected(be))
		return -EIO;
	const void *p[2] = { dst, src };
	open_dev(p, 2, PROT_READ | PROT_WRITE);
	memmove(dst, src, n);
	open_dev(p, 2, PROT_NONE);
	bump(&cnt.copies, 1);
	bump(&cnt.copy_bytes, n);
	return 0;
}

static int f_reduce(void *be, void *dst, const void *a, const void *b, size_t count, int dtype,
		    int op)
{
	if (injected(be))
		return -EIO;
	uint8_t *base;
	size_t len;
	/* the contract: dst and a are device memory */
	assert_true(find(dst, &base, &len) && find(a, &base, &len));
	const void *p[3] = { dst, a, b };
	open_dev(p, 3, PROT_READ | PROT_WRITE);
	mrc__coll_reduce(dst, a, b, count, dtype, op);
	open_dev(p, 3, PROT_NONE);
	bump(&cnt.reduces, 1);
	return 0;
}

static int f_alloc(void *be, void **p, size_t n)
{
	bump(&cnt.allocs, 1);
	*p = dev_alloc(n);
	return *p ? 0 : -ENOMEM;
}

static void f_free(void *be, void *p)
{
	bump(&cnt.frees, 1);
	dev_free(p);
}

static int f_pin(void *be, void *p, size_t n)
{
	bump(&cnt.pins, 1);
	return 0;
}

static void f_unpin(void *be, void *p)
{
	bump(&cnt.unpins, 1);
}

static const struct mrc__coll_devops fake = {
	.open = f_open, .close = f_close, .where = f_where, .copy = f_copy, .reduce = f_reduce,
	.alloc = f_alloc, .free = f_free, .pin = f_pin, .unpin = f_unpin,
};


/* A direct touch of fake device memory by anything but the fake: names
 * it, stops the daemon (no teardown runs after this) and fails the run. */
static void on_segv(int sig, siginfo_t *si, void *uc)
{
	char msg[160];
	/* (no lock here: a plain scan of the table) */
	int dev = 0;
	for (int i = 0; i < MAXR; i++)
		dev |= reg[i].p && (uint8_t *)si->si_addr >= reg[i].p &&
		       (uint8_t *)si->si_addr < reg[i].p + reg[i].len;
	int n = snprintf(msg, sizeof(msg), "test_coll_dev: fault at %p: %s\n", si->si_addr,
			 dev ? "the executor touched device memory directly" : "not device memory");
	if (write(2, msg, (size_t)n) < 0)
		n = 0;
	if (mrcd_group.d.pid > 0)
		kill(mrcd_group.d.pid, SIGTERM);
	_exit(2);
}

/* ---- ranks -------------------------------------------------------------- */
static uint32_t next_sid = 7900;

struct rank {
	pthread_t th;
	struct mrc_coll_cfg cfg;
	int (*body)(struct rank *);
	struct mrc_coll *c;
	int mem;                   /* MRC_COLL_MEM_* for the fake */
	uint64_t fail_at;
	int rc;
	int64_t t_end;
	char why[200];
};

static void *rank_main(void *p)
{
	struct rank *r = p;
	r->rc = mrc_coll_init(&r->cfg, &r->c);
	if (!r->rc)
		r->rc = mrc__coll_dev_attach(r->c, &fake, r->mem);
	if (!r->rc) {
		((struct fbe *)r->c->dev_be)->fail_at = r->fail_at;
		r->rc = r->body(r);
	}
	r->t_end = mrcd_spawn_now_ms();
	mrc_coll_destroy(r->c);
	return NULL;
}

static void run_ranks(struct rank *R, uint32_t n, int (*body)(struct rank *), int mem,
		      int timeout)
{
	uint32_t sid = next_sid++;
	for (uint32_t i = 0; i < n; i++) {
		R[i] = (struct rank){ .cfg = { .sock = mrcd_group.d.sock, .nranks = n, .rank = i, .sid = sid,
			.chunk_bytes = 4096, .window = 2, .timeout_ms = timeout },
			.body = body, .mem = mem };
		assert_int_equal(pthread_create(&R[i].th, NULL, rank_main, &R[i]), 0);
	}
	for (uint32_t i = 0; i < n; i++)
		pthread_join(R[i].th, NULL);
}

static void check_all_ok(struct rank *R, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		if (R[i].rc)
			fail_msg("rank %u of %u: %s (%s)", i, n, strerror(-R[i].rc), R[i].why);
}

/* In each test's body: cmocka installs its own SIGSEGV handler around
 * every test function (and fixture), which cannot handle a fault on a
 * rank thread. */
static void arm(void)
{
	struct sigaction sa = { .sa_sigaction = on_segv, .sa_flags = SA_SIGINFO };
	sigaction(SIGSEGV, &sa, NULL);
}

#define NEED_DAEMON() MRCD_GROUP_NEED()

/* One collective on fake device buffers, checked element by element. */
static int one(struct rank *r, int kind, size_t count, int dt, int op, int inplace)
{
	struct mrc_coll *c = r->c;
	uint32_t n = mrc_coll_size(c), me = mrc_coll_rank(c), root = (uint32_t)(count % n);
	size_t esz = mrc_coll_dtype_size(dt);
	size_t inb = mrc__coll_in_count(kind, n, count) * esz;
	size_t outb = mrc__coll_out_count(kind, n, count) * esz;
	uint8_t *in = dev_alloc(inb), *out = dev_alloc(outb), *src, *dst;
	uint8_t *h = malloc(inb + outb + 1);
	if (!in || !out || !h)
		return -ENOMEM;
	memset(h, 0xa5, outb);
	dev_put(out, h, outb);     /* nothing left over from before */
	mrc__coll_place(kind, inplace, me, count, esz, in, out, &src, &dst);
	size_t srcb = inplace && kind == MRC__C_ALLGATHER ? count * esz : inb;
	mrc__coll_fill(kind, h, n, me, count, dt, op, root);
	dev_put(src, h, srcb);
	int rc = mrc__coll_call(c, kind, src, dst, count, dt, op, root);
	size_t dstb = mrc__coll_out_count(kind, n, count) * esz;
	size_t bad = 0;
	if (!rc) {
		dev_get(h, dst, dstb);
		bad = mrc__coll_wrong(kind, h, n, me, count, dt, op, root);
	}
	dev_free(in);
	dev_free(out);
	free(h);
	if (rc || bad)
		snprintf(r->why, sizeof(r->why), "%s %s %s count %zu %s: %s, %zu wrong",
			 mrc__coll_name[kind], mrc_coll_dtype_name(dt), mrc_coll_op_name(op), count,
			 inplace ? "in place" : "out of place", rc ? strerror(-rc) : "ok", bad);
	return rc ? rc : bad ? -EIO : 0;
}

static int matrix_case(void *arg, const struct coll_case *k)
{
	return one(arg, k->kind, k->count, k->dt, k->op, k->inplace);
}

static int body_matrix(struct rank *r)
{
	return coll_matrix(mrc_coll_size(r->c), matrix_case, r);
}

static void test_dev_matrix(void **state)
{
	NEED_DAEMON();
	arm();
	memset(&cnt, 0, sizeof(cnt));
	struct rank R[3];
	run_ranks(R, 3, body_matrix, MRC_COLL_MEM_AUTO, 30000);
	check_all_ok(R, 3);
	print_message("device table: %llu copies (%llu bytes), %llu reductions, %llu tmp, "
		      "%llu pointer queries\n", (unsigned long long)cnt.copies,
		      (unsigned long long)cnt.copy_bytes, (unsigned long long)cnt.reduces,
		      (unsigned long long)cnt.allocs, (unsigned long long)cnt.wheres);
	/* every byte went through the fake: copies and kernels, device tmp */
	assert_true(cnt.copies > 1000 && cnt.reduces > 100 && cnt.allocs > 0);
	assert_int_equal(cnt.allocs, cnt.frees);
	assert_true(cnt.wheres > 0);
	/* staging regions pinned at attach, released at destroy */
	assert_int_equal(cnt.opens, 3);
	assert_int_equal(cnt.closes, 3);
	assert_int_equal(cnt.pins, 6);
	assert_int_equal(cnt.unpins, 6);
}

/* AUTO with host buffers: the host table; a mixed call: -EINVAL on that
 * rank before anything moves (every rank makes the same call). */
static int body_select(struct rank *r)
{
	struct mrc_coll *c = r->c;
	int32_t x[100];
	for (int i = 0; i < 100; i++)
		x[i] = (int32_t)mrc_coll_rank(c) + i;
	uint64_t before = cnt.copies + cnt.reduces;
	int rc = mrc_coll_allreduce(c, x, x, 100, MRC_COLL_INT32, MRC_COLL_SUM);
	if (rc)
		return rc;
	for (int i = 0; i < 100; i++)
		if (x[i] != 3 * i + 3) {
			snprintf(r->why, sizeof(r->why), "host all-reduce wrong at %d", i);
			return -EIO;
		}
	if (cnt.copies + cnt.reduces != before) {
		snprintf(r->why, sizeof(r->why), "host buffers went through the device table");
		return -EIO;
	}
	void *d = dev_alloc(400);
	rc = mrc_coll_allreduce(c, x, d, 100, MRC_COLL_INT32, MRC_COLL_SUM);
	dev_free(d);
	if (rc != -EINVAL) {
		snprintf(r->why, sizeof(r->why), "mixed host/device call: %d", rc);
		return -EIO;
	}
	return 0;
}

/* DEVICE: no pointer queries, results right. */
static int body_device(struct rank *r)
{
	return one(r, MRC__C_ALLREDUCE, 5000, MRC_COLL_FLOAT32, MRC_COLL_SUM, 0);
}

static void test_dev_selection(void **state)
{
	NEED_DAEMON();
	arm();
	memset(&cnt, 0, sizeof(cnt));
	struct rank R[3];
	run_ranks(R, 3, body_select, MRC_COLL_MEM_AUTO, 30000);
	check_all_ok(R, 3);
	assert_int_equal(cnt.copies + cnt.reduces, 0);
	memset(&cnt, 0, sizeof(cnt));
	run_ranks(R, 3, body_device, MRC_COLL_MEM_DEVICE, 30000);
	check_all_ok(R, 3);
	assert_int_equal(cnt.wheres, 0);
	assert_true(cnt.copies > 0 && cnt.reduces > 0);
}

static int body_fail(struct rank *r)
{
	return one(r, MRC__C_ALLREDUCE, 20000, MRC_COLL_INT32, MRC_COLL_SUM, 0);
}

/* A device operation failing on rank 1 (its 5th copy or reduction):
 * rank 1 returns -EIO, every other rank an error, all within the bound. */
static void test_dev_failure(void **state)
{
	NEED_DAEMON();
	arm();
	memset(&cnt, 0, sizeof(cnt));
	struct rank R[3];
	uint32_t sid = next_sid++;
	int64_t t0 = mrcd_spawn_now_ms();
	for (uint32_t i = 0; i < 3; i++) {
		R[i] = (struct rank){ .cfg = { .sock = mrcd_group.d.sock, .nranks = 3, .rank = i, .sid = sid,
			.chunk_bytes = 4096, .window = 2, .timeout_ms = TIMEOUT_MS },
			.body = body_fail, .mem = MRC_COLL_MEM_AUTO, .fail_at = i == 1 ? 5 : 0 };
		assert_int_equal(pthread_create(&R[i].th, NULL, rank_main, &R[i]), 0);
	}
	for (uint32_t i = 0; i < 3; i++)
		pthread_join(R[i].th, NULL);
	assert_int_equal(cnt.failed, 1);          /* the fault happened */
	assert_int_equal(R[1].rc, -EIO);
	for (uint32_t i = 0; i < 3; i++) {
		print_message("rank %u: %s after %lld ms\n", i, strerror(-R[i].rc),
			      (long long)(R[i].t_end - t0));
		assert_int_not_equal(R[i].rc, 0);
		assert_true(R[i].t_end - t0 < 2 * TIMEOUT_MS + 2000);
	}
}

/* The public switch: the test support library has no CUDA backend. */
static int body_public(struct rank *r)
{
	/* with a backend attached (the fake): a change of mode only */
	int rc = mrc_coll_set_memory(r->c, MRC_COLL_MEM_DEVICE);
	if (rc || r->c->mem != MRC_COLL_MEM_DEVICE || r->c->dev != &fake)
		return -EIO;
	/* HOST releases the fake (its pins undone) */
	if ((rc = mrc_coll_set_memory(r->c, MRC_COLL_MEM_HOST)) || r->c->dev)
		return rc ? rc : -EIO;
	rc = mrc_coll_set_memory(r->c, MRC_COLL_MEM_AUTO);
	if (rc != -ENOSYS) {
		snprintf(r->why, sizeof(r->why), "set_memory(AUTO) without CUDA: %d", rc);
		return -EIO;
	}
	if (mrc_coll_set_memory(r->c, 7) != -EINVAL || mrc_coll_set_memory(NULL, 0) != -EINVAL)
		return -EIO;
	return 0;
}

static void test_set_memory(void **state)
{
	NEED_DAEMON();
	arm();
	memset(&cnt, 0, sizeof(cnt));
	struct rank R[1];
	run_ranks(R, 1, body_public, MRC_COLL_MEM_AUTO, 30000);
	check_all_ok(R, 1);
	assert_int_equal(cnt.closes, 1);
	assert_int_equal(cnt.unpins, cnt.pins);
}

/* Non-blocking calls on device buffers (mrc/coll.h "Non-blocking
 * calls"), with a host-buffer call between them: all started, then
 * waited on; each runs through the table picked at its start, whatever
 * the later starts picked (the device ones through the fake, element by
 * element right; the host one through the host table); a mixed call is
 * refused at its start with nothing queued. */
static int body_nb(struct rank *r)
{
	struct mrc_coll *c = r->c;
	uint32_t n = mrc_coll_size(c), me = mrc_coll_rank(c);
	size_t N = 20000;
	uint8_t *d[2] = { dev_alloc(N * 4), dev_alloc(n * N * 4) }, *h = malloc(n * N * 4 + 1);
	int32_t x[100];
	for (int i = 0; i < 100; i++)
		x[i] = (int32_t)me + i;
	mrc__coll_fill(MRC__C_ALLREDUCE, h, n, me, N, MRC_COLL_FLOAT32, MRC_COLL_SUM, 0);
	dev_put(d[0], h, N * 4);
	mrc__coll_fill(MRC__C_ALLGATHER, h, n, me, N, MRC_COLL_FLOAT32, MRC_COLL_SUM, 0);
	dev_put(d[1] + me * N * 4, h, N * 4);
	uint64_t before = cnt.reduces;
	struct mrc_coll_req *q[3] = { 0 };
	int rc = mrc_coll_iallreduce(c, d[0], d[0], N, MRC_COLL_FLOAT32, MRC_COLL_SUM, &q[0]);
	if (!rc)
		rc = mrc_coll_iallreduce(c, x, x, 100, MRC_COLL_INT32, MRC_COLL_SUM, &q[1]);
	if (!rc)
		rc = mrc_coll_iallgather(c, d[1] + me * N * 4, d[1], N, MRC_COLL_FLOAT32, &q[2]);
	struct mrc_coll_req *z = NULL;
	if (!rc && (mrc_coll_iallreduce(c, x, d[0], 100, MRC_COLL_INT32, MRC_COLL_SUM, &z) != -EINVAL ||
		    z || mrc_coll_inflight(c) > 3)) {
		snprintf(r->why, sizeof(r->why), "a mixed call was not refused at its start");
		rc = -EPROTO;
	}
	int w = mrc_coll_waitall(q, 3);
	rc = rc ? rc : w;
	size_t bad = 0;
	if (!rc) {
		dev_get(h, d[0], N * 4);
		bad += mrc__coll_wrong(MRC__C_ALLREDUCE, h, n, me, N, MRC_COLL_FLOAT32, MRC_COLL_SUM, 0);
		dev_get(h, d[1], n * N * 4);
		bad += mrc__coll_wrong(MRC__C_ALLGATHER, h, n, me, N, MRC_COLL_FLOAT32, MRC_COLL_SUM, 0);
		for (int i = 0; i < 100; i++)
			bad += x[i] != 3 * i + 3;
		/* the device all-reduce's reductions ran as the fake's kernels */
		if (__atomic_load_n(&cnt.reduces, __ATOMIC_RELAXED) == before)
			bad++;
	}
	dev_free(d[0]);
	dev_free(d[1]);
	free(h);
	if (!rc && bad)
		snprintf(r->why, sizeof(r->why), "%zu wrong after the non-blocking calls", bad);
	return rc ? rc : bad ? -EIO : 0;
}

static void test_dev_nb(void **state)
{
	NEED_DAEMON();
	arm();
	memset(&cnt, 0, sizeof(cnt));
	struct rank R[3];
	run_ranks(R, 3, body_nb, MRC_COLL_MEM_AUTO, 30000);
	check_all_ok(R, 3);
	assert_true(cnt.copies > 0 && cnt.reduces > 0);
	assert_int_equal(cnt.allocs, cnt.frees);
}

int main(void)
{
	const struct CMUnitTest t[] = {
		cmocka_unit_test(test_dev_matrix),
		cmocka_unit_test(test_dev_selection),
		cmocka_unit_test(test_dev_failure),
		cmocka_unit_test(test_set_memory),
		cmocka_unit_test(test_dev_nb),
	};
	return cmocka_run_group_tests_name("coll on device buffers (fake backend)", t, mrcd_group_setup,
					   mrcd_group_teardown);
}
