/* Fabric model: validation of what a builder filled in, the indices that
 * make every query O(1) or O(log n), lookups, and freeing. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "topology/topo_int.h"

const char *mrc__topo_name_invalid(const char *name)
{
	size_t n = strlen(name);
	if (n == 0)
		return "empty";
	if (n > MRC_TOPO_NAME_MAX)
		return "longer than 15 characters (it names interfaces)";
	for (size_t i = 0; i < n; i++) {
		char c = name[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '_' || c == '.'))
			return "has a character other than A-Z a-z 0-9 _ .";
	}
	return NULL;
}

int mrc__topo_block_parse(const char *s, struct in6_addr *a, uint8_t *bits,
			  char *why, size_t whylen)
{
	char buf[INET6_ADDRSTRLEN + 8];
	const char *slash = strchr(s, '/');
	if (!slash || (size_t)(slash - s) >= INET6_ADDRSTRLEN) {
		snprintf(why, whylen, "not ADDR/LEN");
		return -EINVAL;
	}
	memcpy(buf, s, (size_t)(slash - s));
	buf[slash - s] = 0;
	if (inet_pton(AF_INET6, buf, a) != 1) {
		snprintf(why, whylen, "'%s' is not an IPv6 address", buf);
		return -EINVAL;
	}
	const char *l = slash + 1;
	unsigned v;
	if (!strcmp(l, "16")) v = 16;
	else if (!strcmp(l, "32")) v = 32;
	else if (!strcmp(l, "48")) v = 48;
	else if (!strcmp(l, "64")) v = 64;
	else {
		snprintf(why, whylen, "length '%s' is not 16, 32, 48 or 64", l);
		return -EINVAL;
	}
	for (unsigned i = v / 8; i < 16; i++)
		if (a->s6_addr[i]) {
			snprintf(why, whylen, "bits set after the /%u block", v);
			return -EINVAL;
		}
	if (v == 16 && !a->s6_addr[0] && !a->s6_addr[1]) {
		snprintf(why, whylen, "the block is all zero");
		return -EINVAL;
	}
	*bits = (uint8_t)v;
	return 0;
}

struct mrc_topo *mrc__topo_alloc(uint32_t n_nodes, uint32_t n_links)
{
	struct mrc_topo *t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->nodes = calloc(n_nodes ? n_nodes : 1, sizeof(*t->nodes));
	t->links = calloc(n_links ? n_links : 1, sizeof(*t->links));
	if (!t->nodes || !t->links) {
		mrc_topo_free(t);
		return NULL;
	}
	t->n_nodes = n_nodes;
	t->n_links = n_links;
	return t;
}

void mrc_topo_free(struct mrc_topo *t)
{
	if (!t)
		return;
	for (unsigned p = 0; p < MRC_TOPO_MAX_PLANES; p++) {
		free(t->leaves[p]);
		free(t->spines[p]);
		free(t->leaf_spine[p]);
		free(t->cores[p]);
		free(t->spine_core[p]);
	}
	free(t->nodes);
	free(t->links);
	free(t->hosts);
	free(t->host_link);
	free(t->host_att);
	free(t->by_name);
	free(t->spray_slot);
	free(t);
}

const char *mrc_topo_tier_name(unsigned tier)
{
	switch (tier) {
	case MRC_TIER_HOST: return "host";
	case MRC_TIER_LEAF: return "leaf";
	case MRC_TIER_SPINE: return "spine";
	case MRC_TIER_CORE: return "core";
	default: return "?";
	}
}

static int by_name_cmp(const void *a, const void *b, void *nodes)
{
	const struct mrc_node *n = nodes;
	return strcmp(n[*(const uint32_t *)a].name, n[*(const uint32_t *)b].name);
}

static int check_nodes(struct mrc_topo *t, char *err, size_t errlen)
{
	if (t->planes < 1 || t->planes > MRC_TOPO_MAX_PLANES)
		return mrc__topo_err(err, errlen, "planes: %u is not in 1..%u",
				     t->planes, MRC_TOPO_MAX_PLANES);
	uint32_t *owner = malloc(65536 * sizeof(*owner));
	if (!owner)
		return -ENOMEM;
	memset(owner, 0xff, 65536 * sizeof(*owner));
	int rc = 0;
	for (uint32_t i = 0; i < t->n_nodes && !rc; i++) {
		struct mrc_node *n = &t->nodes[i];
		const char *why = mrc__topo_name_invalid(n->name);
		if (why)
			rc = mrc__topo_err(err, errlen, "node name '%s': %s", n->name, why);
		else if (n->tier >= MRC_TIER__COUNT)
			rc = mrc__topo_err(err, errlen, "%s: tier %u is unknown", n->name, n->tier);
		else if (n->tier != MRC_TIER_HOST && n->plane >= t->planes)
			rc = mrc__topo_err(err, errlen, "%s: plane %u is not below planes (%u)",
					   n->name, n->plane, t->planes);
		else if (n->usid == 0)
			rc = mrc__topo_err(err, errlen, "%s: usid 0 is the End-of-Carrier marker, not a node",
					   n->name);
		else if (owner[n->usid] != UINT32_MAX)
			rc = mrc__topo_err(err, errlen, "%s: usid 0x%04x is already used by %s",
					   n->name, n->usid, t->nodes[owner[n->usid]].name);
		else
			owner[n->usid] = i;
	}
	free(owner);
	if (rc)
		return rc;
	t->by_name = malloc((t->n_nodes ? t->n_nodes : 1) * sizeof(uint32_t));
	if (!t->by_name)
		return -ENOMEM;
	for (uint32_t i = 0; i < t->n_nodes; i++)
		t->by_name[i] = i;
	qsort_r(t->by_name, t->n_nodes, sizeof(uint32_t), by_name_cmp, t->nodes);
	for (uint32_t i = 1; i < t->n_nodes; i++)
		if (!strcmp(t->nodes[t->by_name[i]].name, t->nodes[t->by_name[i - 1]].name))
			return mrc__topo_err(err, errlen, "node name '%s' is used twice",
					     t->nodes[t->by_name[i]].name);
	return 0;
}

/* Hosts, leaves, spines and cores get their index in the order they were
 * given. */
static int index_nodes(struct mrc_topo *t, char *err, size_t errlen)
{
	for (uint32_t i = 0; i < t->n_nodes; i++) {
		struct mrc_node *n = &t->nodes[i];
		if (n->tier == MRC_TIER_HOST) {
			n->plane = 0;
			n->index = t->n_hosts++;
		} else if (n->tier == MRC_TIER_LEAF) {
			n->index = t->n_leaves[n->plane]++;
		} else if (n->tier == MRC_TIER_SPINE) {
			n->index = t->n_spines[n->plane]++;
		} else {
			n->index = t->n_cores[n->plane]++;
		}
	}
	if (t->n_hosts > MRC_TOPO_MAX_HOSTS)
		return mrc__topo_err(err, errlen, "%u hosts: at most %u", t->n_hosts,
				     MRC_TOPO_MAX_HOSTS);
	for (uint32_t p = 0; p < t->planes; p++) {
		/* A fat tree's generator bounds its own size (k). */
		if (!t->fattree_k && (t->n_leaves[p] > MRC_TOPO_MAX_PER_PLANE ||
				      t->n_spines[p] > MRC_TOPO_MAX_PER_PLANE))
			return mrc__topo_err(err, errlen,
					     "plane %u: %u leaves and %u spines: at most %u of each",
					     p, t->n_leaves[p], t->n_spines[p], MRC_TOPO_MAX_PER_PLANE);
		if (!t->n_leaves[p])
			return mrc__topo_err(err, errlen, "plane %u has no leaf", p);
	}
	t->hosts = malloc((t->n_hosts ? t->n_hosts : 1) * sizeof(uint32_t));
	t->host_link = malloc(((size_t)t->n_hosts * t->planes + 1) * sizeof(uint32_t));
	if (!t->hosts || !t->host_link)
		return -ENOMEM;
	memset(t->host_link, 0xff, ((size_t)t->n_hosts * t->planes + 1) * sizeof(uint32_t));
	uint32_t fill[MRC_TOPO_MAX_PLANES][3] = {{0}};
	for (uint32_t p = 0; p < t->planes; p++) {
		size_t ls = (size_t)t->n_leaves[p] * t->n_spines[p] + 1;
		t->leaves[p] = malloc(t->n_leaves[p] * sizeof(uint32_t));
		t->spines[p] = malloc((t->n_spines[p] + 1) * sizeof(uint32_t));
		t->leaf_spine[p] = malloc(ls * sizeof(uint32_t));
		if (!t->leaves[p] || !t->spines[p] || !t->leaf_spine[p])
			return -ENOMEM;
		memset(t->leaf_spine[p], 0xff, ls * sizeof(uint32_t));
		if (t->fattree_k) {
			/* EVs name cores (topo.h) */
			size_t sc = (size_t)t->n_spines[p] * t->n_cores[p] + 1;
			t->cores[p] = malloc((t->n_cores[p] + 1) * sizeof(uint32_t));
			t->spine_core[p] = malloc(sc * sizeof(uint32_t));
			if (!t->cores[p] || !t->spine_core[p])
				return -ENOMEM;
			memset(t->spine_core[p], 0xff, sc * sizeof(uint32_t));
			t->spine_ev_base[p] = t->n_spine_evs;
			t->n_spine_evs += t->n_cores[p];
			continue;
		}
		t->spine_ev_base[p] = t->n_spine_evs;
		t->n_spine_evs += t->n_spines[p];
	}
	for (uint32_t i = 0; i < t->n_nodes; i++) {
		struct mrc_node *n = &t->nodes[i];
		if (n->tier == MRC_TIER_HOST)
			t->hosts[n->index] = i;
		else
			(n->tier == MRC_TIER_LEAF ? t->leaves : n->tier == MRC_TIER_SPINE ?
			 t->spines : t->cores)[n->plane][fill[n->plane][n->tier - 1]++] = i;
	}
	return 0;
}

static int check_links(struct mrc_topo *t, char *err, size_t errlen)
{
	for (uint32_t i = 0; i < t->n_links; i++) {
		struct mrc_link *l = &t->links[i];
		if (l->lower >= t->n_nodes || l->upper >= t->n_nodes)
			return mrc__topo_err(err, errlen, "links[%u]: node id out of range", i);
		if (t->nodes[l->lower].tier > t->nodes[l->upper].tier) {
			uint32_t x = l->lower;
			l->lower = l->upper;
			l->upper = x;
		}
		const struct mrc_node *a = &t->nodes[l->lower], *b = &t->nodes[l->upper];
		if (l->lower == l->upper)
			return mrc__topo_err(err, errlen, "links[%u] (%s-%s): a link needs two different nodes",
					     i, a->name, b->name);
		if (b->tier != a->tier + 1)
			return mrc__topo_err(err, errlen,
					     "links[%u] (%s-%s): a %s may not link to a %s (links join host-leaf or leaf-spine)",
					     i, a->name, b->name, mrc_topo_tier_name(a->tier), mrc_topo_tier_name(b->tier));
		if (a->tier != MRC_TIER_HOST && a->plane != b->plane)
			return mrc__topo_err(err, errlen,
					     "links[%u] (%s-%s): %s is in plane %u but %s in plane %u",
					     i, a->name, b->name, a->name, a->plane, b->name, b->plane);
		if (l->mtu < MRC_TOPO_MTU_MIN || l->mtu > MRC_TOPO_MTU_MAX)
			return mrc__topo_err(err, errlen, "links[%u] (%s-%s): mtu %u is not in %u..%u",
					     i, a->name, b->name, l->mtu, MRC_TOPO_MTU_MIN, MRC_TOPO_MTU_MAX);
		if (l->rate_mbit > MRC_TOPO_RATE_MAX_MBIT)
			return mrc__topo_err(err, errlen, "links[%u] (%s-%s): rate_mbit %u is above %u",
					     i, a->name, b->name, l->rate_mbit, MRC_TOPO_RATE_MAX_MBIT);
		l->plane = b->plane;
		uint32_t *slot;
		if (a->tier == MRC_TIER_HOST) {
			slot = &t->host_link[(size_t)a->index * t->planes + b->plane];
			if (*slot != MRC_TOPO_NONE) {
				const struct mrc_link *o = &t->links[*slot];
				if (o->upper == l->upper)
					return mrc__topo_err(err, errlen, "links[%u] (%s-%s): duplicate of links[%u]",
							     i, a->name, b->name, *slot);
				return mrc__topo_err(err, errlen,
						     "links[%u] (%s-%s): host %s already has a link in plane %u (to %s); a host has one NIC per plane",
						     i, a->name, b->name, a->name, b->plane,
						     t->nodes[o->upper].name);
			}
		} else {
			slot = a->tier == MRC_TIER_SPINE
			       ? &t->spine_core[b->plane][(size_t)a->index * t->n_cores[b->plane] + b->index]
			       : &t->leaf_spine[b->plane][(size_t)a->index * t->n_spines[b->plane] + b->index];
			if (*slot != MRC_TOPO_NONE)
				return mrc__topo_err(err, errlen, "links[%u] (%s-%s): duplicate of links[%u]",
						     i, a->name, b->name, *slot);
		}
		*slot = i;
	}
	for (uint32_t h = 0; h < t->n_hosts; h++)
		for (uint32_t p = 0; p < t->planes; p++)
			if (t->host_link[(size_t)h * t->planes + p] == MRC_TOPO_NONE)
				return mrc__topo_err(err, errlen,
						     "host %s has no link to a leaf of plane %u (a host needs one NIC in every plane)",
						     t->nodes[t->hosts[h]].name, p);
	return 0;
}

int mrc__topo_finish_nodes(struct mrc_topo *t, char *err, size_t errlen)
{
	int rc = check_nodes(t, err, errlen);
	if (!rc)
		rc = index_nodes(t, err, errlen);
	if (rc == -ENOMEM)
		mrc__topo_err(err, errlen, "out of memory");
	return rc;
}

/* Hosts that leave through the same plane-0 leaf, or the same pod (the
 * edge's index in its plane over k/2), share those uplinks. */
static uint32_t uplink_group(const struct mrc_topo *t, uint32_t host)
{
	uint32_t idx = t->nodes[mrc_topo_host_leaf(t, host, 0)].index;
	return t->fattree_k ? idx / (t->fattree_k / 2) : idx;
}

/* host_att (topo.h), and spray slots, counted per group in host order
 * rather than as host % hosts_per_leaf: a topology file may put any hosts
 * on a leaf, in any order.  Once here, so a lookup is O(1) (mrcsim asks
 * for every host). */
static int index_hosts(struct mrc_topo *t)
{
	size_t nh = (size_t)t->n_hosts * t->planes;
	t->host_att = malloc((nh + 1) * sizeof(*t->host_att));
	if (!t->host_att)
		return -ENOMEM;
	for (size_t i = 0; i < nh; i++) {
		uint32_t l = t->host_link[i];
		t->host_att[i] = (struct mrc_topo_hatt){ l, t->nodes[t->links[l].upper].index };
	}
	uint32_t *count = calloc((size_t)t->n_leaves[0] + 1, sizeof(uint32_t));
	t->spray_slot = malloc(((size_t)t->n_hosts + 1) * sizeof(uint32_t));
	if (!count || !t->spray_slot) {
		free(count);
		return -ENOMEM;
	}
	for (uint32_t h = 0; h < t->n_hosts; h++)
		t->spray_slot[h] = ++count[uplink_group(t, h)];
	free(count);
	return 0;
}

int mrc__topo_finish_links(struct mrc_topo *t, char *err, size_t errlen)
{
	int rc = check_links(t, err, errlen);
	if (!rc && (rc = index_hosts(t)))
		mrc__topo_err(err, errlen, "out of memory");
	return rc;
}

int mrc__topo_finish(struct mrc_topo *t, char *err, size_t errlen)
{
	int rc = mrc__topo_finish_nodes(t, err, errlen);
	return rc ? rc : mrc__topo_finish_links(t, err, errlen);
}

int mrc_topo_node_find(const struct mrc_topo *t, const char *name, uint32_t *id)
{
	size_t lo = 0, hi = t->n_nodes;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(t->nodes[t->by_name[mid]].name, name);
		if (!c) {
			*id = t->by_name[mid];
			return 0;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -ENOENT;
}

int mrc_topo_host_find(const struct mrc_topo *t, const char *name, uint32_t *host)
{
	uint32_t id;
	if (mrc_topo_node_find(t, name, &id) || t->nodes[id].tier != MRC_TIER_HOST)
		return -ENOENT;
	*host = t->nodes[id].index;
	return 0;
}

int mrc_topo_host_lookup(const struct mrc_topo *t, const char *s, uint32_t *host)
{
	if (!mrc_topo_host_find(t, s, host))
		return 0;
	/* Digits only: strtoul would also take blanks, a sign and overflow. */
	size_t n = strspn(s, "0123456789");
	if (!n || s[n] || n > 10)
		return -ENOENT;
	unsigned long long v = strtoull(s, NULL, 10);
	if (v >= t->n_hosts)
		return -ENOENT;
	*host = (uint32_t)v;
	return 0;
}

int mrc_topo_link_find(const struct mrc_topo *t, uint32_t a, uint32_t b,
		       uint32_t *link)
{
	if (a >= t->n_nodes || b >= t->n_nodes)
		return -ENOENT;
	if (t->nodes[a].tier > t->nodes[b].tier) {
		uint32_t x = a;
		a = b;
		b = x;
	}
	const struct mrc_node *na = &t->nodes[a], *nb = &t->nodes[b];
	uint32_t l = MRC_TOPO_NONE;
	if (na->tier == MRC_TIER_HOST && nb->tier == MRC_TIER_LEAF) {
		l = t->host_link[(size_t)na->index * t->planes + nb->plane];
		if (l != MRC_TOPO_NONE && t->links[l].upper != b)
			l = MRC_TOPO_NONE;
	} else if (na->tier == MRC_TIER_LEAF && nb->tier == MRC_TIER_SPINE &&
		   na->plane == nb->plane) {
		l = t->leaf_spine[na->plane][(size_t)na->index * t->n_spines[na->plane] + nb->index];
	} else if (na->tier == MRC_TIER_SPINE && nb->tier == MRC_TIER_CORE &&
		   na->plane == nb->plane) {
		l = t->spine_core[na->plane][(size_t)na->index * t->n_cores[na->plane] + nb->index];
	}
	if (l == MRC_TOPO_NONE)
		return -ENOENT;
	*link = l;
	return 0;
}

uint32_t mrc_topo_host_leaf(const struct mrc_topo *t, uint32_t host, uint32_t plane)
{
	if (host >= t->n_hosts || plane >= t->planes)
		return MRC_TOPO_NONE;
	return t->links[t->host_link[(size_t)host * t->planes + plane]].upper;
}

uint32_t mrc_topo_spray_slot(const struct mrc_topo *t, uint32_t host)
{
	return host < t->n_hosts && t->spray_slot ? t->spray_slot[host] : 0;
}
