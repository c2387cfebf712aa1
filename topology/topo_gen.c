/* The compact generator form: a regular multi-plane Clos from four numbers. */
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
	uint32_t mtu = g->mtu ? g->mtu : MRC_TOPO_MTU_DEFAULT;
	if (mtu < MRC_TOPO_MTU_MIN || mtu > MRC_TOPO_MTU_MAX)
		return mrc__topo_err(err, errlen, "mtu: %u is not in %u..%u", mtu,
				     MRC_TOPO_MTU_MIN, MRC_TOPO_MTU_MAX);
	if (g->rate_mbit > MRC_TOPO_RATE_MAX_MBIT)
		return mrc__topo_err(err, errlen, "rate_mbit: %u is above %u", g->rate_mbit,
				     MRC_TOPO_RATE_MAX_MBIT);
	struct in6_addr block;
	uint8_t bits;
	char why[128];
	const char *bs = g->block ? g->block : MRC_BLOCK_DEFAULT;
	if (mrc__topo_block_parse(bs, &block, &bits, why, sizeof(why)))
		return mrc__topo_err(err, errlen, "block: '%s': %s", bs, why);

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
	rc = mrc__topo_finish(t, err, errlen);
	if (rc) {
		mrc_topo_free(t);
		return rc;
	}
	*out = t;
	return 0;
}
