/* A binary min-heap of (time, key, value) entries, ordered by time and then
 * by key: callers make keys unique (an insertion sequence number), so ties
 * break in a fixed order and every run replays identically.  Entries carry
 * their keys, so sifting never touches what the value points to.  The array
 * grows by doubling and is never shrunk: no allocation per entry in steady
 * state.  Serves the simulator's event queue and the test channel. */
#ifndef MRC_COMMON_HEAP_H
#define MRC_COMMON_HEAP_H

#include <stddef.h>
#include <stdint.h>

struct mrc__heap_ent {
	uint64_t t;
	uint64_t key;
	union {
		uint64_t u;
		void *p;
	} v;
};

struct mrc__heap {
	struct mrc__heap_ent *e;
	size_t n, cap;
};

/* Room for cap entries to start with (at least 1); 0 or -ENOMEM. */
int mrc__heap_init(struct mrc__heap *h, size_t cap);
void mrc__heap_free(struct mrc__heap *h);
/* 0, or -ENOMEM (the heap is unchanged). */
int mrc__heap_push(struct mrc__heap *h, const struct mrc__heap_ent *x);
/* Removes the earliest entry into *out; 0 when empty, else 1. */
int mrc__heap_pop(struct mrc__heap *h, struct mrc__heap_ent *out);

static inline const struct mrc__heap_ent *mrc__heap_top(const struct mrc__heap *h)
{
	return h->n ? &h->e[0] : NULL;
}

#endif
