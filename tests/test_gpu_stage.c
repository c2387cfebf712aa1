/* The staging pipeline of GPU memory (gpu/stage.c) without a GPU: a fake
 * copy engine (a thread running memcpy in enqueue order, marks as
 * generation counters) and a fake sink (posts copy the shadow's chunk to a
 * "remote" buffer, completions on request) assert chunking, ordering
 * (a chunk is posted only after its copy finished), pipelining (the copy
 * of chunk k+1 is in flight while chunk k is posted, and is not held up
 * by chunk k's completion), back-pressure and error handling; then
 * mrc_gpu_write and mrc_gpu_mr_to_device run end to end through a real
 * loopback mrcd with the fake engine in place of CUDA. */
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
#include <cmocka.h>

#include "mrc/gpu.h"
#include "mrc/mrc.h"
#include "common/prng.h"
#include "gpu/stage.h"
#include "tests/support/mrcd_spawn.h"
#include "tests/support/skip.h"

#define GATE_MS 5000           /* bound on every wait a gate makes */
#define MAXQ 4096

static uint64_t seed;

/* ---- fake copy engine ----------------------------------------------- */
struct fake {
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct fop { int mark; void *dst; const void *src; uint64_t n; unsigned slot; } q[MAXQ];
	unsigned qh, qt;           /* enqueue / execute positions */
	uint64_t mark_gen[MRC__GPU_STAGE_DEPTH], mark_done[MRC__GPU_STAGE_DEPTH];
	int mark_err[MRC__GPU_STAGE_DEPTH];
	uint64_t gen;
	unsigned copies_enq, copies_started, copies_done;
	int fail_copy_at;          /* this copy fails asynchronously (-EIO at its mark) */
	int fail_enqueue_at;       /* this enqueue fails synchronously */
	int async_err;             /* sticky, like a CUDA stream error */
	int gate_on_post;          /* copy k+1 finishes only after post k */
	unsigned *posts_seen;      /* the sink's post count (under mu) */
	int violations;
	char why[160];
	int stop, registered, destroyed;
};

static void violation(struct fake *f, const char *what, unsigned k)
{
	if (!f->violations++)
		snprintf(f->why, sizeof(f->why), "%s (chunk %u)", what, k);
}

/* Waits on f->cv with f->mu held until cond or GATE_MS: 0 on timeout. */
#define GATE_WAIT(f, cond) ({ \
	struct timespec _d; clock_gettime(CLOCK_REALTIME, &_d); \
	_d.tv_sec += GATE_MS / 1000; int _ok = 1; \
	while (!(cond)) \
		if (pthread_cond_timedwait(&(f)->cv, &(f)->mu, &_d)) { _ok = (cond); break; } \
	_ok; })

static void *fake_thread(void *arg)
{
	struct fake *f = arg;
	pthread_mutex_lock(&f->mu);
	for (;;) {
		while (!f->stop && f->qt == f->qh)
			pthread_cond_wait(&f->cv, &f->mu);
		if (f->qt == f->qh)
			break;
		struct fop op = f->q[f->qt % MAXQ];
		if (op.mark) {
			f->mark_done[op.slot] = f->mark_gen[op.slot];
			f->mark_err[op.slot] = f->async_err;
		} else {
			unsigned k = f->copies_started++;
			if (f->gate_on_post && k > 0 && f->posts_seen &&
			    !GATE_WAIT(f, *f->posts_seen >= k))
				violation(f, "copy k+1 had to finish before chunk k was posted", k);
			if ((int)k == f->fail_copy_at)
				f->async_err = -EIO;
			else if (!f->async_err)
				memcpy(op.dst, op.src, op.n);
			f->copies_done++;
		}
		f->qt++;
		pthread_cond_broadcast(&f->cv);
	}
	pthread_mutex_unlock(&f->mu);
	return NULL;
}

static int enq(struct fake *f, struct fop op)
{
	pthread_mutex_lock(&f->mu);
	if (!op.mark && (int)f->copies_enq == f->fail_enqueue_at) {
		pthread_mutex_unlock(&f->mu);
		return -EINVAL;
	}
	if (op.mark)
		f->mark_gen[op.slot] = ++f->gen;
	else
		f->copies_enq++;
	assert_true(f->qh - f->qt < MAXQ);
	f->q[f->qh++ % MAXQ] = op;
	pthread_cond_broadcast(&f->cv);
	pthread_mutex_unlock(&f->mu);
	return 0;
}

static int f_copy(void *be, void *dst, const void *src, uint64_t n)
{
	return enq(be, (struct fop){ .dst = dst, .src = src, .n = n });
}
static int f_mark(void *be, unsigned slot)
{
	assert_true(slot < MRC__GPU_STAGE_DEPTH);
	return enq(be, (struct fop){ .mark = 1, .slot = slot });
}
static int f_wait(void *be, unsigned slot)
{
	struct fake *f = be;
	pthread_mutex_lock(&f->mu);
	int ok = GATE_WAIT(f, f->mark_done[slot] == f->mark_gen[slot]);
	int r = ok ? f->mark_err[slot] : -ETIMEDOUT;
	pthread_mutex_unlock(&f->mu);
	return r;
}
static int f_reg(void *be, void *p, uint64_t n)
{
	((struct fake *)be)->registered++;
	return 0;
}
static void f_unreg(void *be, void *p)
{
	((struct fake *)be)->registered--;
}
static void f_destroy(void *be)
{
	((struct fake *)be)->destroyed++;
}
static const struct mrc__gpu_copy_ops fake_ops = {
	.d2h = f_copy, .h2d = f_copy, .mark = f_mark, .wait = f_wait,
	.host_register = f_reg, .host_unregister = f_unreg, .destroy = f_destroy,
};

static void fake_start(struct fake *f)
{
	memset(f, 0, sizeof(*f));
	pthread_mutex_init(&f->mu, NULL);
	pthread_cond_init(&f->cv, NULL);
	f->fail_copy_at = f->fail_enqueue_at = -1;
	assert_int_equal(pthread_create(&f->th, NULL, fake_thread, f), 0);
}

static void fake_stop(struct fake *f)
{
	pthread_mutex_lock(&f->mu);
	f->stop = 1;
	pthread_cond_broadcast(&f->cv);
	pthread_mutex_unlock(&f->mu);
	pthread_join(f->th, NULL);
	pthread_cond_destroy(&f->cv);
	pthread_mutex_destroy(&f->mu);
}

/* ---- fake sink ------------------------------------------------------ */
struct rec { uint64_t off, len, roff; };
struct sink {
	struct fake *f;
	const uint8_t *shadow;
	uint8_t *remote;
	unsigned cap;              /* outstanding posts before -ENOSPC */
	unsigned posts, reaped, max_out, enospc;
	int err_at;                /* this chunk completes with -EREMOTEIO */
	int gate_complete;         /* chunk k completes only once copy k+1 started */
	unsigned n_chunks;
	struct rec r[MAXQ];
};

static int s_post(void *p, uint64_t off, uint64_t len, uint64_t roff)
{
	struct sink *s = p;
	struct fake *f = s->f;
	pthread_mutex_lock(&f->mu);
	unsigned k = s->posts;
	int r = 0;
	if (s->posts - s->reaped >= s->cap) {
		s->enospc++;
		r = -ENOSPC;
	} else {
		if (f->copies_done <= k)
			violation(f, "chunk posted before its copy finished", k);
		if (s->gate_complete && k + 1 < s->n_chunks && f->copies_enq <= k + 1)
			violation(f, "copy k+1 not enqueued before chunk k was posted", k);
		assert_true(k < MAXQ);
		s->r[k] = (struct rec){ off, len, roff };
		memcpy(s->remote + roff, s->shadow + off, len);
		s->posts++;
		if (s->posts - s->reaped > s->max_out)
			s->max_out = s->posts - s->reaped;
		pthread_cond_broadcast(&f->cv);
	}
	pthread_mutex_unlock(&f->mu);
	return r;
}

static int s_reap(void *p, int *err)
{
	struct sink *s = p;
	struct fake *f = s->f;
	pthread_mutex_lock(&f->mu);
	unsigned k = s->reaped;
	if (k == s->posts) {
		pthread_mutex_unlock(&f->mu);
		fail_msg("reap with nothing outstanding");
	}
	if (s->gate_complete && k + 1 < s->n_chunks &&
	    !GATE_WAIT(f, f->copies_started > k + 1 || f->async_err))
		violation(f, "copy k+1 waited for chunk k's completion", k);
	if ((int)k == s->err_at)
		*err = -EREMOTEIO;
	s->reaped++;
	pthread_mutex_unlock(&f->mu);
	return 1;
}

static const struct mrc__gpu_sink fake_sink = { .post = s_post, .reap = s_reap };

/* One staged put of len bytes at off in chunks of chunk, checked. */
struct run {
	struct fake f;
	struct sink s;
	uint8_t *dev, *shadow, *remote;
	uint64_t size;
	int ret;
};

/* On the heap, and freed only by a passing test: a failed assertion
 * leaves the fake's thread running on it. */
static struct run *run_setup(uint64_t size, uint64_t s0)
{
	struct run *t = calloc(1, sizeof(*t));
	assert_non_null(t);
	fake_start(&t->f);
	t->size = size;
	t->dev = malloc(size);
	t->shadow = calloc(1, size);
	t->remote = calloc(1, size);
	assert_non_null(t->dev);
	struct mrc_rng g;
	mrc_rng_seed(&g, s0);
	for (uint64_t i = 0; i < size; i++)
		t->dev[i] = (uint8_t)mrc_rng_next(&g);
	t->s = (struct sink){ .f = &t->f, .shadow = t->shadow, .remote = t->remote,
			      .cap = 1u << 30, .err_at = -1 };
	t->f.posts_seen = &t->s.posts;
	return t;
}

static void run_put(struct run *t, uint64_t chunk, uint64_t off, uint64_t len, uint64_t roff)
{
	struct mrc__gpu_stage st = { .ops = &fake_ops, .be = &t->f, .shadow = t->shadow,
				     .dev = t->dev, .chunk = chunk };
	t->s.n_chunks = (unsigned)((len + chunk - 1) / chunk);
	t->ret = mrc__gpu_stage_put(&st, &fake_sink, &t->s, off, len, roff);
	/* Whatever happened: nothing of the put is left in flight. */
	pthread_mutex_lock(&t->f.mu);
	unsigned reaped = t->s.reaped, posts = t->s.posts;
	unsigned cdone = t->f.copies_done, cenq = t->f.copies_enq;
	pthread_mutex_unlock(&t->f.mu);
	assert_int_equal(reaped, posts);
	assert_int_equal(cdone, cenq);
}

static void run_free(struct run *t)
{
	fake_stop(&t->f);
	free(t->dev);
	free(t->shadow);
	free(t->remote);
	free(t);
}

static void expect_no_violation(struct run *t)
{
	if (t->f.violations)
		fail_msg("%d violation(s), first: %s (seed %llu)", t->f.violations, t->f.why,
			 (unsigned long long)seed);
}

/* Chunk boundaries: every post is chunk bytes but the last, contiguous,
 * in order, at the matching remote offset; the data arrives intact. */
static void test_chunking(void **state)
{
	struct mrc_rng g;
	mrc_rng_seed(&g, seed);
	for (int it = 0; it < 50; it++) {
		uint64_t size = 1 + mrc_rng_below(&g, 64 << 10);
		uint64_t off = mrc_rng_below(&g, size);
		uint64_t len = 1 + mrc_rng_below(&g, size - off);
		uint64_t chunk = 1 + mrc_rng_below(&g, 8192);
		/* The sink records MAXQ posts: small chunks of a long range
		 * would be more (seed 1795786050 drew 1-byte chunks). */
		if ((len + chunk - 1) / chunk > MAXQ)
			chunk = (len + MAXQ - 1) / MAXQ;
		uint64_t roff = mrc_rng_below(&g, size - len + 1);
		struct run *t = run_setup(size, seed + (uint64_t)it);
		run_put(t, chunk, off, len, roff);
		assert_int_equal(t->ret, 0);
		expect_no_violation(t);
		uint64_t n = (len + chunk - 1) / chunk;
		assert_int_equal(t->s.posts, n);
		for (uint64_t k = 0; k < n; k++) {
			assert_int_equal(t->s.r[k].off, off + k * chunk);
			assert_int_equal(t->s.r[k].roff, roff + k * chunk);
			assert_int_equal(t->s.r[k].len, k + 1 < n ? chunk : len - k * chunk);
		}
		if (memcmp(t->remote + roff, t->dev + off, len))
			fail_msg("data differs (iteration %d, seed %llu)", it, (unsigned long long)seed);
		run_free(t);
	}
}

/* Both gates on: copy k+1 may finish only after post k, and chunk k may
 * complete only once copy k+1 started.  A pipeline that serialised copy
 * and send would trip one of them (bounded waits, reported as violations). */
static void test_pipelined(void **state)
{
	struct run *t = run_setup(64 << 10, seed);
	t->f.gate_on_post = 1;
	t->s.gate_complete = 1;
	t->s.cap = 2;               /* forces reaps during the put */
	run_put(t, 4096, 0, 64 << 10, 0);
	assert_int_equal(t->ret, 0);
	expect_no_violation(t);
	assert_int_equal(t->s.posts, 16);
	assert_true(t->s.enospc > 0);       /* back-pressure was exercised */
	assert_true(t->s.max_out <= 2);
	assert_memory_equal(t->remote, t->dev, 64 << 10);
	run_free(t);
}

/* An asynchronous copy failure at chunk 3: chunks 0..2 are posted (and
 * reaped), nothing after, the error is returned. */
static void test_copy_error(void **state)
{
	struct run *t = run_setup(40000, seed);
	t->f.fail_copy_at = 3;
	run_put(t, 4000, 0, 40000, 0);
	assert_int_equal(t->ret, -EIO);
	assert_int_equal(t->s.posts, 3);
	assert_true(t->f.async_err == -EIO);    /* the injected fault happened */
	expect_no_violation(t);
	run_free(t);

	/* An enqueue refused at chunk 5: the copies before it are posted. */
	t = run_setup(40000, seed);
	t->f.fail_enqueue_at = 5;
	run_put(t, 4000, 0, 40000, 0);
	assert_int_equal(t->ret, -EINVAL);
	assert_int_equal(t->f.copies_enq, 5);
	assert_true(t->s.posts <= 5);
	expect_no_violation(t);
	run_free(t);
}

/* An error completion of chunk 1 is returned and stops further posts once
 * the pipeline has seen it (capacity 1: it is seen before chunk 2). */
static void test_completion_error(void **state)
{
	struct run *t = run_setup(40000, seed);
	t->s.cap = 1;
	t->s.err_at = 1;
	run_put(t, 4000, 0, 40000, 0);
	assert_int_equal(t->ret, -EREMOTEIO);
	assert_int_equal(t->s.posts, 2);
	expect_no_violation(t);
	run_free(t);
}

static void test_copy_sync(void **state)
{
	struct run *t = run_setup(10000, seed);
	struct mrc__gpu_stage st = { .ops = &fake_ops, .be = &t->f, .shadow = t->shadow,
				     .dev = t->dev, .chunk = 4096 };
	assert_int_equal(mrc__gpu_stage_copy(&st, 0, 100, 5000), 0);
	assert_memory_equal(t->shadow + 100, t->dev + 100, 5000);
	memset(t->shadow, 0x5a, 10000);
	uint8_t first = t->dev[0];
	assert_int_equal(mrc__gpu_stage_copy(&st, 1, 1, 9999), 0);
	assert_int_equal(t->dev[0], first);
	for (int i = 1; i < 10000; i++)
		assert_int_equal(t->dev[i], 0x5a);
	run_free(t);
}

/* ---- end to end through mrcd ---------------------------------------- */
static void test_mrcd_write_and_land(void **state)
{
	if (!mrcd_spawn_available())
		MRC_SKIP("%s is not built", mrcd_spawn_bin());
	struct mrcd_proc d;
	assert_int_equal(mrcd_spawn_start(&d, NULL), 0);
	struct mrc_ctx *ctx;
	struct mrc_qp *a, *b;
	assert_int_equal(mrc_open(d.sock, &ctx), 0);
	assert_int_equal(mrc_create_qp(ctx, NULL, &a), 0);
	assert_int_equal(mrc_create_qp(ctx, NULL, &b), 0);
	struct mrc_qp_addr la, lb;
	assert_int_equal(mrc_qp_info_get(a, &la), 0);
	assert_int_equal(mrc_qp_info_get(b, &lb), 0);
	assert_int_equal(mrc_connect_oob(a, &lb), 0);
	assert_int_equal(mrc_connect_oob(b, &la), 0);

	const uint64_t len = 3 << 20;
	struct fake fs, ft;
	fake_start(&fs);
	fake_start(&ft);
	uint8_t *dsrc = malloc(len), *ddst = calloc(1, len);
	struct mrc_rng g;
	mrc_rng_seed(&g, seed);
	for (uint64_t i = 0; i < len; i++)
		dsrc[i] = (uint8_t)mrc_rng_next(&g);
	struct mrc_gpu_mr *src, *dst;
	assert_int_equal(mrc__gpu_reg_mr_with(ctx, dsrc, len, 0, &fake_ops, &fs, &src), 0);
	assert_int_equal(mrc__gpu_reg_mr_with(ctx, ddst, len, MRC_MR_REMOTE_WRITE, &fake_ops, &ft, &dst), 0);
	assert_int_equal(fs.registered, 1);
	assert_int_equal(mrc_gpu_mr_set_chunk(src, 256 << 10), 0);
	assert_int_equal(mrc_gpu_mr_set_chunk(src, 0), -EINVAL);

	uint32_t rkey = mrc_mr_key(mrc_gpu_mr_host(dst));
	assert_int_equal(mrc_gpu_write(a, src, 4096, len - 8192, rkey, 100, 20000), 0);
	assert_int_equal(fs.copies_done, (len - 8192 + (256 << 10) - 1) / (256 << 10));
	/* Landed in the target's shadow, not yet on its "device". */
	assert_memory_equal((uint8_t *)mrc_mr_addr(mrc_gpu_mr_host(dst)) + 100, dsrc + 4096, len - 8192);
	assert_int_equal(ddst[100], 0);
	assert_int_equal(mrc_gpu_mr_to_device(dst, 100, len - 8192), 0);
	assert_memory_equal(ddst + 100, dsrc + 4096, len - 8192);
	assert_int_equal(mrc_gpu_mr_to_device(dst, len - 10, 11), -ERANGE);
	assert_int_equal(mrc_gpu_write(a, src, 1, len, rkey, 0, 1000), -ERANGE);

	/* A bad rkey: the error completion comes back as the result. */
	assert_true(mrc_gpu_write(a, src, 0, 4096, rkey + 1000, 0, 20000) < 0);

	assert_int_equal(mrc_gpu_dereg_mr(src), 0);
	assert_int_equal(mrc_gpu_dereg_mr(dst), 0);
	assert_int_equal(fs.registered, 0);
	assert_int_equal(fs.destroyed, 1);
	fake_stop(&fs);
	fake_stop(&ft);
	free(dsrc);
	free(ddst);
	mrc_destroy_qp(a);
	mrc_destroy_qp(b);
	mrc_close(ctx);
	mrcd_spawn_stop(&d);
}

int main(void)
{
	seed = getenv("MRC_SEED") ? strtoull(getenv("MRC_SEED"), NULL, 0) : (uint64_t)time(NULL);
	printf("test_gpu_stage: seed %llu (MRC_SEED to repeat)\n", (unsigned long long)seed);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_chunking),
		cmocka_unit_test(test_pipelined),
		cmocka_unit_test(test_copy_error),
		cmocka_unit_test(test_completion_error),
		cmocka_unit_test(test_copy_sync),
		cmocka_unit_test(test_mrcd_write_and_land),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
