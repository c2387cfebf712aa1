/* A bounce arena: contiguous allocations from a ring of bytes, released in
 * any order, reclaimed in allocation order (NCCL completes a comm's
 * requests roughly in order, so a FIFO allocator wastes little and needs no
 * free lists).  Allocations never wrap: the tail left at the end of the
 * ring is charged to the allocation that skips it. */
#ifndef MRC_NCCL_ARENA_H
#define MRC_NCCL_ARENA_H

#include <stdint.h>

#define MRCN_ARENA_Q 256          /* allocations outstanding at most */

struct mrcn_arena {
	uint64_t size, head, tail;        /* free-running byte counters */
	uint32_t qh, qt;                  /* allocation FIFO indices */
	struct { uint64_t start, end; uint8_t freed; } q[MRCN_ARENA_Q];
};

void mrcn_arena_init(struct mrcn_arena *a, uint64_t size);
/* An allocation's handle (>= 0), or -ENOSPC while there is no room. */
int mrcn_arena_alloc(struct mrcn_arena *a, uint64_t len);
/* Offset in the region of allocation h. */
uint64_t mrcn_arena_off(const struct mrcn_arena *a, int h);
void mrcn_arena_free(struct mrcn_arena *a, int h);
/* Bytes held (allocated or awaiting reclaim). */
uint64_t mrcn_arena_used(const struct mrcn_arena *a);

#endif
