#include "tests/support/coll_nb.h"

#include <errno.h>
#include <stdlib.h>

#include "common/clock.h"

void coll_nb_compute(int us)
{
	double end = mrc__mono_s() + us * 1e-6;
	while (mrc__mono_s() < end)
		;
}

int coll_nb_run(struct mrc_coll *c, size_t n, coll_nb_start_fn start, void *arg,
		struct mrc_rng *g, int compute_us, int *res, uint32_t *peak)
{
	struct mrc_coll_req **q = calloc(n + 1, sizeof(*q));
	int *rs = calloc(n + 1, sizeof(*rs)), serr = 0, err = 0;
	size_t started = 0, left;
	if (!q || !rs) {
		free(q), free(rs);
		return -ENOMEM;
	}
	for (; started < n && !serr; started++) {
		if ((serr = start(arg, started, &q[started])))
			break;
		if (peak && mrc_coll_inflight(c) > *peak)
			*peak = mrc_coll_inflight(c);
	}
	for (size_t i = started; i < n; i++)
		rs[i] = serr;
	for (left = started; left;) {
		coll_nb_compute(compute_us);
		size_t i = mrc_rng_below(g, started);
		if (!q[i])
			continue;
		int t = mrc_coll_test(q[i]);
		if (t == -EINPROGRESS)
			continue;
		rs[i] = t, q[i] = NULL, left--;
	}
	for (size_t i = 0; i < n; i++) {
		if (rs[i] && !err)
			err = rs[i];
		if (res)
			res[i] = rs[i];
	}
	free(q), free(rs);
	return serr ? serr : err;
}
