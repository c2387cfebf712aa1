/* Every conviction counted and recorded (record.h, docs/health.md
 * "Convictions"), and the states' names: what the operator reads. */
#include "health/record.h"

#include <errno.h>
#include <stdlib.h>

struct mrc_health_record {
	const struct mrc_topo *t;
	uint64_t located, denied;
	uint64_t total;                 /* records opened */
	struct mrc_health_rec rec[MRC_HEALTH_REC_MAX];
	uint8_t *prev;                  /* [link] its state at the last note */
	uint64_t *open;                 /* [link] its open record's seq + 1 */
};

int mrc_health_record_new(const struct mrc_topo *t, struct mrc_health_record **out)
{
	if (!t || !out)
		return -EINVAL;
	struct mrc_health_record *r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->t = t;
	r->prev = calloc(t->n_links ? t->n_links : 1, sizeof(*r->prev));
	r->open = calloc(t->n_links ? t->n_links : 1, sizeof(*r->open));
	if (!r->prev || !r->open) {
		mrc_health_record_free(r);
		return -ENOMEM;
	}
	*out = r;
	return 0;
}

void mrc_health_record_free(struct mrc_health_record *r)
{
	if (!r)
		return;
	free(r->prev);
	free(r->open);
	free(r);
}

/* The open record of link l, or NULL when it has none or the ring has
 * overwritten it since. */
static struct mrc_health_rec *open_of(struct mrc_health_record *r, uint32_t l)
{
	uint64_t s = r->open[l];
	if (!s || r->total - (s - 1) > MRC_HEALTH_REC_MAX)
		return NULL;
	return &r->rec[(s - 1) % MRC_HEALTH_REC_MAX];
}

static void evidence(struct mrc_health_rec *e, const struct mrc_health *h,
		     const struct mrc_health_link *li, uint32_t l)
{
	size_t n = 0;
	e->fail_paths = li->fail_paths;
	e->fail_hosts = li->fail_hosts;
	e->good_paths = li->good_paths;
	e->good_ns = li->good_ns;
	mrc_health_link_evidence(h, l, e->evidence, MRC_HEALTH_REC_EVIDENCE, &n);
	e->n_evidence = (uint32_t)n;
}

int mrc_health_record_note(struct mrc_health_record *r, const struct mrc_health *h,
			   uint64_t now)
{
	int counted = 0;
	for (uint32_t l = 0; l < r->t->n_links; l++) {
		struct mrc_health_link li;
		if (mrc_health_link_get(h, l, &li))
			continue;
		uint8_t was = r->prev[l];
		r->prev[l] = li.state;
		if (li.state == was)
			continue;
		struct mrc_health_rec *e = open_of(r, l);
		if (li.state < MRC_HEALTH_LOCATED) {
			if (e)
				e->cleared_ns = now;
			r->open[l] = 0;
			continue;
		}
		int up = 0;
		if (was < MRC_HEALTH_LOCATED) {
			up = 1;
			r->located++;
			counted++;
			e = &r->rec[r->total % MRC_HEALTH_REC_MAX];
			*e = (struct mrc_health_rec){ .seq = r->total, .link = l,
				.state = MRC_HEALTH_LOCATED, .located_ns = now };
			r->open[l] = ++r->total;
		}
		if (li.state == MRC_HEALTH_DENIED) {
			up = 1;
			r->denied++;
			counted++;
			if (e) {
				e->state = MRC_HEALTH_DENIED;
				e->denied_ns = now;
			}
		}
		/* The evidence of its latest step up (a denial needs more
		 * hosts' failures than the location had). */
		if (e && up)
			evidence(e, h, &li, l);
	}
	return counted;
}

uint64_t mrc_health_record_located(const struct mrc_health_record *r)
{
	return r->located;
}

uint64_t mrc_health_record_denied(const struct mrc_health_record *r)
{
	return r->denied;
}

int mrc_health_record_get(const struct mrc_health_record *r, uint32_t i,
			  struct mrc_health_rec *out)
{
	uint64_t kept = r->total < MRC_HEALTH_REC_MAX ? r->total : MRC_HEALTH_REC_MAX;
	if (i >= kept)
		return -ENOENT;
	*out = r->rec[(r->total - kept + i) % MRC_HEALTH_REC_MAX];
	return 0;
}

const char *mrc_health_state_name(unsigned state)
{
	static const char *const names[] = { "ok", "suspect", "located", "denied" };
	return state < sizeof(names) / sizeof(names[0]) ? names[state] : "?";
}
