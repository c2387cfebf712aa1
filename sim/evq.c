/* Binary heap of events; see evq.h. */
#include <errno.h>
#include <stdlib.h>

#include "sim/evq.h"

int sim_evq_init(struct sim_evq *q, uint64_t cap)
{
	if (cap < 64)
		cap = 64;
	q->h = malloc(cap * sizeof(*q->h));
	if (!q->h)
		return -ENOMEM;
	q->n = 0;
	q->cap = cap;
	q->seq = 0;
	q->pushed = 0;
	return 0;
}

void sim_evq_free(struct sim_evq *q)
{
	free(q->h);
	q->h = NULL;
	q->n = q->cap = 0;
}

static inline int before(const struct sim_event *a, const struct sim_event *b)
{
	return a->t < b->t || (a->t == b->t && a->key < b->key);
}

int sim_evq_push(struct sim_evq *q, uint64_t t, uint8_t type, uint64_t arg)
{
	if (q->n == q->cap) {
		struct sim_event *nh = realloc(q->h, 2 * q->cap * sizeof(*q->h));
		if (!nh)
			return -ENOMEM;
		q->h = nh;
		q->cap *= 2;
	}
	struct sim_event e = { .t = t, .key = (q->seq++ << 8) | type, .arg = arg };
	q->pushed++;
	/* Sift up with a hole instead of swaps. */
	uint64_t i = q->n++;
	while (i) {
		uint64_t p = (i - 1) / 2;
		if (!before(&e, &q->h[p]))
			break;
		q->h[i] = q->h[p];
		i = p;
	}
	q->h[i] = e;
	return 0;
}

int sim_evq_pop(struct sim_evq *q, struct sim_event *ev)
{
	if (!q->n)
		return 0;
	*ev = q->h[0];
	struct sim_event last = q->h[--q->n];
	uint64_t n = q->n, i = 0;
	/* Sift down the former last element from the root. */
	for (;;) {
		uint64_t c = 2 * i + 1;
		if (c >= n)
			break;
		if (c + 1 < n && before(&q->h[c + 1], &q->h[c]))
			c++;
		if (!before(&q->h[c], &last))
			break;
		q->h[i] = q->h[c];
		i = c;
	}
	if (n)
		q->h[i] = last;
	return 1;
}
