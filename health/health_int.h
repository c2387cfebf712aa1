/* health/'s internals shared by its files (health.c keeps and judges the
 * observations, export.c reads them out for sharing); nothing outside
 * health/ includes it. */
#ifndef MRC_HEALTH_HEALTH_INT_H
#define MRC_HEALTH_HEALTH_INT_H

#include <stdint.h>

#include "health/health.h"

#define NLINKS (MRC_PATH_MAX_SWITCHES + 1)
#define NO_IDX UINT32_MAX

struct obs {
	struct mrc_health_obs o;
	uint8_t n_links;
	uint32_t links[NLINKS];
	uint8_t covered;        /* eval's greedy cover: explained */
	uint8_t news;           /* a failure, or working since one: exported
	                           first (peers must hear a retraction) */
	uint8_t pardon;         /* own: the retirement at `since` was found
	                           spurious; its re-reports are ignored */
	uint64_t since;         /* own failure: the engine's retirement time */
};

struct link_st {
	/* rebuilt by every eval */
	uint32_t good_paths, fail_paths, fail_hosts, hits, lastrep;
	uint64_t good_max, fail_min;
	uint8_t touched, next;
	/* kept */
	uint8_t state, flagged;
	uint64_t cong, changed;
	uint64_t healed;        /* cleared after a conviction (older: stale) */
};

struct mrc_health {
	const struct mrc_topo *t;
	uint32_t self;
	struct mrc_health_cfg cfg;
	struct obs *obs;
	uint32_t n_obs;
	uint32_t *hash;         /* open addressing, obs index or NO_IDX */
	uint32_t hash_mask;
	struct link_st *ls;
	uint32_t *touched;      /* links touched by this eval */
	uint32_t n_touched;
	uint32_t *flagged;      /* links not OK after the last eval */
	uint32_t n_flagged;
	uint32_t *order;        /* failed obs by src */
};

#endif
