/* The simulator's event queue, ordered by (time, sequence number << 8 |
 * type), so events at the same instant run in the order they were
 * scheduled and every run replays identically.
 *
 * Why not one heap: nearly every event is a packet's transmission end
 * (now + its serialisation time) or its arrival (now + the propagation
 * delay), and a run has millions in flight, so a binary heap of them
 * misses the cache on every level of every pop (the heap was the largest
 * item in the profile).  But "now" never goes back, so the events
 * scheduled a fixed delay after now are created in (time, sequence) order
 * already: each such delay gets a FIFO (a ring, appended and popped in
 * order, O(1), sequential memory), and pop takes the earliest of the FIFO
 * heads and the heap's top.  The order is exactly the heap's: same keys,
 * same comparison.  Only a few delays exist (one link rate: a handful of
 * frame sizes, one propagation delay); events with other delays (timers,
 * flow starts, faults), delays beyond SIM_EVQ_FIFOS distinct ones, and any
 * push that would break a FIFO's order go to common/heap.h's heap.  A
 * calendar queue would also be O(1) but needs bucket-width tuning and
 * still sorts within buckets; the FIFOs need neither. */
#ifndef MRC_SIM_EVQ_H
#define MRC_SIM_EVQ_H

#include <stdint.h>

#include "common/heap.h"

#define SIM_EVQ_FIFOS 8

struct sim_event {
	uint64_t t;                /* picoseconds */
	uint64_t key;              /* seq << 8 | type */
	uint64_t arg;
};

/* Events scheduled `delay` after their push time, in order. */
struct sim_evq_fifo {
	uint64_t delay;
	struct sim_event *e;       /* ring of cap (a power of two) entries */
	uint32_t head, n, cap;
};

struct sim_evq {
	struct mrc__heap h;
	struct sim_evq_fifo f[SIM_EVQ_FIFOS];
	uint32_t nf;
	const struct sim_evq_fifo *last;  /* the last pop's FIFO, NULL: heap */
	uint64_t seq;
	uint64_t pushed;           /* events ever scheduled */
};

int sim_evq_init(struct sim_evq *q, uint64_t cap);
void sim_evq_free(struct sim_evq *q);
/* An event at time t (any time). 0 or -ENOMEM. */
int sim_evq_push(struct sim_evq *q, uint64_t t, uint8_t type, uint64_t arg);
/* An event `delay` after now; now must not be below the now of earlier
 * calls (simulated time only moves forward). 0 or -ENOMEM. */
int sim_evq_push_in(struct sim_evq *q, uint64_t now, uint64_t delay,
		    uint8_t type, uint64_t arg);
/* Puts back an event pop returned, with its own key (so in its own
 * place in the order). 0 or -ENOMEM. */
int sim_evq_requeue(struct sim_evq *q, const struct sim_event *ev);
/* Removes the earliest event into *ev; 0 when empty. */
int sim_evq_pop(struct sim_evq *q, struct sim_event *ev);
/* The event `ahead` places behind the one just popped, in the FIFO it
 * came from, or NULL (heap, or not that many): the caller prefetches what
 * that event will touch, since the FIFOs know the future in order. */
static inline const struct sim_event *sim_evq_ahead(const struct sim_evq *q,
						    uint32_t ahead)
{
	const struct sim_evq_fifo *f = q->last;
	if (!f || ahead >= f->n)
		return NULL;
	return &f->e[(f->head + ahead) & (f->cap - 1)];
}

static inline uint8_t sim_event_type(const struct sim_event *e)
{
	return (uint8_t)(e->key & 0xff);
}

#endif
