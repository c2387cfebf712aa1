/* The simulator's PRNG: xoshiro256** seeded through splitmix64.  Every
 * random choice (permutations, groups, start jitter, random loss, ECMP
 * hashes) comes from one seeded stream, so a run replays from its seed. */
#ifndef MRC_SIM_RNG_H
#define MRC_SIM_RNG_H

#include <stdint.h>

struct sim_rng {
	uint64_t s[4];
};

static inline uint64_t sim_splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static inline void sim_rng_seed(struct sim_rng *r, uint64_t seed)
{
	for (int i = 0; i < 4; i++)
		r->s[i] = sim_splitmix64(&seed);
}

static inline uint64_t sim_rng_next(struct sim_rng *r)
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

/* Uniform in [0, n), n > 0 (Lemire's multiply, bias below 2^-32 for the
 * sizes used here). */
static inline uint32_t sim_rng_below(struct sim_rng *r, uint32_t n)
{
	return (uint32_t)(((sim_rng_next(r) >> 32) * (uint64_t)n) >> 32);
}

/* A stateless hash for per-pair choices (ECMP, path subsets). */
static inline uint64_t sim_hash3(uint64_t seed, uint64_t a, uint64_t b)
{
	uint64_t x = seed ^ (a * 0x9e3779b97f4a7c15ull) ^ (b * 0xc2b2ae3d27d4eb4full);
	return sim_splitmix64(&x);
}

#endif
