/* What a host shares of its observations (health.h mrc_health_export,
 * mrc_health_recovered_since; docs/health.md "Sharing"). */
#include "health/health.h"
#include "health/health_int.h"

/* Appends self's fresh observations with news == want to out, newest
 * first, until *n reaches max. */
static void export_pass(const struct mrc_health *h, uint64_t now, uint8_t want,
			struct mrc_health_obs *out, size_t max, size_t *n)
{
	/* Newest first by selection: max is small (one datagram's worth). */
	uint64_t below = UINT64_MAX;
	while (*n < max) {
		const struct obs *best = NULL;
		for (uint32_t i = 0; i < h->n_obs; i++) {
			const struct obs *e = &h->obs[i];
			if (e->o.src != h->self || e->news != want || e->o.ts_ns >= below ||
			    e->o.ts_ns + h->cfg.ttl_ns <= now)
				continue;
			if (!best || e->o.ts_ns > best->o.ts_ns)
				best = e;
		}
		if (!best)
			break;
		/* Equal times: take every one of them in this round. */
		for (uint32_t i = 0; i < h->n_obs && *n < max; i++)
			if (h->obs[i].o.src == h->self && h->obs[i].news == want &&
			    h->obs[i].o.ts_ns == best->o.ts_ns)
				out[(*n)++] = h->obs[i].o;
		below = best->o.ts_ns;
	}
}

int mrc_health_export(const struct mrc_health *h, uint64_t now,
		      struct mrc_health_obs *out, size_t max, size_t *n)
{
	*n = 0;
	/* Failures and paths working again first: a host with hundreds of
	 * paths acked since would otherwise never send the retraction of a
	 * failure it told, and its peers held it for the TTL. */
	export_pass(h, now, 1, out, max, n);
	export_pass(h, now, 0, out, max, n);
	return 0;
}

int mrc_health_recovered_since(const struct mrc_health *h, uint64_t t)
{
	for (uint32_t i = 0; i < h->n_obs; i++) {
		const struct obs *e = &h->obs[i];
		if (e->o.src == h->self && e->o.ok && e->news && e->o.ts_ns > t)
			return 1;
	}
	return 0;
}
