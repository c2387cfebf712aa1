/* Expert offloading (include/mrc/coll.h mrc_coll_moe_fetch_experts;
 * docs/coll.md "Pre-gated dispatch"): the weights of the experts a rank
 * will need, from their owners, as a needs exchange and one all-to-allv. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "coll/coll_int.h"
#include "coll/moe_int.h"

struct fetch_args {
	uint32_t E;
	size_t blob;
	const void *owned;
	const uint8_t *need;
	void *fetched;
};

static int fetch_body(struct mrc_coll *c, void *arg)
{
	const struct fetch_args *a = arg;
	uint32_t n = c->n, epr = a->E / n;
	size_t words = a->blob / 4;   /* blobs move as int32 elements */
	int32_t *want = malloc(2 * (size_t)a->E * sizeof(*want));
	size_t *v = calloc(4 * (size_t)n, sizeof(*v)), nsend = 0;
	uint8_t *sbuf = NULL;
	int r = -ENOMEM;
	if (!want || !v)
		goto out;
	for (uint32_t e = 0; e < a->E; e++)
		want[e] = a->need[e] != 0;
	/* want + E: [s * epr + i] = rank s wants our expert i */
	if ((r = mrc_coll_alltoall(c, want, want + a->E, epr, MRC_COLL_INT32)))
		goto out;
	for (uint32_t j = 0; j < n; j++)
		for (uint32_t i = 0; i < epr; i++) {
			v[j] += (size_t)want[a->E + j * epr + i];
			v[2 * n + j] += (size_t)want[j * epr + i];
		}
	mrc__coll_prefix(v, v + n, n);
	mrc__coll_prefix(v + 2 * n, v + 3 * n, n);
	nsend = v[2 * n - 1] + v[n - 1];
	r = -ENOMEM;
	sbuf = malloc(nsend * a->blob + 1);
	if (!sbuf)
		goto out;
	/* Our blobs each rank asked for, in expert order: the receiver's
	 * blocks come by owner, so its output is in global expert order. */
	for (uint32_t j = 0, k = 0; j < n; j++)
		for (uint32_t i = 0; i < epr; i++)
			if (want[a->E + j * epr + i])
				memcpy(sbuf + k++ * a->blob, (const uint8_t *)a->owned + i * a->blob,
				       a->blob);
	for (uint32_t i = 0; i < 4 * n; i++)
		v[i] *= words;
	r = mrc_coll_alltoallv(c, sbuf, v, v + n, a->fetched, v + 2 * n, v + 3 * n, MRC_COLL_INT32);
out:
	free(want), free(v), free(sbuf);
	return r;
}

static int fetch_start(struct mrc_coll *c, uint32_t E, size_t blob, const void *owned,
		       const uint8_t *need, void *fetched, struct mrc_coll_req **req)
{
	if (!c || !E || E % c->n || !blob || blob % 4 || !owned || !need || !fetched)
		return -EINVAL;
	struct fetch_args a = { .E = E, .blob = blob, .owned = owned, .need = need,
				.fetched = fetched };
	return mrc__coll_submit_body(c, fetch_body, &a, sizeof(a), req);
}

int mrc_coll_moe_fetch_experts(struct mrc_coll *c, uint32_t n_experts, size_t blob_bytes,
			       const void *owned, const uint8_t *need, void *fetched)
{
	return fetch_start(c, n_experts, blob_bytes, owned, need, fetched, NULL);
}

int mrc_coll_moe_ifetch_experts(struct mrc_coll *c, uint32_t n_experts, size_t blob_bytes,
				const void *owned, const uint8_t *need, void *fetched,
				struct mrc_coll_req **req)
{
	if (!req)
		return -EINVAL;
	*req = NULL;
	return fetch_start(c, n_experts, blob_bytes, owned, need, fetched, req);
}
