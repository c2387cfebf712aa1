/* Paths between two hosts and their EV numbers (see topo.h for the rule).
 * A path is computed from its EV on demand: nothing per pair is stored, so
 * a fabric of any size costs no memory here. */
#include <errno.h>
#include <stdbool.h>

#include "topology/topo.h"

uint32_t mrc_topo_ev_count(const struct mrc_topo *t)
{
	return t->n_spine_evs + (t->fattree_k ? 0 : t->planes);
}

int mrc_topo_ev_of(const struct mrc_topo *t, uint32_t plane, uint32_t spine)
{
	if (plane >= t->planes)
		return -EINVAL;
	if (spine == MRC_PATH_SPINE_DIRECT)
		return t->fattree_k ? -EINVAL : (int)(t->n_spine_evs + plane);
	if (spine >= (t->fattree_k ? t->n_cores : t->n_spines)[plane])
		return -EINVAL;
	return (int)(t->spine_ev_base[plane] + spine);
}

int mrc_topo_ev_decode(const struct mrc_topo *t, uint32_t ev, uint32_t *plane,
		       uint32_t *spine)
{
	if (ev >= mrc_topo_ev_count(t))
		return -EINVAL;
	if (ev >= t->n_spine_evs) {
		*plane = ev - t->n_spine_evs;
		*spine = MRC_PATH_SPINE_DIRECT;
		return 0;
	}
	/* Planes are few (<= 16): a linear scan beats a search. */
	uint32_t p = 0;
	while (p + 1 < t->planes && ev >= t->spine_ev_base[p + 1])
		p++;
	*plane = p;
	*spine = ev - t->spine_ev_base[p];
	return 0;
}

/* The fat tree's switches of a path through core c (topo.h): up from
 * leaf la only as high as needed to reach leaf lb. */
static int fattree_switches(const struct mrc_topo *t, uint32_t plane, uint32_t c,
			    uint32_t la, uint32_t lb, struct mrc_path *p)
{
	uint32_t half = t->fattree_k / 2, S = t->n_spines[plane], C = t->n_cores[plane];
	uint32_t ia = t->nodes[la].index, ib = t->nodes[lb].index;
	uint32_t sa = ia / half * half + c / half, sb = ib / half * half + c / half;
	const uint32_t *ls = t->leaf_spine[plane], *sc = t->spine_core[plane];
	p->switches[p->n_switches++] = la;
	if (la != lb) {
		p->links[p->n_links++] = ls[(size_t)ia * S + sa];
		p->switches[p->n_switches++] = t->spines[plane][sa];
		if (sa != sb) {
			p->links[p->n_links++] = sc[(size_t)sa * C + c];
			p->switches[p->n_switches++] = t->cores[plane][c];
			p->links[p->n_links++] = sc[(size_t)sb * C + c];
			p->switches[p->n_switches++] = t->spines[plane][sb];
		}
		p->links[p->n_links++] = ls[(size_t)ib * S + sb];
		p->switches[p->n_switches++] = lb;
	}
	for (unsigned i = 1; i + 1 < p->n_links; i++)
		if (p->links[i] == MRC_TOPO_NONE)
			return -ENOENT;
	return 0;
}

/* A Clos path's links from the tables (four loads): host link, leaf-spine
 * up and down, host link; two through one leaf (MRC_PATH_SPINE_DIRECT).
 * Returns how many, or -ENOENT; *la / *lb: the two leaves. */
static int clos_links(const struct mrc_topo *t, uint32_t ha, uint32_t hb, uint32_t plane,
		      uint32_t spine, uint32_t *links, uint32_t *la, uint32_t *lb)
{
	*la = t->links[ha].upper, *lb = t->links[hb].upper;
	if (spine == MRC_PATH_SPINE_DIRECT) {
		if (*la != *lb)
			return -ENOENT;
		links[0] = ha;
		links[1] = hb;
		return 2;
	}
	uint32_t S = t->n_spines[plane];
	uint32_t up = t->leaf_spine[plane][(size_t)t->nodes[*la].index * S + spine];
	uint32_t down = t->leaf_spine[plane][(size_t)t->nodes[*lb].index * S + spine];
	if (up == MRC_TOPO_NONE || down == MRC_TOPO_NONE)
		return -ENOENT;
	links[0] = ha;
	links[1] = up;
	links[2] = down;
	links[3] = hb;
	return 4;
}

/* The pair's host links on plane of ev, after the arguments' checks. */
static int host_links(const struct mrc_topo *t, uint32_t src, uint32_t dst, uint32_t ev,
		      uint32_t *plane, uint32_t *spine, uint32_t *ha, uint32_t *hb)
{
	if (src >= t->n_hosts || dst >= t->n_hosts || src == dst ||
	    mrc_topo_ev_decode(t, ev, plane, spine))
		return -EINVAL;
	*ha = t->host_link[(size_t)src * t->planes + *plane];
	*hb = t->host_link[(size_t)dst * t->planes + *plane];
	return 0;
}

int mrc_topo_path(const struct mrc_topo *t, uint32_t src, uint32_t dst,
		  uint32_t ev, struct mrc_path *p)
{
	uint32_t plane, spine, ha, hb, la, lb;
	if (host_links(t, src, dst, ev, &plane, &spine, &ha, &hb))
		return -EINVAL;
	*p = (struct mrc_path){ .ev = (uint16_t)ev, .plane = (uint8_t)plane, .spine = spine };
	if (t->fattree_k) {
		la = t->links[ha].upper, lb = t->links[hb].upper;
		p->links[p->n_links++] = ha;
		if (fattree_switches(t, plane, spine, la, lb, p))
			return -ENOENT;
		p->links[p->n_links++] = hb;
	} else {
		int n = clos_links(t, ha, hb, plane, spine, p->links, &la, &lb);
		if (n < 0)
			return n;
		p->n_links = (uint8_t)n;
		p->switches[p->n_switches++] = la;
		if (n == 4) {
			p->switches[p->n_switches++] = t->spines[plane][spine];
			p->switches[p->n_switches++] = lb;
		}
	}
	for (unsigned i = 0; i < p->n_switches; i++)
		p->usids[i] = t->nodes[p->switches[i]].usid;
	p->usids[p->n_switches] = t->nodes[t->hosts[dst]].usid;
	p->n_usids = (uint8_t)(p->n_switches + 1);
	return 0;
}

/* mrc_topo_path's links alone: a Clos fabric's from its tables, without
 * the switch and USID lookups a packet's source route does not need (the
 * simulator calls this once per packet sent). */
int mrc_topo_path_links(const struct mrc_topo *t, uint32_t src, uint32_t dst,
			uint32_t ev, uint32_t *links)
{
	if (t->fattree_k) {
		struct mrc_path p;
		int rc = mrc_topo_path(t, src, dst, ev, &p);
		if (rc)
			return rc;
		for (unsigned i = 0; i < p.n_links; i++)
			links[i] = p.links[i];
		return p.n_links;
	}
	uint32_t plane, spine;
	if (src >= t->n_hosts || dst >= t->n_hosts || src == dst ||
	    mrc_topo_ev_decode(t, ev, &plane, &spine))
		return -EINVAL;
	/* clos_links from host_att: the same links, two loads fewer. */
	const struct mrc_topo_hatt a = t->host_att[(size_t)src * t->planes + plane];
	const struct mrc_topo_hatt b = t->host_att[(size_t)dst * t->planes + plane];
	if (spine == MRC_PATH_SPINE_DIRECT) {
		if (a.leaf != b.leaf)
			return -ENOENT;
		links[0] = a.link;
		links[1] = b.link;
		return 2;
	}
	uint32_t S = t->n_spines[plane];
	uint32_t up = t->leaf_spine[plane][(size_t)a.leaf * S + spine];
	uint32_t down = t->leaf_spine[plane][(size_t)b.leaf * S + spine];
	if (up == MRC_TOPO_NONE || down == MRC_TOPO_NONE)
		return -ENOENT;
	links[0] = a.link;
	links[1] = up;
	links[2] = down;
	links[3] = b.link;
	return 4;
}

/* Calls keep(path) for every path of the pair and stores the EVs (or paths)
 * it accepts; *n counts all accepted, storage stops at max. */
enum what { ALL, LINK, NODE };

static bool crosses(const struct mrc_topo *t, uint32_t src, uint32_t dst,
		    const struct mrc_path *p, enum what w, uint32_t id)
{
	if (w == ALL)
		return true;
	if (w == LINK) {
		for (unsigned i = 0; i < p->n_links; i++)
			if (p->links[i] == id)
				return true;
		return false;
	}
	if (id == t->hosts[src] || id == t->hosts[dst])
		return true;
	for (unsigned i = 0; i < p->n_switches; i++)
		if (p->switches[i] == id)
			return true;
	return false;
}

static int collect(const struct mrc_topo *t, uint32_t src, uint32_t dst,
		   enum what w, uint32_t id, struct mrc_path *paths,
		   uint16_t *evs, size_t max, size_t *n)
{
	*n = 0;
	if (src >= t->n_hosts || dst >= t->n_hosts || src == dst)
		return -EINVAL;
	if ((w == LINK && id >= t->n_links) || (w == NODE && id >= t->n_nodes))
		return -EINVAL;
	uint32_t count = mrc_topo_ev_count(t);
	for (uint32_t ev = 0; ev < count; ev++) {
		struct mrc_path p;
		if (mrc_topo_path(t, src, dst, ev, &p) || !crosses(t, src, dst, &p, w, id))
			continue;
		if (*n < max) {
			if (paths)
				paths[*n] = p;
			if (evs)
				evs[*n] = (uint16_t)ev;
		}
		(*n)++;
	}
	return *n > max ? -ENOSPC : 0;
}

int mrc_topo_paths(const struct mrc_topo *t, uint32_t src, uint32_t dst,
		   struct mrc_path *out, size_t max, size_t *n)
{
	return collect(t, src, dst, ALL, 0, out, NULL, max, n);
}

int mrc_topo_evs_crossing_link(const struct mrc_topo *t, uint32_t src,
			       uint32_t dst, uint32_t link, uint16_t *evs,
			       size_t max, size_t *n)
{
	return collect(t, src, dst, LINK, link, NULL, evs, max, n);
}

int mrc_topo_evs_crossing_node(const struct mrc_topo *t, uint32_t src,
			       uint32_t dst, uint32_t node, uint16_t *evs,
			       size_t max, size_t *n)
{
	return collect(t, src, dst, NODE, node, NULL, evs, max, n);
}
