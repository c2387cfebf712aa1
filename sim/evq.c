/* The event queue: fixed-delay FIFOs merged with common/heap.h's heap; see
 * evq.h for why. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sim/evq.h"

int sim_evq_init(struct sim_evq *q, uint64_t cap)
{
	memset(q->f, 0, sizeof(q->f));
	q->nf = 0;
	q->last = NULL;
	q->seq = 0;
	q->pushed = 0;
	/* Only timers, starts and faults live in the heap: one timer per
	 * host at most, so a small start suffices (it doubles if not). */
	return mrc__heap_init(&q->h, cap < 64 ? 64 : (size_t)cap);
}

void sim_evq_free(struct sim_evq *q)
{
	mrc__heap_free(&q->h);
	for (uint32_t i = 0; i < q->nf; i++)
		free(q->f[i].e);
	memset(q->f, 0, sizeof(q->f));
	q->nf = 0;
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

int sim_evq_requeue(struct sim_evq *q, const struct sim_event *ev)
{
	struct mrc__heap_ent e = { .t = ev->t, .key = ev->key, .v.u = ev->arg };
	return mrc__heap_push(&q->h, &e);
}

static int fifo_grow(struct sim_evq_fifo *f)
{
	uint32_t cap = f->cap ? 2 * f->cap : 1024;
	struct sim_event *e = malloc((size_t)cap * sizeof(*e));
	if (!e)
		return -ENOMEM;
	/* Unwrap the ring into the new array's start. */
	uint32_t first = f->cap - f->head < f->n ? f->cap - f->head : f->n;
	if (f->n) {
		memcpy(e, f->e + f->head, first * sizeof(*e));
		memcpy(e + first, f->e, (f->n - first) * sizeof(*e));
	}
	free(f->e);
	f->e = e;
	f->head = 0;
	f->cap = cap;
	return 0;
}

int sim_evq_push_in(struct sim_evq *q, uint64_t now, uint64_t delay,
		    uint8_t type, uint64_t arg)
{
	uint64_t t = now + delay;
	struct sim_evq_fifo *f = NULL;
	for (uint32_t i = 0; i < q->nf; i++)
		if (q->f[i].delay == delay) {
			f = &q->f[i];
			break;
		}
	if (!f && q->nf < SIM_EVQ_FIFOS) {
		f = &q->f[q->nf++];
		f->delay = delay;
	}
	/* The tail check keeps the order exact even for a caller whose
	 * now went back: such an event goes to the heap. */
	if (!f || (f->n && f->e[(f->head + f->n - 1) & (f->cap - 1)].t > t))
		return sim_evq_push(q, t, type, arg);
	if (f->n == f->cap && fifo_grow(f))
		return -ENOMEM;
	f->e[(f->head + f->n) & (f->cap - 1)] =
		(struct sim_event){ .t = t, .key = (q->seq << 8) | type, .arg = arg };
	f->n++;
	q->seq++;
	q->pushed++;
	return 0;
}

static inline int before(uint64_t ta, uint64_t ka, uint64_t tb, uint64_t kb)
{
	return ta < tb || (ta == tb && ka < kb);
}

int sim_evq_pop(struct sim_evq *q, struct sim_event *ev)
{
	struct sim_evq_fifo *best = NULL;
	uint64_t bt = 0, bk = 0;
	for (uint32_t i = 0; i < q->nf; i++) {
		struct sim_evq_fifo *f = &q->f[i];
		if (!f->n)
			continue;
		const struct sim_event *e = &f->e[f->head];
		if (!best || before(e->t, e->key, bt, bk)) {
			best = f;
			bt = e->t;
			bk = e->key;
		}
	}
	const struct mrc__heap_ent *top = mrc__heap_top(&q->h);
	if (top && (!best || before(top->t, top->key, bt, bk))) {
		struct mrc__heap_ent e;
		mrc__heap_pop(&q->h, &e);
		*ev = (struct sim_event){ .t = e.t, .key = e.key, .arg = e.v.u };
		q->last = NULL;
		return 1;
	}
	q->last = best;
	if (!best)
		return 0;
	*ev = best->e[best->head];
	best->head = (best->head + 1) & (best->cap - 1);
	best->n--;
	return 1;
}
