/* Small seeded PRNG for tests, benches and the simulator: xoshiro256**
 * seeded through splitmix64.  Never rand(): every run must replay from its
 * printed seed (and the simulator must be deterministic bit for bit). */
#ifndef MRC_COMMON_PRNG_H
#define MRC_COMMON_PRNG_H

#include <stdint.h>

struct mrc_rng {
	uint64_t s[4];
};

static inline uint64_t mrc_splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static inline void mrc_rng_seed(struct mrc_rng *r, uint64_t seed)
{
	for (int i = 0; i < 4; i++)
		r->s[i] = mrc_splitmix64(&seed);
}

static inline uint64_t mrc_rng_next(struct mrc_rng *r)
{
	uint64_t *s = r->s;
	uint64_t x = s[1] * 5;
	uint64_t res = ((x << 7) | (x >> 57)) * 9;
	uint64_t t = s[1] << 17;
	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = (s[3] << 45) | (s[3] >> 19);
	return res;
}

/* Uniform in [0, n); n == 0 gives 0.  The modulo bias is irrelevant for
 * test inputs. */
static inline uint64_t mrc_rng_below(struct mrc_rng *r, uint64_t n)
{
	return n ? mrc_rng_next(r) % n : 0;
}

/* Uniform in [lo, hi]. */
static inline uint64_t mrc_rng_range(struct mrc_rng *r, uint64_t lo, uint64_t hi)
{
	return lo + mrc_rng_below(r, hi - lo + 1);
}

static inline double mrc_rng_unit(struct mrc_rng *r)
{
	return (double)(mrc_rng_next(r) >> 11) * 0x1.0p-53;
}

/* 1 with probability p. */
static inline int mrc_rng_chance(struct mrc_rng *r, double p)
{
	return p > 0 && mrc_rng_unit(r) < p;
}

#endif
