/* Seeded randomness for a cmocka test binary: the seed comes from
 * MRC_TEST_SEED (to replay) or the clock, is printed at start and with
 * every CHECK failure, and every test restarts the same stream (reseed as
 * the cmocka setup).  Include after <cmocka.h>. */
#ifndef MRC_TESTS_SEEDED_H
#define MRC_TESTS_SEEDED_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "common/prng.h"

static uint64_t g_seed;
static uint64_t g_rng;

static inline uint64_t rnd(void)
{
	return mrc_splitmix64(&g_rng);
}

#define CHECK(cond, ...) do { \
	if (!(cond)) { \
		print_error("seed=%llu (MRC_TEST_SEED to replay): ", \
			    (unsigned long long)g_seed); \
		fail_msg(__VA_ARGS__); \
	} } while (0)

static inline int reseed(void **state)
{
	(void)state;
	g_rng = g_seed;
	return 0;
}

static inline void seed_init(const char *name)
{
	const char *e = getenv("MRC_TEST_SEED");
	g_seed = e ? strtoull(e, NULL, 0)
		   : (uint64_t)time(NULL) * 1000003u ^ (uint64_t)getpid();
	printf("%s: seed=%llu\n", name, (unsigned long long)g_seed);
}

#endif
