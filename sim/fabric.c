/* The simulated fabric's graph: the 2-tier multi-plane Clos comes from
 * topology/'s generator (and its path/EV enumeration is the source route),
 * the k-ary 3-tier fat tree is built here (topology/ has no third tier).
 * Both end up as nodes, links (lower, upper) and a route function
 * (src, dst, EV) -> ports, so the rest of the simulator is the same. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errf.h"
#include "sim/sim_int.h"

static int alloc_graph(struct sim_fabric *f)
{
	f->nodes = calloc(f->n_nodes, sizeof(*f->nodes));
	f->lower = calloc(f->n_links, sizeof(*f->lower));
	f->upper = calloc(f->n_links, sizeof(*f->upper));
	f->host_node = calloc(f->n_hosts, sizeof(*f->host_node));
	f->plane_of_ev = calloc(f->nev, 1);
	return f->nodes && f->lower && f->upper && f->host_node && f->plane_of_ev ?
	       0 : -ENOMEM;
}

static int build_clos(struct sim_fabric *f, const struct mrc_sim_topo *t,
		      char *err, size_t errlen)
{
	struct mrc_topo_gen g = { .planes = t->planes, .leaves_per_plane = t->leaves,
		.spines_per_plane = t->spines, .hosts_per_leaf = t->hosts_per_leaf,
		.rate_mbit = t->rate_mbit <= MRC_TOPO_RATE_MAX_MBIT ?
			     (uint32_t)t->rate_mbit : 0 };
	char terr[MRC_TOPO_ERRLEN];
	int rc = mrc_topo_generate(&g, &f->topo, terr, sizeof(terr));
	if (rc)
		return mrc__errf(err, errlen, "topo: %s", terr);
	struct mrc_topo *tp = f->topo;
	f->planes = tp->planes;
	f->n_hosts = tp->n_hosts;
	f->n_nodes = tp->n_nodes;
	f->n_links = tp->n_links;
	f->nev = mrc_topo_ev_count(tp);
	f->max_hops = 4;
	if (f->nev > MRC_MAX_EVS)
		return mrc__errf(err, errlen, "topo: %u EVs per host pair, the engine takes at most %u",
			    f->nev, MRC_MAX_EVS);
	if (alloc_graph(f))
		return mrc__errf(err, errlen, "topo: out of memory");
	for (uint32_t i = 0; i < tp->n_nodes; i++) {
		const struct mrc_node *n = &tp->nodes[i];
		snprintf(f->nodes[i].name, sizeof(f->nodes[i].name), "%s", n->name);
		f->nodes[i].tier = n->tier;
		f->nodes[i].plane = n->plane;
		f->nodes[i].index = n->index;
	}
	for (uint32_t i = 0; i < tp->n_links; i++) {
		f->lower[i] = tp->links[i].lower;
		f->upper[i] = tp->links[i].upper;
	}
	for (uint32_t h = 0; h < tp->n_hosts; h++)
		f->host_node[h] = tp->hosts[h];
	for (uint32_t ev = 0; ev < f->nev; ev++) {
		uint32_t plane, spine;
		mrc_topo_ev_decode(tp, ev, &plane, &spine);
		f->plane_of_ev[ev] = (uint8_t)plane;
	}
	return 0;
}

/* k-ary fat tree, per plane: k pods of k/2 edges and k/2 aggregation
 * switches, (k/2)^2 cores; core (g, j) joins aggregation switch g of every
 * pod.  Link ids per plane: host links, then edge-agg, then agg-core. */
static uint32_t ft_links_per_plane(const struct sim_fabric *f)
{
	uint32_t H = f->n_hosts, h2 = f->half * f->half;
	return H + f->k * h2 + f->k * h2;
}

static int build_fattree(struct sim_fabric *f, const struct mrc_sim_topo *t,
			 char *err, size_t errlen)
{
	uint32_t k = t->k, half = k / 2;
	if (k < 2 || k > 64 || k % 2)
		return mrc__errf(err, errlen, "topo: fattree k=%u: must be even, 2..64", k);
	if (t->planes < 1 || t->planes > MRC_MAX_PLANES)
		return mrc__errf(err, errlen, "topo: planes=%u: must be 1..%u", t->planes,
			    MRC_MAX_PLANES);
	f->k = k;
	f->half = half;
	f->planes = t->planes;
	f->n_hosts = k * half * half;
	uint32_t sw_per_plane = k * half * 2 + half * half;
	f->n_nodes = f->n_hosts + f->planes * sw_per_plane;
	f->n_links = f->planes * ft_links_per_plane(f);
	f->nev = f->planes * half * half;
	f->max_hops = 6;
	if (f->nev > MRC_MAX_EVS)
		return mrc__errf(err, errlen, "topo: %u EVs per host pair, the engine takes at most %u",
			    f->nev, MRC_MAX_EVS);
	if (alloc_graph(f))
		return mrc__errf(err, errlen, "topo: out of memory");
	for (uint32_t h = 0; h < f->n_hosts; h++) {
		snprintf(f->nodes[h].name, sizeof(f->nodes[h].name), "h%u", (uint16_t)h);
		f->nodes[h].index = h;
		f->host_node[h] = h;
	}
	uint32_t n = f->n_hosts, l = 0;
	for (uint32_t p = 0; p < f->planes; p++) {
		uint32_t edge0 = n, agg0 = n + k * half, core0 = n + 2 * k * half;
		for (uint32_t i = 0; i < k * half; i++) {
			struct sim_node *e = &f->nodes[edge0 + i], *a = &f->nodes[agg0 + i];
			snprintf(e->name, sizeof(e->name), "p%ue%u", (uint8_t)p, (uint16_t)i);
			snprintf(a->name, sizeof(a->name), "p%ua%u", (uint8_t)p, (uint16_t)i);
			e->tier = 1, a->tier = 2;
			e->plane = a->plane = (uint8_t)p;
			e->index = a->index = i;
		}
		for (uint32_t i = 0; i < half * half; i++) {
			struct sim_node *c = &f->nodes[core0 + i];
			snprintf(c->name, sizeof(c->name), "p%uc%u", (uint8_t)p, (uint16_t)i);
			c->tier = 3;
			c->plane = (uint8_t)p;
			c->index = i;
		}
		for (uint32_t h = 0; h < f->n_hosts; h++, l++) {
			f->lower[l] = h;
			f->upper[l] = edge0 + h / half;
		}
		for (uint32_t e = 0; e < k * half; e++)
			for (uint32_t g = 0; g < half; g++, l++) {
				f->lower[l] = edge0 + e;
				f->upper[l] = agg0 + (e / half) * half + g;
			}
		for (uint32_t a = 0; a < k * half; a++)
			for (uint32_t j = 0; j < half; j++, l++) {
				f->lower[l] = agg0 + a;
				f->upper[l] = core0 + (a % half) * half + j;
			}
		n += sw_per_plane;
	}
	for (uint32_t ev = 0; ev < f->nev; ev++)
		f->plane_of_ev[ev] = (uint8_t)(ev / (half * half));
	return 0;
}

static int name_cmp(const void *a, const void *b, void *arg)
{
	const struct sim_fabric *f = arg;
	return strcmp(f->nodes[*(const uint32_t *)a].name,
		      f->nodes[*(const uint32_t *)b].name);
}

int sim_fabric_build(struct sim_fabric *f, const struct mrc_sim_topo *t,
		     char *err, size_t errlen)
{
	memset(f, 0, sizeof(*f));
	f->kind = t->kind;
	f->rate_mbit = t->rate_mbit;
	f->delay_ns = t->delay_ns;
	int rc = t->kind == MRC_SIM_FATTREE ? build_fattree(f, t, err, errlen) :
		 build_clos(f, t, err, errlen);
	if (rc)
		return rc;
	f->by_name = malloc((size_t)f->n_nodes * sizeof(*f->by_name));
	f->adj_off = calloc((size_t)f->n_nodes + 1, sizeof(*f->adj_off));
	f->adj = malloc((size_t)f->n_links * 2 * sizeof(*f->adj));
	if (!f->by_name || !f->adj_off || !f->adj)
		return mrc__errf(err, errlen, "topo: out of memory");
	for (uint32_t i = 0; i < f->n_nodes; i++)
		f->by_name[i] = i;
	qsort_r(f->by_name, f->n_nodes, sizeof(uint32_t), name_cmp, f);
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
	free(f->nodes);
	free(f->lower);
	free(f->upper);
	free(f->host_node);
	free(f->plane_of_ev);
	free(f->by_name);
	free(f->adj_off);
	free(f->adj);
	if (f->topo)
		mrc_topo_free(f->topo);
	memset(f, 0, sizeof(*f));
}

static int ft_route(const struct sim_fabric *f, uint32_t src, uint32_t dst,
		    uint32_t ev, uint32_t *ports)
{
	uint32_t half = f->half, C = half * half;
	uint32_t p = ev / C, c = ev % C, g = c / half, j = c % half;
	uint32_t base = p * ft_links_per_plane(f);
	uint32_t ea = src / half, eb = dst / half;       /* global edge index */
	uint32_t pa = ea / half, pb = eb / half;         /* pods */
	uint32_t ea_base = base + f->n_hosts;            /* edge-agg links */
	uint32_t ac_base = ea_base + f->k * half * half; /* agg-core links */
	int n = 0;
	ports[n++] = (base + src) * 2;
	if (ea != eb) {
		ports[n++] = (ea_base + ea * half + g) * 2;
		if (pa != pb) {
			ports[n++] = (ac_base + (pa * half + g) * half + j) * 2;
			ports[n++] = (ac_base + (pb * half + g) * half + j) * 2 + 1;
		}
		ports[n++] = (ea_base + eb * half + g) * 2 + 1;
	}
	ports[n++] = (base + dst) * 2 + 1;
	return n;
}

int sim_fabric_route(const struct sim_fabric *f, uint32_t src, uint32_t dst,
		     uint32_t ev, uint32_t *ports)
{
	if (src >= f->n_hosts || dst >= f->n_hosts || src == dst || ev >= f->nev)
		return -EINVAL;
	if (f->kind == MRC_SIM_FATTREE)
		return ft_route(f, src, dst, ev, ports);
	struct mrc_path p;
	int rc = mrc_topo_path(f->topo, src, dst, ev, &p);
	if (rc)
		return rc;
	/* Up-down paths: the first half of the links is climbed. */
	for (unsigned i = 0; i < p.n_links; i++)
		ports[i] = p.links[i] * 2 + (i >= p.n_links / 2u);
	return p.n_links;
}

uint32_t sim_fabric_nic(const struct sim_fabric *f, uint32_t h, uint32_t p)
{
	if (f->kind == MRC_SIM_FATTREE)
		return (p * ft_links_per_plane(f) + h) * 2;
	return f->topo->host_link[(size_t)h * f->planes + p] * 2;
}

int sim_fabric_node(const struct sim_fabric *f, const char *name, uint32_t *id)
{
	size_t lo = 0, hi = f->n_nodes;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int c = strcmp(f->nodes[f->by_name[mid]].name, name);
		if (!c) {
			*id = f->by_name[mid];
			return 0;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -ENOENT;
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
