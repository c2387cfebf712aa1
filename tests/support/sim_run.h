/* Test helper: builds and runs an mrcsim scenario from a topology and a
 * workload string with the given seed, failing the cmocka test (seed
 * printed) when either is refused.  Include after <cmocka.h>. */
#ifndef MRC_TESTS_SIM_RUN_H
#define MRC_TESTS_SIM_RUN_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "sim/sim.h"

static inline struct mrc_sim *sim_run_seeded(const char *topo, const char *wl, uint64_t seed)
{
	struct mrc_sim_cfg c;
	char err[MRC_SIM_ERRLEN], sd[32];
	mrc_sim_cfg_default(&c);
	snprintf(sd, sizeof(sd), "%llu", (unsigned long long)seed);
	struct mrc_sim *s = NULL;
	if (mrc_sim_cfg_set(&c, "seed", sd, err, sizeof(err)) ||
	    mrc_sim_cfg_set(&c, "topo", topo, err, sizeof(err)) ||
	    mrc_sim_cfg_set(&c, "workload", wl, err, sizeof(err)) ||
	    mrc_sim_create(&c, &s, err, sizeof(err)) || mrc_sim_run(s, err, sizeof(err))) {
		print_error("%s: %s (seed %llu)\n", wl, err, (unsigned long long)seed);
		fail();
	}
	return s;
}

/* The same from a { key, value } list ending in { NULL, NULL } (mrcsim's
 * settings, seed among them); the seed is named on failure. */
static inline struct mrc_sim *sim_run_kv(const char *const kv[][2])
{
	const char *seed = "?";
	for (size_t i = 0; kv[i][0]; i++)
		if (!strcmp(kv[i][0], "seed"))
			seed = kv[i][1];
	struct mrc_sim_cfg c;
	char err[MRC_SIM_ERRLEN];
	mrc_sim_cfg_default(&c);
	for (size_t i = 0; kv[i][0]; i++)
		if (mrc_sim_cfg_set(&c, kv[i][0], kv[i][1], err, sizeof(err)))
			fail_msg("%s %s: %s (seed %s)", kv[i][0], kv[i][1], err, seed);
	struct mrc_sim *s = NULL;
	if (mrc_sim_create(&c, &s, err, sizeof(err)) || mrc_sim_run(s, err, sizeof(err)))
		fail_msg("seed %s: %s", seed, err);
	return s;
}

#endif
