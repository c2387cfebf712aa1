/* Writes a topology in the explicit file form (what `mrc-fabric show -j`
 * prints and what the fabric tool keeps as its state). */
#include <arpa/inet.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>

#include "topology/topo.h"

static json_t *usid_str(uint16_t u)
{
	char b[8];
	snprintf(b, sizeof(b), "0x%04x", u);
	return json_string(b);
}

int mrc_topo_to_json(const struct mrc_topo *t, char **text)
{
	char addr[INET6_ADDRSTRLEN], block[INET6_ADDRSTRLEN + 4];
	if (t->fattree_k)
		return -EOPNOTSUPP;   /* the file format has no core tier */
	inet_ntop(AF_INET6, &t->block, addr, sizeof(addr));
	snprintf(block, sizeof(block), "%s/%u", addr, t->block_bits);
	json_t *root = json_object(), *hosts = json_array(), *sw = json_array(),
	       *links = json_array();
	if (!root || !hosts || !sw || !links)
		goto nomem;
	json_object_set_new(root, "version", json_integer(1));
	json_object_set_new(root, "block", json_string(block));
	json_object_set_new(root, "planes", json_integer(t->planes));
	for (uint32_t i = 0; i < t->n_nodes; i++) {
		const struct mrc_node *n = &t->nodes[i];
		json_t *o = json_object();
		if (!o)
			goto nomem;
		json_object_set_new(o, "name", json_string(n->name));
		if (n->tier != MRC_TIER_HOST) {
			json_object_set_new(o, "tier", json_string(mrc_topo_tier_name(n->tier)));
			json_object_set_new(o, "plane", json_integer(n->plane));
		}
		json_object_set_new(o, "usid", usid_str(n->usid));
		json_array_append_new(n->tier == MRC_TIER_HOST ? hosts : sw, o);
	}
	for (uint32_t i = 0; i < t->n_links; i++) {
		const struct mrc_link *l = &t->links[i];
		json_t *o = json_object();
		if (!o)
			goto nomem;
		json_object_set_new(o, "a", json_string(t->nodes[l->lower].name));
		json_object_set_new(o, "b", json_string(t->nodes[l->upper].name));
		json_object_set_new(o, "mtu", json_integer(l->mtu));
		json_object_set_new(o, "rate_mbit", json_integer(l->rate_mbit));
		json_array_append_new(links, o);
	}
	json_object_set_new(root, "hosts", hosts);
	json_object_set_new(root, "switches", sw);
	json_object_set_new(root, "links", links);
	*text = json_dumps(root, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
	json_decref(root);
	return *text ? 0 : -ENOMEM;
nomem:
	json_decref(root);
	json_decref(hosts);
	json_decref(sw);
	json_decref(links);
	return -ENOMEM;
}
