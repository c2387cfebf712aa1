/* common/parse.h: numbers from the command line and the environment are
 * taken whole or refused (what atoi and strtoul let through is refused),
 * and mrc-coll-perf's sweep options (coll/verify.c) refuse what they
 * cannot take instead of running a 0-byte or 0-run sweep. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>

#include "coll/coll_int.h"
#include "common/parse.h"

static void test_u64(void **state)
{
	(void)state;
	uint64_t v = 7;
	assert_int_equal(mrc__parse_u64("0", 0, 10, &v), 0);
	assert_int_equal(v, 0);
	assert_int_equal(mrc__parse_u64("18446744073709551615", 0, UINT64_MAX, &v), 0);
	assert_true(v == UINT64_MAX);
	assert_int_equal(mrc__parse_u64("10", 0, 10, &v), 0);
	assert_int_equal(v, 10);
	static const char *const bad[] = { "", " 1", "1 ", "+1", "-1", "0x10", "1e3", "11",
		"18446744073709551616", "99999999999999999999999", "abc" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		v = 7;
		if (mrc__parse_u64(bad[i], 0, 10, &v) != -EINVAL || v != 7)
			fail_msg("'%s' taken as %llu", bad[i], (unsigned long long)v);
	}
	assert_int_equal(mrc__parse_u64(NULL, 0, 10, &v), -EINVAL);
	assert_int_equal(mrc__parse_u64("3", 4, 10, &v), -EINVAL);
}

static void test_size(void **state)
{
	(void)state;
	static const struct { const char *s; uint64_t v; } good[] = {
		{ "0", 0 }, { "4096", 4096 }, { "64K", 65536 }, { "64k", 65536 }, { "1M", 1 << 20 },
		{ "256MiB", 256ull << 20 }, { "1GB", 1ull << 30 }, { "3g", 3ull << 30 }, { "7B", 7 },
		{ "16777215G", 16777215ull << 30 },
	};
	uint64_t v;
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		v = 1;
		if (mrc__parse_size(good[i].s, &v) || v != good[i].v)
			fail_msg("'%s' -> %llu, want %llu", good[i].s, (unsigned long long)v,
				 (unsigned long long)good[i].v);
	}
	static const char *const bad[] = { "", "K", "1.5M", "-1", " 1", "1T", "1KK", "1iB", "1Mi B",
		"0x10", "8x" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		v = 1;
		if (mrc__parse_size(bad[i], &v) != -EINVAL || v != 1)
			fail_msg("'%s' taken as %llu", bad[i], (unsigned long long)v);
	}
	assert_int_equal(mrc__parse_size("17179869184G", &v), -ERANGE);   /* 2^64 */
	assert_int_equal(mrc__parse_size("18446744073709551616", &v), -ERANGE);
}

static void test_sweep_opts(void **state)
{
	(void)state;
	struct mrc__coll_sweep s = { 0 };
	assert_int_equal(mrc__coll_sweep_opt(&s, 'b', "8"), 0);
	assert_int_equal(mrc__coll_sweep_opt(&s, 'e', "256M"), 0);
	assert_int_equal(mrc__coll_sweep_opt(&s, 'f', "1.5"), 0);
	assert_int_equal(mrc__coll_sweep_opt(&s, 'c', "2"), 0);
	assert_int_equal(mrc__coll_sweep_opt(&s, 'n', "20"), 0);
	assert_int_equal(mrc__coll_sweep_opt(&s, 'w', "0"), 0);
	assert_true(s.minb == 8 && s.maxb == 256u << 20 && s.factor == 1.5 && s.check == 2 &&
		    s.iters == 20 && s.warm == 0);
	struct mrc__coll_sweep was = s;
	static const struct { int o; const char *v; } bad[] = {
		{ 'b', "8x" }, { 'e', "2T" }, { 'e', "1099511627777" }, { 'f', "1" }, { 'f', "2x" },
		{ 'f', "" }, { 'c', "3" }, { 'n', "0" }, { 'n', "ten" }, { 'w', "-1" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (mrc__coll_sweep_opt(&s, bad[i].o, bad[i].v) != -2)
			fail_msg("-%c '%s' taken", bad[i].o, bad[i].v);
	assert_memory_equal(&s, &was, sizeof(s));   /* nothing half-taken */
	assert_int_equal(mrc__coll_sweep_opt(&s, 'x', "1"), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_u64),
		cmocka_unit_test(test_size),
		cmocka_unit_test(test_sweep_opts),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
