/* Binary min-heap; see heap.h. */
#include <errno.h>
#include <stdlib.h>

#include "common/heap.h"

int mrc__heap_init(struct mrc__heap *h, size_t cap)
{
	if (cap < 1)
		cap = 1;
	h->e = malloc(cap * sizeof(*h->e));
	if (!h->e)
		return -ENOMEM;
	h->n = 0;
	h->cap = cap;
	return 0;
}

void mrc__heap_free(struct mrc__heap *h)
{
	free(h->e);
	h->e = NULL;
	h->n = h->cap = 0;
}

static inline int before(const struct mrc__heap_ent *a, const struct mrc__heap_ent *b)
{
	return a->t < b->t || (a->t == b->t && a->key < b->key);
}

int mrc__heap_push(struct mrc__heap *h, const struct mrc__heap_ent *x)
{
	if (h->n == h->cap) {
		size_t cap = h->cap ? 2 * h->cap : 64;
		struct mrc__heap_ent *ne = realloc(h->e, cap * sizeof(*h->e));
		if (!ne)
			return -ENOMEM;
		h->e = ne;
		h->cap = cap;
	}
	/* Sift up with a hole instead of swaps. */
	size_t i = h->n++;
	while (i) {
		size_t p = (i - 1) / 2;
		if (!before(x, &h->e[p]))
			break;
		h->e[i] = h->e[p];
		i = p;
	}
	h->e[i] = *x;
	return 0;
}

int mrc__heap_pop(struct mrc__heap *h, struct mrc__heap_ent *out)
{
	if (!h->n)
		return 0;
	*out = h->e[0];
	struct mrc__heap_ent last = h->e[--h->n];
	size_t n = h->n, i = 0;
	/* Sift the former last entry down from the root. */
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= n)
			break;
		if (c + 1 < n && before(&h->e[c + 1], &h->e[c]))
			c++;
		if (!before(&h->e[c], &last))
			break;
		h->e[i] = h->e[c];
		i = c;
	}
	if (n)
		h->e[i] = last;
	return 1;
}
