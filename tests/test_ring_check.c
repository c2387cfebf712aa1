/* Submission descriptor validation (codec/ringcheck.h): each malformed
 * descriptor is refused with its own errno, well-formed ones pass, and on
 * random descriptors the checker never accepts a local range outside the
 * named region (checked against an independent model). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "codec/ringcheck.h"
#include "mrc/mrc.h"
#include "common/prng.h"

static uint64_t seed;

/* Three regions: key 10 read-only source, key 11 write-only (RECV), key
 * 12 everything. */
static const struct mrc__mr_view mrs[] = {
	{ .len = 4096, .access = MRC_MR_LOCAL_READ },
	{ .len = 8192, .access = MRC_MR_LOCAL_WRITE },
	{ .len = 1ull << 20, .access = MRC_MR_ALL },
};

static const struct mrc__mr_view *lookup(void *ctx, uint32_t key)
{
	(void)ctx;
	return key >= 10 && key <= 12 ? &mrs[key - 10] : NULL;
}

static int check(const struct mrc_sqe *s)
{
	const char *why = NULL;
	int r = mrc__sqe_check(s, lookup, NULL, &why);
	if (r)
		assert_non_null(why);
	return r;
}

static void test_valid(void **state)
{
	(void)state;
	struct mrc_sqe w = { .op = MRC_SQE_WRITE, .lkey = 10, .loff = 0, .len = 4096, .rkey = 99, .roff = 7 };
	assert_int_equal(check(&w), 0);
	w.op = MRC_SQE_WRITE_IMM;
	w.imm = 5;
	assert_int_equal(check(&w), 0);
	struct mrc_sqe s = { .op = MRC_SQE_SEND, .lkey = 12, .loff = 100, .len = 0 };
	assert_int_equal(check(&s), 0);
	s.op = MRC_SQE_SEND_IMM;
	s.imm = 1;
	assert_int_equal(check(&s), 0);
	struct mrc_sqe r = { .op = MRC_SQE_RECV, .lkey = 11, .loff = 4096, .len = 4096 };
	assert_int_equal(check(&r), 0);
	struct mrc_sqe a = { .op = MRC_SQE_ATOMIC_ADD, .rkey = 3, .roff = 64, .add = 1 };
	assert_int_equal(check(&a), 0);
	a.flags = MRC_SQE_F_FENCE;
	assert_int_equal(check(&a), 0);
}

static void test_refused(void **state)
{
	(void)state;
	struct {
		struct mrc_sqe s;
		int err;
	} cases[] = {
		{ { .op = 0 }, -EOPNOTSUPP },
		{ { .op = MRC_SQE_OP_MAX + 1 }, -EOPNOTSUPP },
		{ { .op = 255 }, -EOPNOTSUPP },
		{ { .op = MRC_SQE_WRITE, .flags = 0x80, .lkey = 10 }, -EINVAL }, /* undefined flag */
		{ { .op = MRC_SQE_RECV, .flags = MRC_SQE_F_FENCE, .lkey = 11 }, -EINVAL },
		{ { .op = MRC_SQE_WRITE, .rsvd0 = 1, .lkey = 10 }, -EINVAL },
		{ { .op = MRC_SQE_WRITE, .rsvd1 = 1, .lkey = 10 }, -EINVAL },
		{ { .op = MRC_SQE_WRITE, .lkey = 10, .imm = 1 }, -EINVAL },
		{ { .op = MRC_SQE_WRITE, .lkey = 10, .add = 1 }, -EINVAL },
		{ { .op = MRC_SQE_WRITE, .lkey = 10, .len = (1ull << 30) + 1 }, -EMSGSIZE },
		{ { .op = MRC_SQE_WRITE, .lkey = 0 }, -ENOKEY },
		{ { .op = MRC_SQE_WRITE, .lkey = 13 }, -ENOKEY },
		{ { .op = MRC_SQE_WRITE, .lkey = 10, .loff = 4096, .len = 1 }, -ERANGE },
		{ { .op = MRC_SQE_WRITE, .lkey = 10, .loff = 4097 }, -ERANGE },
		{ { .op = MRC_SQE_WRITE, .lkey = 10, .loff = UINT64_MAX, .len = 2 }, -ERANGE },
		{ { .op = MRC_SQE_WRITE, .lkey = 11, .len = 1 }, -EPERM },
		{ { .op = MRC_SQE_SEND, .lkey = 12, .rkey = 1 }, -EINVAL },
		{ { .op = MRC_SQE_SEND, .lkey = 12, .roff = 1 }, -EINVAL },
		{ { .op = MRC_SQE_RECV, .lkey = 10, .len = 1 }, -EPERM },
		{ { .op = MRC_SQE_RECV, .lkey = 11, .rkey = 2 }, -EINVAL },
		{ { .op = MRC_SQE_RECV, .lkey = 11, .imm = 2 }, -EINVAL },
		{ { .op = MRC_SQE_ATOMIC_ADD, .lkey = 12 }, -EINVAL },
		{ { .op = MRC_SQE_ATOMIC_ADD, .len = 8 }, -EINVAL },
		{ { .op = MRC_SQE_ATOMIC_ADD, .roff = 4 }, -EINVAL },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int r = check(&cases[i].s);
		if (r != cases[i].err)
			print_message("case %zu: got %d want %d\n", i, r, cases[i].err);
		assert_int_equal(r, cases[i].err);
	}
}

static void test_cqe_op(void **state)
{
	(void)state;
	assert_int_equal(mrc__sqe_cqe_op(MRC_SQE_WRITE), MRC_CQE_WRITE);
	assert_int_equal(mrc__sqe_cqe_op(MRC_SQE_RECV), MRC_CQE_RECV);
	assert_int_equal(mrc__sqe_cqe_op(MRC_SQE_ATOMIC_ADD), MRC_CQE_ATOMIC_ADD);
	assert_int_equal(mrc__sqe_cqe_op(0), 0);
	assert_int_equal(mrc__sqe_cqe_op(200), 0);
}

/* Random descriptors: accepted ones always name a range inside a region
 * with the right access. */
static void test_random_model(void **state)
{
	(void)state;
	struct mrc_rng r;
	mrc_rng_seed(&r, seed);
	unsigned ok = 0;
	for (int i = 0; i < 500000; i++) {
		struct mrc_sqe s;
		memset(&s, 0, sizeof(s));
		s.op = (uint8_t)(mrc_rng_next(&r) % 8);
		s.lkey = 9 + (uint32_t)(mrc_rng_next(&r) % 5);
		uint64_t big = mrc_rng_next(&r);
		s.loff = (mrc_rng_next(&r) & 1) ? big : mrc_rng_next(&r) % 10000;
		s.len = (mrc_rng_next(&r) & 1) ? mrc_rng_next(&r) : mrc_rng_next(&r) % 10000;
		if (mrc_rng_next(&r) % 4 == 0)
			s.imm = (uint32_t)mrc_rng_next(&r);
		if (s.op == MRC_SQE_ATOMIC_ADD && (mrc_rng_next(&r) & 1))
			s.lkey = 0, s.loff = 0, s.len = 0;
		if (check(&s))
			continue;
		ok++;
		if (s.op == MRC_SQE_ATOMIC_ADD)
			continue;
		const struct mrc__mr_view *m = lookup(NULL, s.lkey);
		assert_non_null(m);
		assert_true(s.loff <= m->len && s.len <= m->len - s.loff);
		uint32_t need = s.op == MRC_SQE_RECV ? MRC_MR_LOCAL_WRITE : MRC_MR_LOCAL_READ;
		assert_true(m->access & need);
	}
	assert_true(ok > 0);
}

int main(void)
{
	seed = getenv("MRC_SEED") ? strtoull(getenv("MRC_SEED"), NULL, 0) : (uint64_t)time(NULL);
	printf("test_ring_check: seed %llu (MRC_SEED to repeat)\n", (unsigned long long)seed);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_valid),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_cqe_op),
		cmocka_unit_test(test_random_model),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
