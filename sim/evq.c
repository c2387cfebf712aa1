/* The event queue on common/heap.h; see evq.h. */
#include "sim/evq.h"

int sim_evq_init(struct sim_evq *q, uint64_t cap)
{
	q->seq = 0;
	q->pushed = 0;
	return mrc__heap_init(&q->h, cap < 64 ? 64 : (size_t)cap);
}

void sim_evq_free(struct sim_evq *q)
{
	mrc__heap_free(&q->h);
}

int sim_evq_push(struct sim_evq *q, uint64_t t, uint8_t type, uint64_t arg)
{
	struct mrc__heap_ent e = { .t = t, .key = (q->seq << 8) | type, .v.u = arg };
	int rc = mrc__heap_push(&q->h, &e);
	if (rc)
		return rc;
	q->seq++;
	q->pushed++;
	return 0;
}

int sim_evq_pop(struct sim_evq *q, struct sim_event *ev)
{
	struct mrc__heap_ent e;
	if (!mrc__heap_pop(&q->h, &e))
		return 0;
	*ev = (struct sim_event){ .t = e.t, .key = e.key, .arg = e.v.u };
	return 1;
}
