/* The simulated fabric's graph: topology/ builds both shapes (the 2-tier
 * multi-plane Clos and the k-ary 3-tier fat tree), and its path/EV
 * enumeration is the source route.  Here the graph is indexed for the hot
 * path: link ends as arrays and each node's links (CSR). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errf.h"
#include "sim/sim_int.h"

static int generate(struct sim_fabric *f, const struct mrc_sim_topo *t,
		    char *err, size_t errlen)
{
	uint32_t rate = t->rate_mbit <= MRC_TOPO_RATE_MAX_MBIT ? (uint32_t)t->rate_mbit : 0;
	char terr[MRC_TOPO_ERRLEN];
	int rc;
	if (t->kind == MRC_SIM_FATTREE) {
		uint32_t k = t->k, half = k / 2;
		if (k < 2 || k > MRC_TOPO_FATTREE_K_MAX || k % 2)
			return mrc__errf(err, errlen, "topo: fattree k=%u: must be even, 2..%u", k,
				    MRC_TOPO_FATTREE_K_MAX);
		if (t->planes < 1 || t->planes > MRCE_MAX_PLANES)
			return mrc__errf(err, errlen, "topo: planes=%u: must be 1..%u", t->planes,
				    MRCE_MAX_PLANES);
		if (t->planes * half * half > MRCE_MAX_EVS)
			return mrc__errf(err, errlen, "topo: %u EVs per host pair, the engine takes at most %u",
				    t->planes * half * half, MRCE_MAX_EVS);
		struct mrc_topo_fattree g = { .k = k, .planes = t->planes, .rate_mbit = rate };
		rc = mrc_topo_generate_fattree(&g, &f->topo, terr, sizeof(terr));
		f->k = k;
		f->max_hops = 6;
	} else {
		struct mrc_topo_gen g = { .planes = t->planes, .leaves_per_plane = t->leaves,
			.spines_per_plane = t->spines, .hosts_per_leaf = t->hosts_per_leaf,
			.rate_mbit = rate };
		rc = mrc_topo_generate(&g, &f->topo, terr, sizeof(terr));
		f->max_hops = 4;
	}
	if (rc)
		return mrc__errf(err, errlen, "topo: %s", terr);
	return 0;
}

static int build_graph(struct sim_fabric *f, const struct mrc_sim_topo *t,
		       char *err, size_t errlen)
{
	int rc = generate(f, t, err, errlen);
	if (rc)
		return rc;
	struct mrc_topo *tp = f->topo;
	f->planes = tp->planes;
	f->n_hosts = tp->n_hosts;
	f->n_nodes = tp->n_nodes;
	f->n_links = tp->n_links;
	f->nodes = tp->nodes;
	f->nev = mrc_topo_ev_count(tp);
	if (f->nev > MRCE_MAX_EVS)
		return mrc__errf(err, errlen, "topo: %u EVs per host pair, the engine takes at most %u",
			    f->nev, MRCE_MAX_EVS);
	f->lower = calloc(f->n_links, sizeof(*f->lower));
	f->upper = calloc(f->n_links, sizeof(*f->upper));
	f->plane_of_ev = calloc(f->nev, 1);
	if (!f->lower || !f->upper || !f->plane_of_ev)
		return mrc__errf(err, errlen, "topo: out of memory");
	for (uint32_t i = 0; i < tp->n_links; i++) {
		f->lower[i] = tp->links[i].lower;
		f->upper[i] = tp->links[i].upper;
	}
	f->host_node = tp->hosts;
	for (uint32_t ev = 0; ev < f->nev; ev++) {
		uint32_t plane, spine;
		mrc_topo_ev_decode(tp, ev, &plane, &spine);
		f->plane_of_ev[ev] = (uint8_t)plane;
	}
	return 0;
}

int sim_fabric_build(struct sim_fabric *f, const struct mrc_sim_topo *t,
		     char *err, size_t errlen)
{
	memset(f, 0, sizeof(*f));
	f->kind = t->kind;
	f->rate_mbit = t->rate_mbit;
	f->delay_ns = t->delay_ns;
	int rc = build_graph(f, t, err, errlen);
	if (rc)
		return rc;
	f->adj_off = calloc((size_t)f->n_nodes + 1, sizeof(*f->adj_off));
	f->adj = malloc((size_t)f->n_links * 2 * sizeof(*f->adj));
	if (!f->adj_off || !f->adj)
		return mrc__errf(err, errlen, "topo: out of memory");
	for (uint32_t l = 0; l < f->n_links; l++) {
		f->adj_off[f->lower[l] + 1]++;
		f->adj_off[f->upper[l] + 1]++;
	}
	for (uint32_t i = 0; i < f->n_nodes; i++)
		f->adj_off[i + 1] += f->adj_off[i];
	uint32_t *fill = calloc(f->n_nodes, sizeof(*fill));
	if (!fill)
		return mrc__errf(err, errlen, "topo: out of memory");
	for (uint32_t l = 0; l < f->n_links; l++) {
		f->adj[f->adj_off[f->lower[l]] + fill[f->lower[l]]++] = l;
		f->adj[f->adj_off[f->upper[l]] + fill[f->upper[l]]++] = l;
	}
	free(fill);
	return 0;
}

void sim_fabric_free(struct sim_fabric *f)
{
	free(f->lower);
	free(f->upper);
	free(f->plane_of_ev);
	free(f->adj_off);
	free(f->adj);
	if (f->topo)
		mrc_topo_free(f->topo);
	memset(f, 0, sizeof(*f));
}

_Static_assert(SIM_MAX_HOPS >= MRC_PATH_MAX_SWITCHES + 1, "a route holds any path");

int sim_fabric_route(const struct sim_fabric *f, uint32_t src, uint32_t dst,
		     uint32_t ev, uint32_t *ports)
{
	if (src >= f->n_hosts || dst >= f->n_hosts || src == dst || ev >= f->nev)
		return -EINVAL;
	int n = mrc_topo_path_links(f->topo, src, dst, ev, ports);
	if (n < 0)
		return n;
	/* Up-down paths: the first half of the links is climbed. */
	for (int i = 0; i < n; i++)
		ports[i] = ports[i] * 2 + (i >= n / 2);
	return n;
}

uint32_t sim_fabric_nic(const struct sim_fabric *f, uint32_t h, uint32_t p)
{
	return f->topo->host_link[(size_t)h * f->planes + p] * 2;
}

int sim_fabric_node(const struct sim_fabric *f, const char *name, uint32_t *id)
{
	return mrc_topo_node_find(f->topo, name, id);
}

int sim_fabric_link(const struct sim_fabric *f, uint32_t a, uint32_t b,
		    uint32_t *link)
{
	for (uint32_t i = f->adj_off[a]; i < f->adj_off[a + 1]; i++) {
		uint32_t l = f->adj[i];
		if ((f->lower[l] == a && f->upper[l] == b) ||
		    (f->lower[l] == b && f->upper[l] == a)) {
			*link = l;
			return 0;
		}
	}
	return -ENOENT;
}

void sim_fabric_describe(const struct sim_fabric *f, char *buf, size_t len)
{
	if (f->kind == MRC_SIM_FATTREE)
		snprintf(buf, len, "fattree k=%u, %u plane%s, %u hosts, %u EVs",
			 f->k, f->planes, f->planes > 1 ? "s" : "", f->n_hosts, f->nev);
	else
		snprintf(buf, len, "clos %u plane%s x %u leaves x %u spines, %u hosts, %u EVs",
			 f->planes, f->planes > 1 ? "s" : "", f->topo->n_leaves[0],
			 f->topo->n_spines[0], f->n_hosts, f->nev);
}
