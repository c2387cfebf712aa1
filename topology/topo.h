/* The fabric model: a multi-plane Clos of hosts, leaves (T0) and spines
 * (T1), its topology file format (JSON) and generator form, and the paths
 * (EVs) between two hosts; and the k-ary 3-tier fat tree (generated only,
 * for mrcsim).  docs/fabric.md is the full description.
 *
 * Nodes are kept by tier (0 = host, 1 = leaf, 2 = spine, 3 = core) and
 * links join adjacent tiers of one plane, so the third switch tier is one
 * more tier number and two more uSIDs per path, not a new model.
 *
 * A topology is immutable once built; every query is read-only and
 * thread-safe.  Functions return 0 or a negative errno; parsers and builders
 * fill err (may be NULL) with one line naming the field, the value and why.
 */
#ifndef MRC_TOPOLOGY_TOPO_H
#define MRC_TOPOLOGY_TOPO_H

#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MRC_TOPO_MAX_PLANES 16
#define MRC_TOPO_NAME_MAX 15          /* fits an interface name */
#define MRC_TOPO_MAX_PER_PLANE 256    /* leaves or spines in one plane */
#define MRC_TOPO_MAX_HOSTS 32768
#define MRC_TOPO_MTU_DEFAULT 9216
#define MRC_TOPO_MTU_MIN 1280         /* IPv6 minimum */
#define MRC_TOPO_MTU_MAX 65535
#define MRC_TOPO_RATE_MAX_MBIT 10000000u
#define MRC_TOPO_ERRLEN 256
#define MRC_TOPO_NONE UINT32_MAX      /* "no such node/link/spine" */

enum mrc_tier {
	MRC_TIER_HOST = 0,
	MRC_TIER_LEAF = 1,
	MRC_TIER_SPINE = 2,
	MRC_TIER_CORE = 3,        /* fat tree only (leaf = edge, spine = agg) */
	MRC_TIER__COUNT,
};

struct mrc_node {
	char name[MRC_TOPO_NAME_MAX + 1];
	uint8_t tier;             /* enum mrc_tier */
	uint8_t plane;            /* switches; 0 for hosts (they span planes) */
	uint16_t usid;            /* never 0 (End-of-Carrier) */
	uint32_t index;           /* among nodes of its tier (and plane):
	                             host 7, leaf 3 of plane 1, ... */
};

struct mrc_link {
	uint32_t lower, upper;    /* node ids; lower tier first */
	uint8_t plane;
	uint32_t mtu;
	uint32_t rate_mbit;       /* 0: not rate limited */
};

struct mrc_topo {
	struct in6_addr block;    /* locator block, bits after block_bits 0 */
	uint8_t block_bits;       /* 16, 32, 48 or 64 */
	uint32_t planes;
	uint32_t n_nodes, n_links;
	struct mrc_node *nodes;
	struct mrc_link *links;
	uint32_t n_hosts;
	uint32_t *hosts;          /* host index -> node id */
	uint32_t n_leaves[MRC_TOPO_MAX_PLANES];
	uint32_t n_spines[MRC_TOPO_MAX_PLANES];
	uint32_t *leaves[MRC_TOPO_MAX_PLANES];  /* leaf index -> node id */
	uint32_t *spines[MRC_TOPO_MAX_PLANES];  /* spine index -> node id */
	uint32_t spine_ev_base[MRC_TOPO_MAX_PLANES];
	uint32_t n_spine_evs;     /* all spines of all planes */
	uint32_t *host_link;      /* [host * planes + plane] -> link id */
	/* host_link's link with its leaf's index in the plane, in one load
	 * (mrc_topo_path_links: mrcsim's every packet; the link and node
	 * records behind host_link were two cache misses per route). */
	struct mrc_topo_hatt { uint32_t link, leaf; } *host_att;
	uint32_t *leaf_spine[MRC_TOPO_MAX_PLANES]; /* [leaf * n_spines + spine]
	                                            -> link id or NONE */
	uint32_t *by_name;        /* node ids sorted by name */
	uint32_t *spray_slot;     /* host index -> mrc_topo_spray_slot */
	/* fat tree: its k (0 in a 2-tier Clos), cores and their links */
	uint32_t fattree_k;
	uint32_t n_cores[MRC_TOPO_MAX_PLANES];
	uint32_t *cores[MRC_TOPO_MAX_PLANES];   /* core index -> node id */
	uint32_t *spine_core[MRC_TOPO_MAX_PLANES]; /* [spine * n_cores + core]
	                                            -> link id or NONE */
};

/* ---- building ---------------------------------------------------------- */

/* The compact form of a regular fabric: in every plane, hosts_per_leaf
 * hosts on each leaf (host h on leaf h / hosts_per_leaf in every plane) and
 * every leaf linked to every spine.  Names: hosts "h<i>", leaves "p<p>l<i>",
 * spines "p<p>s<i>"; uSIDs from topology/addr.h. */
struct mrc_topo_gen {
	uint32_t planes;             /* 1..16 */
	uint32_t leaves_per_plane;   /* 1..256 */
	uint32_t spines_per_plane;   /* 1..256 */
	uint32_t hosts_per_leaf;     /* >= 1, hosts in all <= 32768 */
	uint32_t mtu;                /* 0: MRC_TOPO_MTU_DEFAULT */
	uint32_t rate_mbit;          /* 0: unlimited */
	const char *block;           /* NULL: MRC_BLOCK_DEFAULT */
};

int mrc_topo_generate(const struct mrc_topo_gen *g, struct mrc_topo **out,
		      char *err, size_t errlen);

/* A k-ary 3-tier fat tree in every plane: k pods of k/2 edges (tier leaf)
 * and k/2 aggregation switches (tier spine), (k/2)^2 cores; edge e of pod
 * q links to every aggregation switch of pod q, aggregation switch g of
 * every pod to cores g*k/2 .. g*k/2 + k/2-1; k/2 hosts per edge, k^3/4
 * hosts (host h on edge h / (k/2) in every plane).  Names: hosts "h<i>",
 * edges "p<p>e<i>", aggregation "p<p>a<i>", cores "p<p>c<i>" (i counts
 * in the plane); uSIDs: hosts as in the Clos, switches
 * MRC_USID_GEN_FT_SWITCH(n) in build order.  Node ids: hosts, then per
 * plane edges, aggregation switches, cores; link ids per plane: host
 * links, edge-aggregation (by edge, then g), aggregation-core (by
 * aggregation switch, then j).  In memory only: mrc_topo_to_json refuses
 * it (-EOPNOTSUPP); mrcd and mrc-fabric take 2-tier fabrics. */
#define MRC_TOPO_FATTREE_K_MAX 50     /* k^3/4 hosts <= MRC_TOPO_MAX_HOSTS */
struct mrc_topo_fattree {
	uint32_t k;                  /* even, 2..MRC_TOPO_FATTREE_K_MAX */
	uint32_t planes;             /* 1..16 */
	uint32_t mtu;                /* 0: MRC_TOPO_MTU_DEFAULT */
	uint32_t rate_mbit;          /* 0: unlimited */
	const char *block;           /* NULL: MRC_BLOCK_DEFAULT */
};

int mrc_topo_generate_fattree(const struct mrc_topo_fattree *g, struct mrc_topo **out,
			      char *err, size_t errlen);

/* Parses a topology file's text (explicit or "generate" form).  On error
 * nothing is returned (*out untouched) and err says what is wrong. */
int mrc_topo_parse_json(const char *text, size_t len, struct mrc_topo **out,
			char *err, size_t errlen);
/* Reads and parses a file; err is prefixed with the path. */
int mrc_topo_load(const char *path, struct mrc_topo **out, char *err,
		  size_t errlen);
/* Writes the explicit form (what mrc_topo_parse_json reads back into an
 * identical topology).  Caller frees the string. */
int mrc_topo_to_json(const struct mrc_topo *t, char **text);

void mrc_topo_free(struct mrc_topo *t);

/* ---- lookups ----------------------------------------------------------- */

/* Node id by name, or -ENOENT. */
int mrc_topo_node_find(const struct mrc_topo *t, const char *name, uint32_t *id);
/* Host index (not node id) by name, or -ENOENT (also for a switch name). */
int mrc_topo_host_find(const struct mrc_topo *t, const char *name, uint32_t *host);
/* Host index by name, else by its decimal index below n_hosts (how every
 * tool and mrcd's --host name a host), or -ENOENT. */
int mrc_topo_host_lookup(const struct mrc_topo *t, const char *s, uint32_t *host);
/* Link id joining two nodes (either order), or -ENOENT. */
int mrc_topo_link_find(const struct mrc_topo *t, uint32_t a, uint32_t b,
		       uint32_t *link);
/* Leaf node id of a host in a plane. */
uint32_t mrc_topo_host_leaf(const struct mrc_topo *t, uint32_t host,
			    uint32_t plane);
const char *mrc_topo_tier_name(unsigned tier);
/* The spray slot of a host (mrce_cfg.spray_slot, docs/sim.md "Spray
 * slots"): 1 + its index, in host order, among the hosts that share its
 * uplinks up to the top tier: those on its plane-0 leaf in a 2-tier Clos,
 * those of its pod in a fat tree.  So the hosts of one leaf (pod) get
 * 1..n, each once.  0 for a host index out of range. */
uint32_t mrc_topo_spray_slot(const struct mrc_topo *t, uint32_t host);

/* ---- paths and EVs ----------------------------------------------------- */

/* EV numbering (stable for a given topology, identical in both directions,
 * independent of the host pair):
 *   ev = spine_ev_base[plane] + spine   for the path through that spine
 *        (spine_ev_base[p] = spines in planes before p, so a regular fabric
 *        has ev = plane * spines_per_plane + spine);
 *   ev = n_spine_evs + plane            for the one-hop path through the
 *        shared leaf of plane `plane` (only when both hosts sit on it).
 * Hosts on one leaf also have every spine path (up to the spine and back to
 * the same leaf).  An EV exists for a pair when every link it needs does.
 *
 * In a fat tree an EV names a core: ev = plane * (k/2)^2 + core, and there
 * are no direct EVs (spine_ev_base and n_spine_evs count cores).  A path
 * climbs only as high as it must: hosts on one edge meet there; hosts in
 * one pod meet at aggregation switch core / (k/2) of their pod; else the
 * path goes through that switch of either pod and the core.  Every pair
 * has every EV (several of them share a path when the pair is close). */
#define MRC_PATH_MAX_SWITCHES 5       /* a 3-tier path: leaf spine T2 spine leaf */
#define MRC_PATH_SPINE_DIRECT UINT32_MAX

struct mrc_path {
	uint16_t ev;
	uint8_t plane;
	uint32_t spine;           /* spine (fat tree: core) index in the plane,
	                             or SPINE_DIRECT */
	uint8_t n_switches;
	uint32_t switches[MRC_PATH_MAX_SWITCHES];   /* node ids, src side first */
	uint8_t n_links;
	uint32_t links[MRC_PATH_MAX_SWITCHES + 1];  /* link ids, src side first */
	uint8_t n_usids;
	uint16_t usids[MRC_PATH_MAX_SWITCHES + 1];  /* switches, then dst host */
};

/* Size of the EV space: n_spine_evs + planes (fat tree: n_spine_evs).
 * Every EV of any pair is below it. */
uint32_t mrc_topo_ev_count(const struct mrc_topo *t);
/* EV of (plane, spine index) or of (plane, SPINE_DIRECT); -EINVAL if out of
 * range.  Returns the EV (>= 0). */
int mrc_topo_ev_of(const struct mrc_topo *t, uint32_t plane, uint32_t spine);
/* Inverse of mrc_topo_ev_of; -EINVAL if ev >= mrc_topo_ev_count. */
int mrc_topo_ev_decode(const struct mrc_topo *t, uint32_t ev, uint32_t *plane,
		       uint32_t *spine);

/* The path of EV ev from host src to host dst (host indices).  -EINVAL for
 * bad indices or src == dst, -ENOENT if the pair has no such EV. */
int mrc_topo_path(const struct mrc_topo *t, uint32_t src, uint32_t dst,
		  uint32_t ev, struct mrc_path *p);
/* The links of that path alone into links[MRC_PATH_MAX_SWITCHES + 1]
 * (cheaper: no switch ids or USIDs).  Returns the link count, or the
 * errors of mrc_topo_path. */
int mrc_topo_path_links(const struct mrc_topo *t, uint32_t src, uint32_t dst,
			uint32_t ev, uint32_t *links);
/* Every path of the pair in EV order.  *n is the number of paths; only the
 * first max are stored (-ENOSPC if there were more). */
int mrc_topo_paths(const struct mrc_topo *t, uint32_t src, uint32_t dst,
		   struct mrc_path *out, size_t max, size_t *n);
/* EVs of the pair whose path crosses a link (link id) or a node (node id;
 * a host crosses all of its own paths).  Same storage rules. */
int mrc_topo_evs_crossing_link(const struct mrc_topo *t, uint32_t src,
			       uint32_t dst, uint32_t link, uint16_t *evs,
			       size_t max, size_t *n);
int mrc_topo_evs_crossing_node(const struct mrc_topo *t, uint32_t src,
			       uint32_t dst, uint32_t node, uint16_t *evs,
			       size_t max, size_t *n);

#ifdef __cplusplus
}
#endif
#endif
