/* Fabric model: the generator's structure, path enumeration and EV
 * numbering, reverse symmetry, "which EVs cross this link/switch", partial
 * fabrics from files, the JSON round trip, the example files, and the 3-tier
 * fat tree.
 * Randomised checks print their seed; MRC_TEST_SEED=<n> replays a run. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "tests/support/seeded.h"
#include "topology/addr.h"
#include "topology/topo.h"

static uint32_t below(uint32_t n)
{
	return (uint32_t)(rnd() % n);
}

static struct mrc_topo *gen(uint32_t P, uint32_t L, uint32_t S, uint32_t H)
{
	struct mrc_topo_gen g = { .planes = P, .leaves_per_plane = L,
		.spines_per_plane = S, .hosts_per_leaf = H };
	struct mrc_topo *t = NULL;
	char err[MRC_TOPO_ERRLEN] = "";
	int rc = mrc_topo_generate(&g, &t, err, sizeof(err));
	if (rc)
		fail_msg("generate %ux%ux%ux%u: %s", P, L, S, H, err);
	return t;
}

static uint32_t node(const struct mrc_topo *t, const char *name)
{
	uint32_t id;
	if (mrc_topo_node_find(t, name, &id))
		fail_msg("no node %s", name);
	return id;
}

static void test_generate_structure(void **state)
{
	(void)state;
	const uint32_t P = 2, L = 4, S = 2, H = 2;
	struct mrc_topo *t = gen(P, L, S, H);
	assert_int_equal(t->planes, P);
	assert_int_equal(t->n_hosts, L * H);
	assert_int_equal(t->n_nodes, L * H + P * (L + S));
	assert_int_equal(t->n_links, L * H * P + P * L * S);
	assert_int_equal(t->n_spine_evs, P * S);
	assert_int_equal(mrc_topo_ev_count(t), P * S + P);
	for (uint32_t h = 0; h < L * H; h++) {
		char name[16];
		snprintf(name, sizeof(name), "h%u", h);
		uint32_t hi;
		assert_int_equal(mrc_topo_host_find(t, name, &hi), 0);
		assert_int_equal(hi, h);
		assert_int_equal(t->nodes[t->hosts[h]].usid, MRC_USID_GEN_HOST(h));
		for (uint32_t p = 0; p < P; p++) {
			const struct mrc_node *leaf = &t->nodes[mrc_topo_host_leaf(t, h, p)];
			assert_int_equal(leaf->tier, MRC_TIER_LEAF);
			assert_int_equal(leaf->plane, p);
			assert_int_equal(leaf->index, h / H);
			assert_int_equal(leaf->usid, MRC_USID_GEN_LEAF(p, h / H));
		}
	}
	for (uint32_t p = 0; p < P; p++)
		for (uint32_t s = 0; s < S; s++) {
			char name[16];
			snprintf(name, sizeof(name), "p%us%u", p, s);
			const struct mrc_node *n = &t->nodes[node(t, name)];
			assert_int_equal(n->tier, MRC_TIER_SPINE);
			assert_int_equal(n->usid, MRC_USID_GEN_SPINE(p, s));
			assert_int_equal(t->spines[p][s], node(t, name));
		}
	uint32_t link;
	assert_int_equal(mrc_topo_link_find(t, node(t, "p1s1"), node(t, "p1l3"), &link), 0);
	assert_int_equal(t->links[link].lower, node(t, "p1l3"));
	assert_int_equal(mrc_topo_link_find(t, node(t, "h5"), node(t, "p0l2"), &link), 0);
	assert_int_equal(mrc_topo_link_find(t, node(t, "h5"), node(t, "p0l1"), &link), -ENOENT);
	assert_int_equal(mrc_topo_link_find(t, node(t, "p0l0"), node(t, "p1s0"), &link), -ENOENT);
	assert_int_equal(mrc_topo_host_find(t, "p0l0", &link), -ENOENT);
	assert_int_equal(mrc_topo_node_find(t, "nope", &link), -ENOENT);
	mrc_topo_free(t);
}

/* A host by name or by decimal index (mrcd --host, mrcctl, mrc-xfer):
 * nothing else that strtoul would take passes. */
static void test_host_lookup(void **state)
{
	(void)state;
	struct mrc_topo *t = gen(2, 4, 2, 2);   /* 8 hosts */
	uint32_t h = 99;
	assert_int_equal(mrc_topo_host_lookup(t, "h5", &h), 0);
	assert_int_equal(h, 5);
	assert_int_equal(mrc_topo_host_lookup(t, "7", &h), 0);
	assert_int_equal(h, 7);
	assert_int_equal(mrc_topo_host_lookup(t, "0", &h), 0);
	assert_int_equal(h, 0);
	static const char *const bad[] = { "", "8", "p0l0", "p1s1", " 1", "+1", "-1", "1x", "0x1",
		"4294967296", "18446744073709551617", "99999999999" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		h = 99;
		if (mrc_topo_host_lookup(t, bad[i], &h) != -ENOENT || h != 99)
			fail_msg("'%s' was taken as host %u", bad[i], h);
	}
	mrc_topo_free(t);
}

/* Checks one path against the model: consecutive links join consecutive
 * nodes, the uSIDs are the switches' then the destination's, and the EV
 * decodes to the path's plane and spine. */
static void check_path(const struct mrc_topo *t, uint32_t a, uint32_t b,
		       const struct mrc_path *p)
{
	uint32_t hops[MRC_PATH_MAX_SWITCHES + 2], n = 0;
	hops[n++] = t->hosts[a];
	for (unsigned i = 0; i < p->n_switches; i++)
		hops[n++] = p->switches[i];
	hops[n++] = t->hosts[b];
	CHECK(p->n_links == n - 1, "ev %u: %u links for %u nodes", p->ev, p->n_links, n);
	for (unsigned i = 0; i < p->n_links; i++) {
		const struct mrc_link *l = &t->links[p->links[i]];
		CHECK((l->lower == hops[i] && l->upper == hops[i + 1]) ||
		      (l->upper == hops[i] && l->lower == hops[i + 1]),
		      "ev %u: link %u does not join hop %u and %u", p->ev, i, i, i + 1);
		CHECK(l->plane == p->plane, "ev %u: link in plane %u", p->ev, l->plane);
	}
	CHECK(p->n_usids == p->n_switches + 1, "ev %u: %u usids", p->ev, p->n_usids);
	for (unsigned i = 0; i < p->n_usids; i++)
		CHECK(p->usids[i] == t->nodes[hops[i + 1]].usid, "ev %u: usid %u", p->ev, i);
	uint32_t plane, spine;
	CHECK(mrc_topo_ev_decode(t, p->ev, &plane, &spine) == 0, "ev %u decodes", p->ev);
	CHECK(plane == p->plane && spine == p->spine, "ev %u decodes to %u/%u", p->ev, plane, spine);
	CHECK(p->switches[0] == mrc_topo_host_leaf(t, a, plane),
	      "ev %u: first switch is not the source leaf", p->ev);
	CHECK(p->switches[p->n_switches - 1] == mrc_topo_host_leaf(t, b, plane),
	      "ev %u: last switch is not the destination leaf", p->ev);
	if (spine == MRC_PATH_SPINE_DIRECT) {
		CHECK(p->n_switches == 1, "direct ev %u crosses %u switches", p->ev, p->n_switches);
	} else {
		CHECK(p->n_switches == 3, "ev %u crosses %u switches", p->ev, p->n_switches);
		CHECK(p->switches[1] == t->spines[plane][spine], "ev %u: wrong spine", p->ev);
	}
}

static void test_paths_between_leaves(void **state)
{
	(void)state;
	const uint32_t P = 2, L = 4, S = 2, H = 2;
	struct mrc_topo *t = gen(P, L, S, H);
	struct mrc_path paths[32];
	size_t n;
	uint32_t a = 0, b = L * H - 1;  /* first and last leaf */
	assert_int_equal(mrc_topo_paths(t, a, b, paths, 32, &n), 0);
	assert_int_equal(n, P * S);
	for (size_t i = 0; i < n; i++) {
		uint32_t p = (uint32_t)i / S, s = (uint32_t)i % S;
		assert_int_equal(paths[i].ev, p * S + s);
		assert_int_equal(paths[i].plane, p);
		assert_int_equal(paths[i].spine, s);
		assert_int_equal(paths[i].switches[0], mrc_topo_host_leaf(t, a, p));
		assert_int_equal(paths[i].switches[2], mrc_topo_host_leaf(t, b, p));
		check_path(t, a, b, &paths[i]);
	}
	struct mrc_path one;
	assert_int_equal(mrc_topo_path(t, a, b, mrc_topo_ev_of(t, 0, MRC_PATH_SPINE_DIRECT), &one),
			 -ENOENT);
	assert_int_equal(mrc_topo_path(t, a, a, 0, &one), -EINVAL);
	assert_int_equal(mrc_topo_path(t, a, b, mrc_topo_ev_count(t), &one), -EINVAL);
	assert_int_equal(mrc_topo_path(t, a, L * H, 0, &one), -EINVAL);
	/* Too little room: the count is still right. */
	assert_int_equal(mrc_topo_paths(t, a, b, paths, 1, &n), -ENOSPC);
	assert_int_equal(n, P * S);
	mrc_topo_free(t);
}

static void test_paths_same_leaf(void **state)
{
	(void)state;
	const uint32_t P = 3, L = 2, S = 2, H = 3;
	struct mrc_topo *t = gen(P, L, S, H);
	struct mrc_path paths[32];
	size_t n;
	assert_int_equal(mrc_topo_paths(t, 1, 2, paths, 32, &n), 0);
	assert_int_equal(n, P * S + P);
	for (size_t i = 0; i < n; i++)
		check_path(t, 1, 2, &paths[i]);
	for (uint32_t p = 0; p < P; p++) {
		const struct mrc_path *d = &paths[P * S + p];
		assert_int_equal(d->ev, mrc_topo_ev_count(t) - P + p);
		assert_int_equal(d->spine, MRC_PATH_SPINE_DIRECT);
		assert_int_equal(d->plane, p);
		assert_int_equal(d->switches[0], mrc_topo_host_leaf(t, 1, p));
		/* Spine paths of same-leaf hosts go up and come back down. */
		const struct mrc_path *up = &paths[p * S];
		assert_int_equal(up->switches[0], up->switches[2]);
	}
	mrc_topo_free(t);
}

/* mrc_topo_path_links gives mrc_topo_path's links, or its error. */
static void check_links(const struct mrc_topo *t, uint32_t a, uint32_t b, uint32_t ev,
			int rc, const struct mrc_path *p)
{
	uint32_t l[MRC_PATH_MAX_SWITCHES + 1];
	int n = mrc_topo_path_links(t, a, b, ev, l);
	CHECK(n == (rc ? rc : p->n_links), "h%u->h%u ev %u: %d links, path %d", a, b, ev, n, rc);
	for (int i = 0; i < n; i++)
		CHECK(l[i] == p->links[i], "h%u->h%u ev %u: link %d", a, b, ev, i);
}

/* For every pair and EV: the reverse pair has the same EV, over the same
 * plane and spine, through the same switches in reverse order. */
static void check_symmetry(const struct mrc_topo *t)
{
	for (uint32_t a = 0; a < t->n_hosts; a++)
		for (uint32_t b = 0; b < t->n_hosts; b++) {
			if (a == b)
				continue;
			for (uint32_t ev = 0; ev < mrc_topo_ev_count(t); ev++) {
				struct mrc_path f, r;
				int rf = mrc_topo_path(t, a, b, ev, &f);
				int rr = mrc_topo_path(t, b, a, ev, &r);
				CHECK(rf == rr, "h%u->h%u ev %u: %d but reverse %d", a, b, ev, rf, rr);
				check_links(t, a, b, ev, rf, &f);
				if (rf)
					continue;
				check_path(t, a, b, &f);
				CHECK(f.plane == r.plane && f.spine == r.spine, "ev %u", ev);
				CHECK(f.n_switches == r.n_switches, "ev %u", ev);
				for (unsigned i = 0; i < f.n_switches; i++)
					CHECK(f.switches[i] == r.switches[f.n_switches - 1 - i],
					      "h%u<->h%u ev %u switch %u", a, b, ev, i);
			}
		}
}

static void test_ev_numbering_and_symmetry(void **state)
{
	(void)state;
	for (int round = 0; round < 20; round++) {
		uint32_t P = 1 + below(4), L = 1 + below(4), S = 1 + below(4), H = 1 + below(3);
		struct mrc_topo *t = gen(P, L, S, H);
		for (uint32_t ev = 0; ev < mrc_topo_ev_count(t); ev++) {
			uint32_t p, s;
			CHECK(mrc_topo_ev_decode(t, ev, &p, &s) == 0, "decode %u", ev);
			CHECK(mrc_topo_ev_of(t, p, s) == (int)ev, "ev_of(decode(%u))", ev);
			if (s != MRC_PATH_SPINE_DIRECT)
				CHECK(ev == p * S + s, "regular fabric: ev %u is not %u*%u+%u", ev, p, S, s);
		}
		CHECK(mrc_topo_ev_of(t, P, 0) == -EINVAL, "plane out of range");
		CHECK(mrc_topo_ev_of(t, 0, S) == -EINVAL, "spine out of range");
		check_symmetry(t);
		mrc_topo_free(t);
	}
}

static int has(const uint16_t *evs, size_t n, uint32_t ev)
{
	for (size_t i = 0; i < n; i++)
		if (evs[i] == ev)
			return 1;
	return 0;
}

/* Expected sets come from the structure, not from the enumeration: a
 * host link of plane p carries every EV of p; a leaf-spine link (l, s)
 * carries EV(p, s) iff one of the hosts sits on l; a spine carries its own
 * EV; a leaf carries every EV of its plane if one of the hosts sits on it. */
static void test_crossing_queries(void **state)
{
	(void)state;
	for (int round = 0; round < 30; round++) {
		uint32_t P = 1 + below(3), L = 1 + below(4), S = 1 + below(3), H = 1 + below(3);
		struct mrc_topo *t = gen(P, L, S, H);
		if (t->n_hosts < 2) {
			mrc_topo_free(t);
			continue;
		}
		uint32_t a = below(t->n_hosts), b;
		do
			b = below(t->n_hosts);
		while (b == a);
		uint16_t evs[64];
		size_t n;
		for (uint32_t li = 0; li < t->n_links; li++) {
			const struct mrc_link *l = &t->links[li];
			CHECK(mrc_topo_evs_crossing_link(t, a, b, li, evs, 64, &n) == 0, "link %u", li);
			const struct mrc_node *lo = &t->nodes[l->lower], *up = &t->nodes[l->upper];
			for (uint32_t ev = 0; ev < mrc_topo_ev_count(t); ev++) {
				uint32_t p, s;
				mrc_topo_ev_decode(t, ev, &p, &s);
				uint32_t la = mrc_topo_host_leaf(t, a, p), lb = mrc_topo_host_leaf(t, b, p);
				int exists = s != MRC_PATH_SPINE_DIRECT || la == lb;
				int want;
				if (lo->tier == MRC_TIER_HOST)
					want = exists && l->plane == p &&
					       (l->lower == t->hosts[a] || l->lower == t->hosts[b]);
				else
					want = exists && l->plane == p && s == up->index &&
					       (l->lower == la || l->lower == lb);
				CHECK(has(evs, n, ev) == want, "h%u->h%u link %s-%s ev %u: got %d want %d",
				      a, b, lo->name, up->name, ev, !want, want);
			}
		}
		for (uint32_t id = 0; id < t->n_nodes; id++) {
			const struct mrc_node *x = &t->nodes[id];
			CHECK(mrc_topo_evs_crossing_node(t, a, b, id, evs, 64, &n) == 0, "node %u", id);
			for (uint32_t ev = 0; ev < mrc_topo_ev_count(t); ev++) {
				uint32_t p, s;
				mrc_topo_ev_decode(t, ev, &p, &s);
				uint32_t la = mrc_topo_host_leaf(t, a, p), lb = mrc_topo_host_leaf(t, b, p);
				int exists = s != MRC_PATH_SPINE_DIRECT || la == lb;
				int want;
				if (x->tier == MRC_TIER_HOST)
					want = exists && (id == t->hosts[a] || id == t->hosts[b]);
				else if (x->tier == MRC_TIER_LEAF)
					want = exists && (id == la || id == lb);
				else
					want = exists && x->plane == p && x->index == s;
				CHECK(has(evs, n, ev) == want, "h%u->h%u node %s ev %u: got %d want %d",
				      a, b, x->name, ev, !want, want);
			}
		}
		CHECK(mrc_topo_evs_crossing_link(t, a, b, t->n_links, evs, 64, &n) == -EINVAL, "bad link");
		CHECK(mrc_topo_evs_crossing_node(t, a, b, t->n_nodes, evs, 64, &n) == -EINVAL, "bad node");
		mrc_topo_free(t);
	}
}

/* An irregular fabric: leaf p0l1 has no link to spine p0s1, so EV (0, 1)
 * is missing for pairs that need p0l1, in both directions, and only there. */
static const char partial[] =
	"{\"version\":1,\"planes\":1,\"mtu\":1500,\"rate_mbit\":100,"
	"\"hosts\":[{\"name\":\"a\",\"usid\":\"0x8000\"},{\"name\":\"b\",\"usid\":32769},"
	"{\"name\":\"c\",\"usid\":\"0x8002\"}],"
	"\"switches\":[{\"name\":\"p0l0\",\"tier\":\"leaf\",\"plane\":0,\"usid\":\"0x1000\"},"
	"{\"name\":\"p0l1\",\"tier\":\"leaf\",\"plane\":0,\"usid\":\"0x1001\"},"
	"{\"name\":\"p0s0\",\"tier\":\"spine\",\"plane\":0,\"usid\":\"0x2000\"},"
	"{\"name\":\"p0s1\",\"tier\":\"spine\",\"plane\":0,\"usid\":\"0x2001\"}],"
	"\"links\":[{\"a\":\"a\",\"b\":\"p0l0\"},{\"a\":\"p0l0\",\"b\":\"b\",\"mtu\":9000},"
	"{\"a\":\"c\",\"b\":\"p0l1\"},{\"a\":\"p0l0\",\"b\":\"p0s0\"},"
	"{\"a\":\"p0s1\",\"b\":\"p0l0\",\"rate_mbit\":0},{\"a\":\"p0l1\",\"b\":\"p0s0\"}]}";

static void test_partial_fabric_from_file(void **state)
{
	(void)state;
	struct mrc_topo *t = NULL;
	char err[MRC_TOPO_ERRLEN] = "";
	int rc = mrc_topo_parse_json(partial, sizeof(partial) - 1, &t, err, sizeof(err));
	if (rc)
		fail_msg("parse: %s", err);
	assert_int_equal(t->n_hosts, 3);
	assert_int_equal(mrc_topo_ev_count(t), 3);
	assert_int_equal(t->links[1].lower, node(t, "b"));  /* ends normalised */
	assert_int_equal(t->links[1].mtu, 9000);
	assert_int_equal(t->links[0].mtu, 1500);
	assert_int_equal(t->links[0].rate_mbit, 100);
	assert_int_equal(t->links[4].rate_mbit, 0);
	assert_int_equal(t->nodes[node(t, "b")].usid, 0x8001);
	struct mrc_path p;
	uint32_t a, b, c;
	mrc_topo_host_find(t, "a", &a);
	mrc_topo_host_find(t, "b", &b);
	mrc_topo_host_find(t, "c", &c);
	/* a, b share p0l0: both spines and the direct path. */
	assert_int_equal(mrc_topo_path(t, a, b, 0, &p), 0);
	assert_int_equal(mrc_topo_path(t, a, b, 1, &p), 0);
	assert_int_equal(mrc_topo_path(t, a, b, 2, &p), 0);
	/* a -> c needs p0l1-p0s1 for EV 1, which is missing. */
	assert_int_equal(mrc_topo_path(t, a, c, 0, &p), 0);
	assert_int_equal(mrc_topo_path(t, a, c, 1, &p), -ENOENT);
	assert_int_equal(mrc_topo_path(t, c, a, 1, &p), -ENOENT);
	assert_int_equal(mrc_topo_path(t, a, c, 2, &p), -ENOENT);
	check_symmetry(t);
	mrc_topo_free(t);
}

static void same_topo(const struct mrc_topo *x, const struct mrc_topo *y)
{
	assert_int_equal(x->planes, y->planes);
	assert_int_equal(x->block_bits, y->block_bits);
	assert_memory_equal(&x->block, &y->block, sizeof(x->block));
	assert_int_equal(x->n_nodes, y->n_nodes);
	assert_int_equal(x->n_links, y->n_links);
	for (uint32_t i = 0; i < x->n_nodes; i++) {
		assert_string_equal(x->nodes[i].name, y->nodes[i].name);
		assert_int_equal(x->nodes[i].tier, y->nodes[i].tier);
		assert_int_equal(x->nodes[i].plane, y->nodes[i].plane);
		assert_int_equal(x->nodes[i].usid, y->nodes[i].usid);
		assert_int_equal(x->nodes[i].index, y->nodes[i].index);
	}
	for (uint32_t i = 0; i < x->n_links; i++)
		assert_memory_equal(&x->links[i], &y->links[i], sizeof(x->links[i]));
}

static void test_json_round_trip(void **state)
{
	(void)state;
	struct mrc_topo_gen g = { .planes = 3, .leaves_per_plane = 3, .spines_per_plane = 2,
		.hosts_per_leaf = 2, .mtu = 4000, .rate_mbit = 250, .block = "fc00:1:2::/48" };
	struct mrc_topo *t = NULL, *u = NULL;
	char err[MRC_TOPO_ERRLEN] = "", *text = NULL;
	assert_int_equal(mrc_topo_generate(&g, &t, err, sizeof(err)), 0);
	assert_int_equal(t->block_bits, 48);
	assert_int_equal(mrc_topo_to_json(t, &text), 0);
	if (mrc_topo_parse_json(text, strlen(text), &u, err, sizeof(err)))
		fail_msg("re-parse: %s\n%s", err, text);
	same_topo(t, u);
	free(text);
	mrc_topo_free(u);
	mrc_topo_free(t);
}

/* The generate form in a file equals mrc_topo_generate with its numbers. */
static void test_generate_form_in_file(void **state)
{
	(void)state;
	static const char f[] = "{\"version\":1,\"mtu\":1500,\"generate\":{\"planes\":2,"
		"\"leaves_per_plane\":3,\"spines_per_plane\":4,\"hosts_per_leaf\":5}}";
	struct mrc_topo *t = NULL, *u;
	char err[MRC_TOPO_ERRLEN] = "";
	if (mrc_topo_parse_json(f, sizeof(f) - 1, &t, err, sizeof(err)))
		fail_msg("%s", err);
	struct mrc_topo_gen g = { .planes = 2, .leaves_per_plane = 3, .spines_per_plane = 4,
		.hosts_per_leaf = 5, .mtu = 1500 };
	assert_int_equal(mrc_topo_generate(&g, &u, err, sizeof(err)), 0);
	same_topo(t, u);
	mrc_topo_free(t);
	mrc_topo_free(u);
}

/* The committed example files parse and have the documented shape. */
static void test_example_files(void **state)
{
	(void)state;
	static const struct { const char *path; uint32_t planes, hosts, evs; } ex[] = {
		{ "examples/topologies/fabric-2p-8h.json", 2, 8, 2 * 2 + 2 },
		{ "examples/topologies/fabric-2p-16h.json", 2, 16, 2 * 4 + 2 },
		{ "examples/topologies/small-explicit.json", 2, 3, 2 * 1 + 2 },
	};
	for (size_t i = 0; i < sizeof(ex) / sizeof(ex[0]); i++) {
		struct mrc_topo *t = NULL;
		char err[MRC_TOPO_ERRLEN] = "";
		if (mrc_topo_load(ex[i].path, &t, err, sizeof(err)))
			fail_msg("%s", err);
		assert_int_equal(t->planes, ex[i].planes);
		assert_int_equal(t->n_hosts, ex[i].hosts);
		assert_int_equal(mrc_topo_ev_count(t), ex[i].evs);
		mrc_topo_free(t);
	}
	struct mrc_topo *t = NULL;
	char err[MRC_TOPO_ERRLEN] = "";
	assert_int_equal(mrc_topo_load("examples/topologies/no-such-file.json", &t, err,
				       sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "no-such-file.json"));
	assert_null(t);
}

/* The 3-tier fat tree: structure, names and links as topo.h lays them
 * out, and for every pair and EV a connected up-down path that climbs only
 * as high as the pair needs, through the EV's core between pods; reverse
 * paths mirror; EVs that cross a core are exactly that core's. */
static void test_fattree(void **state)
{
	(void)state;
	const uint32_t k = 4, half = 2, P = 2, C = half * half;
	struct mrc_topo_fattree g = { .k = k, .planes = P };
	struct mrc_topo *t = NULL;
	char err[MRC_TOPO_ERRLEN] = "";
	if (mrc_topo_generate_fattree(&g, &t, err, sizeof(err)))
		fail_msg("fattree: %s", err);
	assert_int_equal(t->fattree_k, k);
	assert_int_equal(t->n_hosts, k * half * half);
	assert_int_equal(t->n_nodes, 16 + P * (8 + 8 + 4));
	assert_int_equal(t->n_links, P * (16 + 16 + 16));
	assert_int_equal(mrc_topo_ev_count(t), P * C);
	for (uint32_t p = 0; p < P; p++) {
		assert_int_equal(t->n_leaves[p], k * half);
		assert_int_equal(t->n_spines[p], k * half);
		assert_int_equal(t->n_cores[p], C);
	}
	const struct mrc_node *c = &t->nodes[node(t, "p1c3")];
	assert_int_equal(c->tier, MRC_TIER_CORE);
	assert_int_equal(c->plane, 1);
	assert_int_equal(c->index, 3);
	assert_string_equal(mrc_topo_tier_name(c->tier), "core");
	assert_int_equal(t->nodes[node(t, "p0e5")].tier, MRC_TIER_LEAF);
	assert_int_equal(t->nodes[node(t, "p0a2")].tier, MRC_TIER_SPINE);
	uint32_t link;
	assert_int_equal(mrc_topo_link_find(t, node(t, "h3"), node(t, "p0e1"), &link), 0);
	assert_int_equal(mrc_topo_link_find(t, node(t, "p0e0"), node(t, "p0a1"), &link), 0);
	assert_int_equal(mrc_topo_link_find(t, node(t, "p0e0"), node(t, "p0a2"), &link), -ENOENT);
	/* aggregation switch 2 = pod 1, column 0: cores 0 and 1 */
	assert_int_equal(mrc_topo_link_find(t, node(t, "p0c1"), node(t, "p0a2"), &link), 0);
	assert_int_equal(mrc_topo_link_find(t, node(t, "p0a2"), node(t, "p0c2"), &link), -ENOENT);
	assert_int_equal(mrc_topo_link_find(t, node(t, "p0a2"), node(t, "p1c1"), &link), -ENOENT);
	assert_int_equal(mrc_topo_ev_of(t, 1, 3), (int)(C + 3));
	assert_int_equal(mrc_topo_ev_of(t, 0, MRC_PATH_SPINE_DIRECT), -EINVAL);
	assert_int_equal(mrc_topo_ev_of(t, 0, C), -EINVAL);

	for (uint32_t a = 0; a < t->n_hosts; a++)
		for (uint32_t b = 0; b < t->n_hosts; b++) {
			if (a == b)
				continue;
			uint32_t want = a / half == b / half ? 1 : a / (half * half) == b / (half * half) ? 3 : 5;
			for (uint32_t ev = 0; ev < P * C; ev++) {
				struct mrc_path f, r;
				CHECK(mrc_topo_path(t, a, b, ev, &f) == 0, "h%u->h%u ev %u", a, b, ev);
				check_links(t, a, b, ev, 0, &f);
				CHECK(mrc_topo_path(t, b, a, ev, &r) == 0, "h%u->h%u ev %u", b, a, ev);
				CHECK(f.plane == ev / C && f.spine == ev % C, "ev %u: %u/%u", ev, f.plane, f.spine);
				CHECK(f.n_switches == want, "h%u->h%u ev %u: %u switches", a, b, ev, f.n_switches);
				uint32_t hops[MRC_PATH_MAX_SWITCHES + 2], n = 0;
				hops[n++] = t->hosts[a];
				for (unsigned i = 0; i < f.n_switches; i++)
					hops[n++] = f.switches[i];
				hops[n++] = t->hosts[b];
				CHECK(f.n_links == n - 1, "ev %u: %u links", ev, f.n_links);
				for (unsigned i = 0; i < f.n_links; i++) {
					const struct mrc_link *l = &t->links[f.links[i]];
					/* the first half climbs, the second descends */
					uint32_t lo = i < f.n_links / 2u ? hops[i] : hops[i + 1];
					uint32_t up = i < f.n_links / 2u ? hops[i + 1] : hops[i];
					CHECK(l->lower == lo && l->upper == up && l->plane == f.plane,
					      "h%u->h%u ev %u: link %u", a, b, ev, i);
				}
				CHECK(f.n_usids == f.n_switches + 1, "ev %u", ev);
				for (unsigned i = 0; i < f.n_usids; i++)
					CHECK(f.usids[i] == t->nodes[hops[i + 1]].usid, "ev %u usid %u", ev, i);
				if (want == 5)
					CHECK(f.switches[2] == t->cores[f.plane][ev % C], "ev %u: core", ev);
				if (want >= 3)
					CHECK(t->nodes[f.switches[1]].index % half == ev % C / half,
					      "ev %u: aggregation column", ev);
				CHECK(r.n_switches == f.n_switches, "ev %u reverse", ev);
				for (unsigned i = 0; i < f.n_switches; i++)
					CHECK(f.switches[i] == r.switches[f.n_switches - 1 - i],
					      "h%u<->h%u ev %u switch %u", a, b, ev, i);
			}
		}
	uint16_t evs[16];
	size_t n;
	assert_int_equal(mrc_topo_evs_crossing_node(t, 0, 15, node(t, "p1c2"), evs, 16, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(evs[0], C + 2);
	assert_int_equal(mrc_topo_evs_crossing_node(t, 0, 3, node(t, "p1c2"), evs, 16, &n), 0);
	assert_int_equal(n, 0);
	char *text = NULL;
	assert_int_equal(mrc_topo_to_json(t, &text), -EOPNOTSUPP);
	mrc_topo_free(t);

	uint32_t bad[] = { 0, 3, MRC_TOPO_FATTREE_K_MAX + 2 };
	for (unsigned i = 0; i < 3; i++) {
		struct mrc_topo_fattree b = { .k = bad[i], .planes = 1 };
		t = NULL;
		assert_int_equal(mrc_topo_generate_fattree(&b, &t, err, sizeof(err)), -EINVAL);
		assert_null(t);
		assert_non_null(strstr(err, "must be even"));
	}
	struct mrc_topo_fattree many = { .k = 48, .planes = 16 };
	assert_int_equal(mrc_topo_generate_fattree(&many, &t, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "uSIDs"));
}

int main(void)
{
	seed_init("test_topology");
	g_rng = g_seed;            /* one stream for the whole run */
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_generate_structure),
		cmocka_unit_test(test_host_lookup),
		cmocka_unit_test(test_paths_between_leaves),
		cmocka_unit_test(test_paths_same_leaf),
		cmocka_unit_test(test_ev_numbering_and_symmetry),
		cmocka_unit_test(test_crossing_queries),
		cmocka_unit_test(test_partial_fabric_from_file),
		cmocka_unit_test(test_json_round_trip),
		cmocka_unit_test(test_generate_form_in_file),
		cmocka_unit_test(test_example_files),
		cmocka_unit_test(test_fattree),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
