/* mrc_topo_spray_slot (mrce_cfg.spray_slot, docs/sim.md "Spray slots"):
 * on generated Clos fabrics and fat trees, the hosts under one leaf (pod)
 * get the slots 1..n, each once, and slot - 1 is the host's index there
 * (what mrcsim computed before the function moved to topology/); in a
 * topology file that interleaves leaves, slots count per leaf. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "topology/topo.h"

/* Every group (leaf or pod, by group()) holds n hosts whose slots are a
 * permutation of 1..n. */
static void check_groups(const struct mrc_topo *t, uint32_t n,
			 uint32_t (*group)(const struct mrc_topo *, uint32_t, uint32_t))
{
	uint32_t ngroups = t->n_hosts / n;
	uint8_t *seen = calloc((size_t)ngroups * n, 1);
	assert_non_null(seen);
	for (uint32_t h = 0; h < t->n_hosts; h++) {
		uint32_t s = mrc_topo_spray_slot(t, h), g = group(t, h, n);
		assert_true(s >= 1 && s <= n);
		assert_true(g < ngroups);
		assert_int_equal(seen[(size_t)g * n + s - 1], 0);
		seen[(size_t)g * n + s - 1] = 1;
		assert_int_equal(s - 1, h % n);
	}
	assert_int_equal(mrc_topo_spray_slot(t, t->n_hosts), 0);
	free(seen);
}

static uint32_t leaf_of(const struct mrc_topo *t, uint32_t h, uint32_t n)
{
	(void)n;
	return t->nodes[mrc_topo_host_leaf(t, h, 0)].index;
}

static uint32_t pod_of(const struct mrc_topo *t, uint32_t h, uint32_t n)
{
	(void)n;
	return t->nodes[mrc_topo_host_leaf(t, h, 0)].index / (t->fattree_k / 2);
}

static void spray_slots_distinct_per_leaf_and_pod(void **state)
{
	(void)state;
	static const uint32_t clos[][4] = {   /* planes, leaves, spines, hosts/leaf */
		{ 1, 1, 1, 1 }, { 2, 4, 2, 2 }, { 8, 8, 8, 8 }, { 4, 32, 16, 32 },
		{ 16, 3, 5, 7 },
	};
	char err[MRC_TOPO_ERRLEN] = "";
	for (size_t i = 0; i < sizeof(clos) / sizeof(clos[0]); i++) {
		struct mrc_topo_gen g = { .planes = clos[i][0], .leaves_per_plane = clos[i][1],
			.spines_per_plane = clos[i][2], .hosts_per_leaf = clos[i][3] };
		struct mrc_topo *t = NULL;
		if (mrc_topo_generate(&g, &t, err, sizeof(err)))
			fail_msg("clos %zu: %s", i, err);
		check_groups(t, clos[i][3], leaf_of);
		mrc_topo_free(t);
	}
	static const uint32_t ks[] = { 2, 4, 8, 12 };
	for (size_t i = 0; i < sizeof(ks) / sizeof(ks[0]); i++) {
		struct mrc_topo_fattree g = { .k = ks[i], .planes = 2 };
		struct mrc_topo *t = NULL;
		if (mrc_topo_generate_fattree(&g, &t, err, sizeof(err)))
			fail_msg("fat tree k=%u: %s", ks[i], err);
		/* The pod's hosts, not the edge's: (k/2)^2 slots. */
		check_groups(t, ks[i] / 2 * (ks[i] / 2), pod_of);
		mrc_topo_free(t);
	}
}

/* A topology file may interleave leaves: a and c on p0l1, b on p0l0 get
 * 1, 1, 2 (counted in host order, not host % hosts per leaf). */
static const char interleaved[] =
	"{\"version\":1,\"planes\":1,"
	"\"hosts\":[{\"name\":\"a\",\"usid\":\"0x8000\"},{\"name\":\"b\",\"usid\":\"0x8001\"},"
	"{\"name\":\"c\",\"usid\":\"0x8002\"}],"
	"\"switches\":[{\"name\":\"p0l0\",\"tier\":\"leaf\",\"plane\":0,\"usid\":\"0x1000\"},"
	"{\"name\":\"p0l1\",\"tier\":\"leaf\",\"plane\":0,\"usid\":\"0x1001\"},"
	"{\"name\":\"p0s0\",\"tier\":\"spine\",\"plane\":0,\"usid\":\"0x2000\"}],"
	"\"links\":[{\"a\":\"a\",\"b\":\"p0l1\"},{\"a\":\"b\",\"b\":\"p0l0\"},"
	"{\"a\":\"c\",\"b\":\"p0l1\"},{\"a\":\"p0l0\",\"b\":\"p0s0\"},"
	"{\"a\":\"p0l1\",\"b\":\"p0s0\"}]}";

static void spray_slots_from_file_count_per_leaf(void **state)
{
	(void)state;
	struct mrc_topo *t = NULL;
	char err[MRC_TOPO_ERRLEN] = "";
	if (mrc_topo_parse_json(interleaved, sizeof(interleaved) - 1, &t, err, sizeof(err)))
		fail_msg("parse: %s", err);
	static const char *const name[] = { "a", "b", "c" };
	static const uint32_t want[] = { 1, 1, 2 };
	for (int i = 0; i < 3; i++) {
		uint32_t h;
		assert_int_equal(mrc_topo_host_find(t, name[i], &h), 0);
		assert_int_equal(mrc_topo_spray_slot(t, h), want[i]);
	}
	mrc_topo_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(spray_slots_distinct_per_leaf_and_pod),
		cmocka_unit_test(spray_slots_from_file_count_per_leaf),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
