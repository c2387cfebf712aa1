/* The simulator's event queue: common/heap.h's binary min-heap ordered by
 * (time, sequence number << 8 | type), so events at the same instant run in
 * the order they were scheduled and every run replays identically. */
#ifndef MRC_SIM_EVQ_H
#define MRC_SIM_EVQ_H

#include <stdint.h>

#include "common/heap.h"

struct sim_event {
	uint64_t t;                /* picoseconds */
	uint64_t key;              /* seq << 8 | type */
	uint64_t arg;
};

struct sim_evq {
	struct mrc__heap h;
	uint64_t seq;
	uint64_t pushed;           /* events ever scheduled */
};

int sim_evq_init(struct sim_evq *q, uint64_t cap);
void sim_evq_free(struct sim_evq *q);
int sim_evq_push(struct sim_evq *q, uint64_t t, uint8_t type, uint64_t arg);
/* Removes the earliest event into *ev; 0 when empty. */
int sim_evq_pop(struct sim_evq *q, struct sim_event *ev);

static inline uint8_t sim_event_type(const struct sim_event *e)
{
	return (uint8_t)(e->key & 0xff);
}

#endif
