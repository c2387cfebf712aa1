/* Guarded buffers: registered memory with a seeded pattern of guard bytes
 * on both sides, so a write outside the region is caught byte-exactly. */
#ifndef MRC_TESTS_GBUF_H
#define MRC_TESTS_GBUF_H

#include <stddef.h>
#include <stdint.h>

struct chan_gbuf {
	uint8_t *raw;              /* guard | p[0..len) | guard */
	uint8_t *p;
	size_t len, guard, raw_len;
	uint64_t seed;
	int mapped;                /* sparse mmap (MAP_NORESERVE) */
};

/* Allocates len bytes with guard bytes either side.  fill: 0 leaves p
 * zeroed, 1 fills p with bytes of chan_gbuf_byte(seed, i).  sparse: mmap
 * with MAP_NORESERVE, p left zero (untouched pages cost nothing). */
int chan_gbuf_alloc(struct chan_gbuf *g, size_t len, size_t guard, uint64_t seed,
		    int fill, int sparse);
void chan_gbuf_free(struct chan_gbuf *g);
/* -1 when every guard byte is intact, else the offset from p of the first
 * changed one (negative offsets below p are returned as len + guard + k). */
long chan_gbuf_guard_bad(const struct chan_gbuf *g);
/* The pattern byte at offset i for a seed (cheap, position-dependent). */
static inline uint8_t chan_gbuf_byte(uint64_t seed, uint64_t i)
{
	uint64_t x = (i + 1) * 0x9e3779b97f4a7c15ull ^ seed;
	x ^= x >> 29;
	x *= 0xbf58476d1ce4e5b9ull;
	return (uint8_t)(x >> 56);
}

#endif
