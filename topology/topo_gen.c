/* The compact generator forms: a regular multi-plane Clos from four
 * numbers, and a k-ary fat tree. */
#include <errno.h>
#include <stdio.h>

#include "topology/addr.h"
#include "topology/topo_int.h"

static int range(char *err, size_t errlen, const char *field, uint32_t v,
		 uint32_t lo, uint32_t hi)
{
	if (v < lo || v > hi)
		return mrc__topo_err(err, errlen, "generate.%s: %u is not in %u..%u",
				     field, v, lo, hi);
	return 0;
}

/* What both forms share: MTU, rate and locator block of every link. */
static int link_args(uint32_t *mtu, uint32_t rate_mbit, const char *block,
		     struct in6_addr *a, uint8_t *bits, char *err, size_t errlen)
{
	if (!*mtu)
		*mtu = MRC_TOPO_MTU_DEFAULT;
	if (*mtu < MRC_TOPO_MTU_MIN || *mtu > MRC_TOPO_MTU_MAX)
		return mrc__topo_err(err, errlen, "mtu: %u is not in %u..%u", *mtu,
				     MRC_TOPO_MTU_MIN, MRC_TOPO_MTU_MAX);
	if (rate_mbit > MRC_TOPO_RATE_MAX_MBIT)
		return mrc__topo_err(err, errlen, "rate_mbit: %u is above %u", rate_mbit,
				     MRC_TOPO_RATE_MAX_MBIT);
	char why[128];
	const char *bs = block ? block : MRC_BLOCK_DEFAULT;
	if (mrc__topo_block_parse(bs, a, bits, why, sizeof(why)))
		return mrc__topo_err(err, errlen, "block: '%s': %s", bs, why);
	return 0;
}

/* Validates and indexes what a generator filled in. */
static int finish(struct mrc_topo *t, struct mrc_topo **out, char *err, size_t errlen)
{
	int rc = mrc__topo_finish(t, err, errlen);
	if (rc) {
		mrc_topo_free(t);
		return rc;
	}
	*out = t;
	return 0;
}

int mrc_topo_generate(const struct mrc_topo_gen *g, struct mrc_topo **out,
		      char *err, size_t errlen)
{
	int rc;
	if ((rc = range(err, errlen, "planes", g->planes, 1, MRC_TOPO_MAX_PLANES)) ||
	    (rc = range(err, errlen, "leaves_per_plane", g->leaves_per_plane, 1,
			MRC_TOPO_MAX_PER_PLANE)) ||
	    (rc = range(err, errlen, "spines_per_plane", g->spines_per_plane, 1,
			MRC_TOPO_MAX_PER_PLANE)) ||
	    (rc = range(err, errlen, "hosts_per_leaf", g->hosts_per_leaf, 1,
			MRC_TOPO_MAX_HOSTS)))
		return rc;
	uint64_t hosts = (uint64_t)g->leaves_per_plane * g->hosts_per_leaf;
	if (hosts > MRC_TOPO_MAX_HOSTS)
		return mrc__topo_err(err, errlen,
				     "generate: %u leaves_per_plane x %u hosts_per_leaf = %llu hosts: at most %u",
				     g->leaves_per_plane, g->hosts_per_leaf,
				     (unsigned long long)hosts, MRC_TOPO_MAX_HOSTS);
	uint32_t mtu = g->mtu;
	struct in6_addr block;
	uint8_t bits;
	if ((rc = link_args(&mtu, g->rate_mbit, g->block, &block, &bits, err, errlen)))
		return rc;

	uint32_t P = g->planes, L = g->leaves_per_plane, S = g->spines_per_plane;
	uint32_t n_nodes = (uint32_t)hosts + P * (L + S);
	uint32_t n_links = (uint32_t)hosts * P + P * L * S;
	struct mrc_topo *t = mrc__topo_alloc(n_nodes, n_links);
	if (!t)
		return mrc__topo_err(err, errlen, "out of memory"), -ENOMEM;
	t->block = block;
	t->block_bits = bits;
	t->planes = P;
	uint32_t n = 0, k = 0;
	for (uint32_t h = 0; h < hosts; h++) {
		struct mrc_node *x = &t->nodes[n++];
		snprintf(x->name, sizeof(x->name), "h%u", (uint16_t)h);
		x->tier = MRC_TIER_HOST;
		x->usid = (uint16_t)MRC_USID_GEN_HOST(h);
	}
	for (uint32_t p = 0; p < P; p++) {
		uint32_t leaf0 = n;
		for (uint32_t l = 0; l < L; l++) {
			struct mrc_node *x = &t->nodes[n++];
			snprintf(x->name, sizeof(x->name), "p%ul%u", (uint8_t)p, (uint8_t)l);
			x->tier = MRC_TIER_LEAF;
			x->plane = (uint8_t)p;
			x->usid = (uint16_t)MRC_USID_GEN_LEAF(p, l);
		}
		uint32_t spine0 = n;
		for (uint32_t s = 0; s < S; s++) {
			struct mrc_node *x = &t->nodes[n++];
			snprintf(x->name, sizeof(x->name), "p%us%u", (uint8_t)p, (uint8_t)s);
			x->tier = MRC_TIER_SPINE;
			x->plane = (uint8_t)p;
			x->usid = (uint16_t)MRC_USID_GEN_SPINE(p, s);
		}
		for (uint32_t h = 0; h < hosts; h++)
			t->links[k++] = (struct mrc_link){ .lower = h,
				.upper = leaf0 + h / g->hosts_per_leaf,
				.mtu = mtu, .rate_mbit = g->rate_mbit };
		for (uint32_t l = 0; l < L; l++)
			for (uint32_t s = 0; s < S; s++)
				t->links[k++] = (struct mrc_link){ .lower = leaf0 + l,
					.upper = spine0 + s, .mtu = mtu,
					.rate_mbit = g->rate_mbit };
	}
	return finish(t, out, err, errlen);
}

int mrc_topo_generate_fattree(const struct mrc_topo_fattree *g, struct mrc_topo **out,
			      char *err, size_t errlen)
{
	int rc;
	if ((rc = range(err, errlen, "planes", g->planes, 1, MRC_TOPO_MAX_PLANES)))
		return rc;
	if (g->k < 2 || g->k > MRC_TOPO_FATTREE_K_MAX || g->k % 2)
		return mrc__topo_err(err, errlen, "fattree k=%u: must be even, 2..%u (%u hosts at most)",
				     g->k, MRC_TOPO_FATTREE_K_MAX, MRC_TOPO_MAX_HOSTS);
	uint32_t k = g->k, half = k / 2, P = g->planes;
	uint32_t hosts = k * half * half, sw = k * half * 2 + half * half;
	if ((uint64_t)P * sw > MRC_USID_GEN_FT_MAX)
		return mrc__topo_err(err, errlen,
				     "fattree k=%u, %u planes: %u switches: at most %u (uSIDs)",
				     k, P, P * sw, MRC_USID_GEN_FT_MAX);
	uint32_t mtu = g->mtu;
	struct in6_addr block;
	uint8_t bits;
	if ((rc = link_args(&mtu, g->rate_mbit, g->block, &block, &bits, err, errlen)))
		return rc;
	uint32_t links_per_plane = hosts + 2 * k * half * half;
	struct mrc_topo *t = mrc__topo_alloc(hosts + P * sw, P * links_per_plane);
	if (!t)
		return mrc__topo_err(err, errlen, "out of memory"), -ENOMEM;
	t->block = block;
	t->block_bits = bits;
	t->planes = P;
	t->fattree_k = k;
	uint32_t n = 0, l = 0, usid = 0;
	for (uint32_t h = 0; h < hosts; h++) {
		struct mrc_node *x = &t->nodes[n++];
		snprintf(x->name, sizeof(x->name), "h%u", (uint16_t)h);
		x->tier = MRC_TIER_HOST;
		x->usid = (uint16_t)MRC_USID_GEN_HOST(h);
	}
	static const char tier_letter[] = { [MRC_TIER_LEAF] = 'e', [MRC_TIER_SPINE] = 'a',
					     [MRC_TIER_CORE] = 'c' };
	for (uint32_t p = 0; p < P; p++) {
		uint32_t edge0 = n, agg0 = n + k * half, core0 = n + 2 * k * half;
		for (uint32_t i = 0; i < sw; i++) {
			struct mrc_node *x = &t->nodes[n++];
			uint32_t j = i < k * half ? i : i < 2 * k * half ? i - k * half : i - 2 * k * half;
			x->tier = i < k * half ? MRC_TIER_LEAF : i < 2 * k * half ? MRC_TIER_SPINE :
				  MRC_TIER_CORE;
			snprintf(x->name, sizeof(x->name), "p%u%c%u", (uint8_t)p, tier_letter[x->tier],
				 (uint16_t)j);
			x->plane = (uint8_t)p;
			x->usid = (uint16_t)MRC_USID_GEN_FT_SWITCH(usid++);
		}
		struct mrc_link proto = { .mtu = mtu, .rate_mbit = g->rate_mbit };
		for (uint32_t h = 0; h < hosts; h++, l++) {
			t->links[l] = proto;
			t->links[l].lower = h;
			t->links[l].upper = edge0 + h / half;
		}
		for (uint32_t e = 0; e < k * half; e++)
			for (uint32_t a = 0; a < half; a++, l++) {
				t->links[l] = proto;
				t->links[l].lower = edge0 + e;
				t->links[l].upper = agg0 + e / half * half + a;
			}
		for (uint32_t a = 0; a < k * half; a++)
			for (uint32_t j = 0; j < half; j++, l++) {
				t->links[l] = proto;
				t->links[l].lower = agg0 + a;
				t->links[l].upper = core0 + a % half * half + j;
			}
	}
	return finish(t, out, err, errlen);
}
