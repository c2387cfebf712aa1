/* The simulator's randomness: the project's seeded PRNG (common/prng.h)
 * plus a stateless hash for per-flow choices (ECMP), so a flow's path never
 * depends on the order events happen in. */
#ifndef MRC_SIM_RNG_H
#define MRC_SIM_RNG_H

#include <stdint.h>

#include "common/prng.h"

static inline uint64_t sim_hash3(uint64_t seed, uint64_t a, uint64_t b)
{
	uint64_t x = seed ^ (a * 0x9e3779b97f4a7c15ull) ^ (b * 0xc2b2ae3d27d4eb4full);
	return mrc_splitmix64(&x);
}

#endif
