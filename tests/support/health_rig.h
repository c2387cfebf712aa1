/* What the health tests tell a struct mrc_health about a fabric's paths:
 * one host's own outcomes or another's merged report, every path at once
 * with one link dead; which paths cross a link; a random one to kill.
 * Include after <cmocka.h>. */
#ifndef MRC_TESTS_HEALTH_RIG_H
#define MRC_TESTS_HEALTH_RIG_H

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "health/health.h"
#include "tests/support/seeded.h"
#include "topology/topo.h"

/* Whether path p crosses link. */
static inline bool rig_path_crosses(const struct mrc_path *p, uint32_t link)
{
	for (unsigned i = 0; i < p->n_links; i++)
		if (p->links[i] == link)
			return true;
	return false;
}

/* Whether src -> dst on ev crosses link. */
static inline bool rig_crosses(const struct mrc_topo *t, uint32_t src, uint32_t dst, uint32_t ev,
			       uint32_t link)
{
	struct mrc_path p;
	return !mrc_topo_path(t, src, dst, ev, &p) && rig_path_crosses(&p, link);
}

/* A random leaf-spine link (the seeded stream); *leaf its leaf. */
static inline uint32_t rig_core_link(const struct mrc_topo *t, uint32_t *leaf)
{
	uint32_t p = (uint32_t)(rnd() % t->planes);
	uint32_t l = (uint32_t)(rnd() % t->n_leaves[p]), s = (uint32_t)(rnd() % t->n_spines[p]);
	if (leaf)
		*leaf = l;
	return t->leaf_spine[p][(size_t)l * t->n_spines[p] + s];
}

/* src -> dst on ev worked or failed at now: h's own (src == self) or
 * merged as src's report; nothing for a pair without that path. */
static inline void rig_see(struct mrc_health *h, const struct mrc_topo *t, uint32_t self,
			   uint32_t src, uint32_t dst, uint32_t ev, bool ok, uint64_t now)
{
	struct mrc_path p;
	if (src == dst || mrc_topo_path(t, src, dst, ev, &p))
		return;
	if (src == self) {
		assert_int_equal(ok ? mrc_health_path_ok(h, dst, ev, now)
				    : mrc_health_path_fail(h, dst, ev, now), 0);
		return;
	}
	struct mrc_health_obs o = { .src = src, .dst = dst, .ev = (uint16_t)ev, .ok = ok };
	uint64_t age = 0;
	assert_true(mrc_health_merge(h, src, &o, &age, 1, now) >= 0);
}

/* Every host's every path at now, as the blackholed link dead
 * (MRC_TOPO_NONE: none) makes it: those across it fail, the rest work. */
static inline void rig_all_paths(struct mrc_health *h, const struct mrc_topo *t, uint32_t self,
				 uint32_t dead, uint64_t now)
{
	for (uint32_t s = 0; s < t->n_hosts; s++)
		for (uint32_t d = 0; d < t->n_hosts; d++)
			for (uint32_t ev = 0; ev < mrc_topo_ev_count(t); ev++)
				rig_see(h, t, self, s, d, ev,
					dead == MRC_TOPO_NONE || !rig_crosses(t, s, d, ev, dead), now);
}

#endif
