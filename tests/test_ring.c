/* Ring ABI (mrc/ring.h): layout, publication by seq word across the
 * 32-bit wrap, a producer and a consumer on two threads through many
 * wraparounds with the eventfd doorbell (a lost wake-up would stall the
 * consumer past its bounded wait and fail), and the sleeping-flag
 * protocol step by step. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "mrc/ring.h"
#include "common/prng.h"

#define WAKE_TIMEOUT_MS 10000

static uint64_t seed;

struct ring {
	struct mrc_ring_hdr *h;
	struct mrc_sqe *d;
	uint32_t n;
	int efd;                   /* consumer's doorbell */
};

static void ring_new(struct ring *r, uint32_t n, uint64_t base)
{
	void *mem = aligned_alloc(64, mrc_ring_bytes(n, sizeof(struct mrc_sqe)));
	assert_non_null(mem);
	memset(mem, 0, mrc_ring_bytes(n, sizeof(struct mrc_sqe)));
	r->h = mem;
	mrc_ring_layout(r->h, MRC_RING_SQ, n, sizeof(struct mrc_sqe), 0, 0, base, 0);
	r->d = (struct mrc_sqe *)(r->h + 1);
	r->n = n;
	r->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	assert_true(r->efd >= 0);
}

static void ring_free(struct ring *r)
{
	close(r->efd);
	free(r->h);
}

static void test_layout(void **state)
{
	(void)state;
	/* producer, consumer and immutable words on three distinct lines */
	assert_int_equal(offsetof(struct mrc_ring_hdr, head) / 64, 1);
	assert_int_equal(offsetof(struct mrc_ring_hdr, tail) / 64, 2);
	assert_int_equal(offsetof(struct mrc_ring_hdr, sleeping) / 64, 2);
	assert_int_equal(offsetof(struct mrc_ring_hdr, entries) / 64, 0);
	assert_int_equal(offsetof(struct mrc_sqe, seq), 0);
	assert_int_equal(offsetof(struct mrc_cqe, seq), 0);
	assert_int_equal(mrc_ring_bytes(8, 64) % 64, 0);
	assert_int_equal(mrc_ring_bytes(8, 32), 192 + 256);
}

struct prod_arg {
	struct ring *r;
	uint64_t base, count;
	uint64_t wakes, errors;
};

static uint64_t tag(uint64_t i)
{
	return i * 0x9e3779b97f4a7c15ull ^ seed;
}

static void *producer(void *arg)
{
	struct prod_arg *a = arg;
	struct ring *r = a->r;
	uint64_t limit = a->base + r->n;
	for (uint64_t i = a->base; i < a->base + a->count; i++) {
		while (i >= limit)
			limit = mrc_ring_tail_load(r->h) + r->n;   /* spin for space */
		struct mrc_sqe *s = &r->d[i & (r->n - 1)];
		s->op = (uint8_t)(1 + i % 6);
		s->wr_id = i;
		s->loff = tag(i);
		s->len = ~tag(i);
		s->imm = (uint32_t)i;
		mrc_ring_seq_publish(&s->seq, i);
		if (mrc_ring_need_wake(r->h)) {
			uint64_t one = 1;
			/* no cmocka asserts off the main thread: count failures */
			if (write(r->efd, &one, sizeof(one)) != 8)
				a->errors++;
			a->wakes++;
		}
	}
	return NULL;
}

/* Consumes count descriptors; sleeps on the eventfd whenever the ring is
 * empty.  Returns the number of sleeps. */
static uint64_t consume(struct ring *r, uint64_t base, uint64_t count, uint64_t *raises)
{
	uint64_t sleeps = 0;
	for (uint64_t i = base; i < base + count;) {
		struct mrc_sqe *s = &r->d[i & (r->n - 1)];
		if (mrc_ring_seq_load(&s->seq) != (uint32_t)(i + 1)) {
			(*raises)++;
			if (mrc_ring_prepare_sleep(r->h, &s->seq, i))
				continue;
			struct pollfd p = { .fd = r->efd, .events = POLLIN };
			int n = poll(&p, 1, WAKE_TIMEOUT_MS);
			assert_int_equal(n, 1);             /* 0 here: a lost wake-up */
			uint64_t v;
			assert_int_equal(read(r->efd, &v, sizeof(v)), 8);
			mrc_ring_wake_done(r->h);
			sleeps++;
			continue;
		}
		struct mrc_sqe c = *s;
		assert_int_equal(c.wr_id, i);
		assert_int_equal(c.op, 1 + i % 6);
		assert_int_equal(c.loff, tag(i));
		assert_int_equal(c.len, ~tag(i));
		assert_int_equal(c.imm, (uint32_t)i);
		i++;
		/* free slots in batches, like the daemon does */
		if ((i & 7) == 0 || i == base + count)
			mrc_ring_tail_store(r->h, i);
	}
	return sleeps;
}

static void run_threads(uint32_t n, uint64_t base, uint64_t count)
{
	struct ring r;
	ring_new(&r, n, base);
	struct prod_arg a = { .r = &r, .base = base, .count = count };
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, producer, &a), 0);
	uint64_t raises = 0;
	uint64_t sleeps = consume(&r, base, count, &raises);
	pthread_join(th, NULL);
	assert_int_equal(a.errors, 0);
	print_message("ring %u, %llu descriptors from %llu: %llu sleeps, %llu doorbells\n", n,
		      (unsigned long long)count, (unsigned long long)base,
		      (unsigned long long)sleeps, (unsigned long long)a.wakes);
	(void)raises;
	/* a doorbell only answers a raised flag, once per raise (a raise the
	 * consumer withdrew may still be answered: a harmless spurious wake) */
	assert_true(a.wakes <= raises);
	assert_true(sleeps <= a.wakes);
	ring_free(&r);
}

static void test_two_threads_wraparound(void **state)
{
	(void)state;
	run_threads(8, 0, 300000);
	run_threads(64, 0, 300000);
}

/* seq is the low 32 bits of index + 1: crossing 2^32 must not confuse a
 * slot's new value with an old one. */
static void test_seq_wrap(void **state)
{
	(void)state;
	run_threads(16, (1ull << 32) - 1000, 5000);
	run_threads(16, UINT64_MAX - 2000ull - ((UINT64_MAX - 2000ull) & 15), 1000);
}

static void test_sleep_protocol(void **state)
{
	(void)state;
	struct ring r;
	ring_new(&r, 8, 0);
	struct mrc_sqe *s0 = &r.d[0];
	/* empty: the consumer may sleep; the flag is up */
	assert_int_equal(mrc_ring_prepare_sleep(r.h, &s0->seq, 0), 0);
	assert_int_equal(r.h->sleeping, 1);
	/* a producer publishing now must ring, once */
	mrc_ring_seq_publish(&s0->seq, 0);
	assert_int_equal(mrc_ring_need_wake(r.h), 1);
	assert_int_equal(mrc_ring_need_wake(r.h), 0);
	assert_int_equal(r.h->sleeping, 0);
	/* work already there: prepare_sleep refuses and lowers the flag */
	assert_int_equal(mrc_ring_prepare_sleep(r.h, &s0->seq, 0), 1);
	assert_int_equal(r.h->sleeping, 0);
	/* a stale seq from the previous lap is not "ready" */
	s0->seq = (uint32_t)(0 + 1);
	assert_int_equal(mrc_ring_prepare_sleep(r.h, &s0->seq, 8), 0);
	mrc_ring_wake_done(r.h);
	ring_free(&r);
}

int main(void)
{
	seed = getenv("MRC_SEED") ? strtoull(getenv("MRC_SEED"), NULL, 0) : (uint64_t)time(NULL);
	printf("test_ring: seed %llu (MRC_SEED to repeat)\n", (unsigned long long)seed);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_layout),
		cmocka_unit_test(test_sleep_protocol),
		cmocka_unit_test(test_two_threads_wraparound),
		cmocka_unit_test(test_seq_wrap),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
