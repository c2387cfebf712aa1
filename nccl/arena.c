/* The bounce arena (arena.h). */
#include <errno.h>
#include <string.h>

#include "nccl/arena.h"

void mrcn_arena_init(struct mrcn_arena *a, uint64_t size)
{
	memset(a, 0, sizeof(*a));
	a->size = size;
}

int mrcn_arena_alloc(struct mrcn_arena *a, uint64_t len)
{
	if (len == 0 || len > a->size || a->qh - a->qt == MRCN_ARENA_Q)
		return -ENOSPC;
	uint64_t pos = a->head % a->size, start = a->head;
	if (pos + len > a->size)
		start += a->size - pos;        /* skip the tail of the ring */
	if (start + len - a->tail > a->size)
		return -ENOSPC;
	int h = (int)(a->qh % MRCN_ARENA_Q);
	a->q[h].start = start;
	a->q[h].end = start + len;
	a->q[h].freed = 0;
	a->qh++;
	a->head = start + len;
	return h;
}

uint64_t mrcn_arena_off(const struct mrcn_arena *a, int h)
{
	return a->q[h].start % a->size;
}

void mrcn_arena_free(struct mrcn_arena *a, int h)
{
	a->q[h].freed = 1;
	while (a->qt != a->qh && a->q[a->qt % MRCN_ARENA_Q].freed) {
		a->tail = a->q[a->qt % MRCN_ARENA_Q].end;
		a->qt++;
	}
	if (a->qt == a->qh)                    /* empty: start over at 0 */
		a->head = a->tail = 0;
}

uint64_t mrcn_arena_used(const struct mrcn_arena *a)
{
	return a->head - a->tail;
}
