/* Link health in mrcsim (sim/health.c, docs/health.md "In mrcsim"): with
 * a leaf-spine link blackholed under a permutation that an all-to-all
 * follows 400 us later, hosts that share
 * their evidence (health=shared) deny the dead link's EVs before sending
 * on them, so fewer hosts ever put a packet onto it than when each host
 * learns alone (health=local); and health unset leaves the report as it
 * was (no "health" line).  Seeded: the seed is in every message. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "sim/sim.h"

#define SEED "7"
#define TOPO { "topo", "clos:planes=1,leaves=4,spines=4,hosts=4,rate=100G,delay=500ns" }

struct figs { unsigned long long pkts, senders, denied, msgs; };

static struct figs run(const char *health)
{
	const char *const kv[][2] = { TOPO, { "workload", "permutation:size=256K" },
		{ "workload", "alltoall:size=64K,start=400us" },
		{ "seed", SEED }, { "fault", "0us:blackhole:p0l1-p0s2" },
		{ "health", health }, { NULL, NULL } };
	struct mrc_sim_cfg c;
	char err[MRC_SIM_ERRLEN];
	mrc_sim_cfg_default(&c);
	for (size_t i = 0; kv[i][0]; i++)
		if (mrc_sim_cfg_set(&c, kv[i][0], kv[i][1], err, sizeof(err)))
			fail_msg("%s %s: %s", kv[i][0], kv[i][1], err);
	struct mrc_sim *s;
	if (mrc_sim_create(&c, &s, err, sizeof(err)) || mrc_sim_run(s, err, sizeof(err)))
		fail_msg("seed %s: %s", SEED, err);
	char *j = NULL;
	assert_int_equal(mrc_sim_report_json(s, 0, &j), 0);
	struct figs f = { 0 };
	const char *h = strstr(j, "\"health\"");
	if (!h || sscanf(strstr(h, "dead_link_pkts"), "dead_link_pkts\": %llu, "
			 "\"dead_link_senders\": %llu", &f.pkts, &f.senders) != 2 ||
	    sscanf(strstr(h, "share_msgs"), "share_msgs\": %llu, \"denied_evs\": %llu",
		   &f.msgs, &f.denied) != 2)
		fail_msg("seed %s: no health figures in %s", SEED, j);
	free(j);
	mrc_sim_destroy(s);
	return f;
}

static void sharing_spares_senders(void **st)
{
	(void)st;
	struct figs l = run("local,2us"), sh = run("shared,2us");
	print_message("seed %s: local %llu pkts from %llu hosts (%llu EVs denied); "
		      "shared %llu pkts from %llu hosts (%llu denied, %llu messages)\n",
		      SEED, l.pkts, l.senders, l.denied, sh.pkts, sh.senders, sh.denied, sh.msgs);
	assert_true(l.senders > 0);
	assert_true(sh.msgs > 0);        /* evidence did travel */
	assert_true(sh.denied > 0);      /* and was acted on */
	assert_true(sh.senders < l.senders);
}

static void unset_reports_nothing(void **st)
{
	(void)st;
	struct mrc_sim_cfg c;
	char err[MRC_SIM_ERRLEN];
	mrc_sim_cfg_default(&c);
	assert_int_equal(mrc_sim_cfg_set(&c, "workload", "permutation:size=64K", err,
					 sizeof(err)), 0);
	struct mrc_sim *s;
	assert_int_equal(mrc_sim_create(&c, &s, err, sizeof(err)), 0);
	assert_int_equal(mrc_sim_run(s, err, sizeof(err)), 0);
	char *j = NULL;
	assert_int_equal(mrc_sim_report_json(s, 0, &j), 0);
	assert_null(strstr(j, "\"health\""));
	free(j);
	mrc_sim_destroy(s);
	assert_int_not_equal(mrc_sim_cfg_set(&c, "health", "global", err, sizeof(err)), 0);
}

int main(void)
{
	const struct CMUnitTest t[] = {
		cmocka_unit_test(sharing_spares_senders),
		cmocka_unit_test(unset_reports_nothing),
	};
	return cmocka_run_group_tests(t, NULL, NULL);
}
