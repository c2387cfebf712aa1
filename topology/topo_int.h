/* Internals shared by the topology builders (file parser, generator). */
#ifndef MRC_TOPOLOGY_TOPO_INT_H
#define MRC_TOPOLOGY_TOPO_INT_H

#include "topology/topo.h"

/* A topology with room for n_nodes nodes and n_links links, zeroed; the
 * builder fills nodes[] (name, tier, plane, usid) and links[] (lower, upper,
 * mtu, rate_mbit), then calls mrc__topo_finish.  NULL if out of memory. */
struct mrc_topo *mrc__topo_alloc(uint32_t n_nodes, uint32_t n_links);

/* Validates what the builder filled in (names, uSIDs, tiers, planes, links,
 * one link per host and plane) and builds the indices.  Link errors name
 * the link as links[i], i.e. its position in the file's "links" array.
 * mrc__topo_finish = finish_nodes then finish_links; a parser calls them
 * apart so it can look link ends up by name in between. */
int mrc__topo_finish(struct mrc_topo *t, char *err, size_t errlen);
int mrc__topo_finish_nodes(struct mrc_topo *t, char *err, size_t errlen);
int mrc__topo_finish_links(struct mrc_topo *t, char *err, size_t errlen);

/* Writes a formatted message into err (if any) and returns -EINVAL. */
#include "common/errf.h"
#define mrc__topo_err mrc__errf

/* 0 if name is 1..MRC_TOPO_NAME_MAX characters of [A-Za-z0-9_.], else a
 * static reason. */
const char *mrc__topo_name_invalid(const char *name);

/* Parses "ADDR/BITS" with BITS in {16, 32, 48, 64} and no host bits. */
int mrc__topo_block_parse(const char *s, struct in6_addr *a, uint8_t *bits,
			  char *why, size_t whylen);

#endif
