/* Guarded buffers; see gbuf.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "tests/support/gbuf.h"

#define GUARD_SEED 0x6775617264ull   /* "guard" */

int chan_gbuf_alloc(struct chan_gbuf *g, size_t len, size_t guard, uint64_t seed,
		    int fill, int sparse)
{
	memset(g, 0, sizeof(*g));
	g->len = len;
	g->guard = guard;
	g->seed = seed;
	g->raw_len = len + 2 * guard;
	if (sparse) {
		void *m = mmap(NULL, g->raw_len, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (m == MAP_FAILED)
			return -errno;
		g->raw = m;
		g->mapped = 1;
	} else {
		g->raw = calloc(1, g->raw_len ? g->raw_len : 1);
		if (!g->raw)
			return -ENOMEM;
	}
	g->p = g->raw + guard;
	for (size_t i = 0; i < guard; i++) {
		g->raw[i] = chan_gbuf_byte(GUARD_SEED ^ seed, i);
		g->p[len + i] = chan_gbuf_byte(GUARD_SEED ^ seed, guard + i);
	}
	if (fill && !sparse)
		for (size_t i = 0; i < len; i++)
			g->p[i] = chan_gbuf_byte(seed, i);
	return 0;
}

void chan_gbuf_free(struct chan_gbuf *g)
{
	if (!g->raw)
		return;
	if (g->mapped)
		munmap(g->raw, g->raw_len);
	else
		free(g->raw);
	g->raw = g->p = NULL;
}

long chan_gbuf_guard_bad(const struct chan_gbuf *g)
{
	for (size_t i = 0; i < g->guard; i++)
		if (g->raw[i] != chan_gbuf_byte(GUARD_SEED ^ g->seed, i))
			return (long)(g->len + g->guard + (g->guard - i));
	for (size_t i = 0; i < g->guard; i++)
		if (g->p[g->len + i] != chan_gbuf_byte(GUARD_SEED ^ g->seed, g->guard + i))
			return (long)(g->len + i);
	return -1;
}
