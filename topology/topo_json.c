/* The topology file (JSON, read with jansson).  Strict: unknown fields,
 * wrong types and out-of-range values are errors naming the field (as a
 * path such as switches[3].plane), the value and the rule.  Nothing is
 * returned unless the whole file is valid.  docs/fabric.md has the format.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "topology/addr.h"
#include "topology/topo_int.h"

struct ctx {
	char *err;
	size_t errlen;
};

#define ERR(c, ...) mrc__topo_err((c)->err, (c)->errlen, __VA_ARGS__)

/* Every key of obj must be in the NULL-terminated list allowed. */
static int only_fields(struct ctx *c, json_t *obj, const char *where,
		       const char *const *allowed)
{
	const char *key;
	json_t *v;
	json_object_foreach(obj, key, v) {
		const char *const *a = allowed;
		while (*a && strcmp(*a, key))
			a++;
		if (!*a)
			return ERR(c, "%s: unknown field '%s'", where, key);
	}
	return 0;
}

static int need_object(struct ctx *c, json_t *v, const char *where)
{
	if (!json_is_object(v))
		return ERR(c, "%s: must be an object", where);
	return 0;
}

/* An optional (def used when absent) or required unsigned integer. */
static int get_uint(struct ctx *c, json_t *obj, const char *key,
		    const char *where, uint32_t lo, uint32_t hi, int required,
		    uint32_t def, uint32_t *out)
{
	json_t *v = json_object_get(obj, key);
	if (!v) {
		if (required)
			return ERR(c, "%s: missing field '%s'", where, key);
		*out = def;
		return 0;
	}
	if (!json_is_integer(v))
		return ERR(c, "%s.%s: must be an integer", where, key);
	json_int_t x = json_integer_value(v);
	if (x < (json_int_t)lo || x > (json_int_t)hi)
		return ERR(c, "%s.%s: %lld is not in %u..%u", where, key,
			   (long long)x, lo, hi);
	*out = (uint32_t)x;
	return 0;
}

static int get_string(struct ctx *c, json_t *obj, const char *key,
		      const char *where, const char **out)
{
	json_t *v = json_object_get(obj, key);
	if (!v)
		return ERR(c, "%s: missing field '%s'", where, key);
	if (!json_is_string(v))
		return ERR(c, "%s.%s: must be a string", where, key);
	*out = json_string_value(v);
	return 0;
}

/* A uSID is an integer or a "0x..." hex string, 1..0xffff. */
static int get_usid(struct ctx *c, json_t *obj, const char *where, uint16_t *out)
{
	json_t *v = json_object_get(obj, "usid");
	long long x;
	if (!v)
		return ERR(c, "%s: missing field 'usid'", where);
	if (json_is_integer(v)) {
		x = json_integer_value(v);
	} else if (json_is_string(v)) {
		const char *s = json_string_value(v);
		size_t n = strlen(s);
		if (n < 3 || n > 6 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X') ||
		    strspn(s + 2, "0123456789abcdefABCDEF") != n - 2)
			return ERR(c, "%s.usid: '%s' is not an integer or a hex string like \"0x1a00\"",
				   where, s);
		x = strtoll(s + 2, NULL, 16);
	} else {
		return ERR(c, "%s.usid: must be an integer or a hex string", where);
	}
	if (x < 1 || x > 0xffff)
		return ERR(c, "%s.usid: %lld does not fit 16 bits (1..0xffff; 0 is End-of-Carrier)",
			   where, x);
	*out = (uint16_t)x;
	return 0;
}

static int get_name(struct ctx *c, json_t *obj, const char *where, char *out)
{
	const char *s;
	int rc = get_string(c, obj, "name", where, &s);
	if (rc)
		return rc;
	const char *why = mrc__topo_name_invalid(s);
	if (why)
		return ERR(c, "%s.name: '%.40s': %s", where, s, why);
	strcpy(out, s);
	return 0;
}

static int parse_generate(struct ctx *c, json_t *root, json_t *g,
			  uint32_t mtu, uint32_t rate, const char *block,
			  struct mrc_topo **out)
{
	static const char *const fields[] = { "planes", "leaves_per_plane",
		"spines_per_plane", "hosts_per_leaf", NULL };
	static const char *const top[] = { "version", "block", "mtu",
		"rate_mbit", "generate", NULL };
	struct mrc_topo_gen gen = { .mtu = mtu, .rate_mbit = rate, .block = block };
	int rc;
	if ((rc = only_fields(c, root, "top level (generate form)", top)) ||
	    (rc = need_object(c, g, "generate")) ||
	    (rc = only_fields(c, g, "generate", fields)) ||
	    (rc = get_uint(c, g, "planes", "generate", 1, MRC_TOPO_MAX_PLANES, 1, 0, &gen.planes)) ||
	    (rc = get_uint(c, g, "leaves_per_plane", "generate", 1, MRC_TOPO_MAX_PER_PLANE, 1, 0,
			   &gen.leaves_per_plane)) ||
	    (rc = get_uint(c, g, "spines_per_plane", "generate", 1, MRC_TOPO_MAX_PER_PLANE, 1, 0,
			   &gen.spines_per_plane)) ||
	    (rc = get_uint(c, g, "hosts_per_leaf", "generate", 1, MRC_TOPO_MAX_HOSTS, 1, 0,
			   &gen.hosts_per_leaf)))
		return rc;
	return mrc_topo_generate(&gen, out, c->err, c->errlen);
}

static int parse_nodes(struct ctx *c, struct mrc_topo *t, json_t *hosts,
		       json_t *switches)
{
	static const char *const hf[] = { "name", "usid", NULL };
	static const char *const sf[] = { "name", "tier", "plane", "usid", NULL };
	char where[48];
	uint32_t n = 0;
	int rc;
	for (size_t i = 0; i < json_array_size(hosts); i++) {
		json_t *h = json_array_get(hosts, i);
		struct mrc_node *x = &t->nodes[n++];
		snprintf(where, sizeof(where), "hosts[%zu]", i);
		if ((rc = need_object(c, h, where)) || (rc = only_fields(c, h, where, hf)) ||
		    (rc = get_name(c, h, where, x->name)) || (rc = get_usid(c, h, where, &x->usid)))
			return rc;
		x->tier = MRC_TIER_HOST;
	}
	for (size_t i = 0; i < json_array_size(switches); i++) {
		json_t *s = json_array_get(switches, i);
		struct mrc_node *x = &t->nodes[n++];
		const char *tier;
		uint32_t plane;
		snprintf(where, sizeof(where), "switches[%zu]", i);
		if ((rc = need_object(c, s, where)) || (rc = only_fields(c, s, where, sf)) ||
		    (rc = get_name(c, s, where, x->name)) ||
		    (rc = get_string(c, s, "tier", where, &tier)) ||
		    (rc = get_uint(c, s, "plane", where, 0, t->planes - 1, 1, 0, &plane)) ||
		    (rc = get_usid(c, s, where, &x->usid)))
			return rc;
		if (!strcmp(tier, "leaf"))
			x->tier = MRC_TIER_LEAF;
		else if (!strcmp(tier, "spine"))
			x->tier = MRC_TIER_SPINE;
		else
			return ERR(c, "%s.tier: '%.20s' is not \"leaf\" or \"spine\"", where, tier);
		x->plane = (uint8_t)plane;
	}
	return 0;
}

static int parse_links(struct ctx *c, struct mrc_topo *t, json_t *links,
		       uint32_t mtu, uint32_t rate)
{
	static const char *const lf[] = { "a", "b", "mtu", "rate_mbit", NULL };
	char where[48];
	int rc;
	for (size_t i = 0; i < json_array_size(links); i++) {
		json_t *l = json_array_get(links, i);
		struct mrc_link *x = &t->links[i];
		const char *a, *b;
		snprintf(where, sizeof(where), "links[%zu]", i);
		if ((rc = need_object(c, l, where)) || (rc = only_fields(c, l, where, lf)) ||
		    (rc = get_string(c, l, "a", where, &a)) ||
		    (rc = get_string(c, l, "b", where, &b)) ||
		    (rc = get_uint(c, l, "mtu", where, MRC_TOPO_MTU_MIN, MRC_TOPO_MTU_MAX, 0, mtu,
				   &x->mtu)) ||
		    (rc = get_uint(c, l, "rate_mbit", where, 0, MRC_TOPO_RATE_MAX_MBIT, 0, rate,
				   &x->rate_mbit)))
			return rc;
		if (mrc_topo_node_find(t, a, &x->lower))
			return ERR(c, "%s.a: no node named '%.40s'", where, a);
		if (mrc_topo_node_find(t, b, &x->upper))
			return ERR(c, "%s.b: no node named '%.40s'", where, b);
	}
	return 0;
}

static int parse_explicit(struct ctx *c, json_t *root, uint32_t mtu,
			  uint32_t rate, const char *block, struct mrc_topo **out)
{
	static const char *const top[] = { "version", "block", "mtu", "rate_mbit",
		"planes", "hosts", "switches", "links", NULL };
	uint32_t planes;
	int rc;
	if ((rc = only_fields(c, root, "top level", top)) ||
	    (rc = get_uint(c, root, "planes", "top level", 1, MRC_TOPO_MAX_PLANES, 1, 0, &planes)))
		return rc;
	json_t *hosts = json_object_get(root, "hosts");
	json_t *sw = json_object_get(root, "switches");
	json_t *links = json_object_get(root, "links");
	if (!json_is_array(hosts))
		return ERR(c, "hosts: %s", hosts ? "must be an array" : "missing (or use \"generate\")");
	if (!json_is_array(sw))
		return ERR(c, "switches: %s", sw ? "must be an array" : "missing");
	if (!json_is_array(links))
		return ERR(c, "links: %s", links ? "must be an array" : "missing");
	size_t nn = json_array_size(hosts) + json_array_size(sw);
	if (nn > 65535)
		return ERR(c, "%zu nodes: at most 65535 (one 16-bit uSID each)", nn);
	if (json_array_size(links) > 16u * 65535)
		return ERR(c, "links: %zu links is too many", json_array_size(links));
	struct mrc_topo *t = mrc__topo_alloc((uint32_t)nn, (uint32_t)json_array_size(links));
	if (!t)
		return ERR(c, "out of memory"), -ENOMEM;
	t->planes = planes;
	if ((rc = mrc__topo_block_parse(block, &t->block, &t->block_bits, c->err, c->errlen))) {
		mrc_topo_free(t);
		return rc;
	}
	if ((rc = parse_nodes(c, t, hosts, sw)) ||
	    (rc = mrc__topo_finish_nodes(t, c->err, c->errlen)) ||
	    (rc = parse_links(c, t, links, mtu, rate)) ||
	    (rc = mrc__topo_finish_links(t, c->err, c->errlen))) {
		mrc_topo_free(t);
		return rc;
	}
	*out = t;
	return 0;
}

int mrc_topo_parse_json(const char *text, size_t len, struct mrc_topo **out,
			char *err, size_t errlen)
{
	struct ctx c = { err, errlen };
	json_error_t je;
	json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	if (!root)
		return ERR(&c, "line %d column %d: %s", je.line, je.column, je.text);
	uint32_t version, mtu, rate;
	const char *block = MRC_BLOCK_DEFAULT;
	char why[128];
	struct in6_addr a;
	uint8_t bits;
	int rc;
	if ((rc = need_object(&c, root, "top level")) ||
	    (rc = get_uint(&c, root, "version", "top level", 0, UINT32_MAX, 1, 0, &version)))
		goto out;
	if (version != 1) {
		rc = ERR(&c, "version: %u is not supported (this build reads version 1)", version);
		goto out;
	}
	if (json_object_get(root, "block") &&
	    (rc = get_string(&c, root, "block", "top level", &block)))
		goto out;
	if (mrc__topo_block_parse(block, &a, &bits, why, sizeof(why))) {
		rc = ERR(&c, "block: '%.60s': %s", block, why);
		goto out;
	}
	if ((rc = get_uint(&c, root, "mtu", "top level", MRC_TOPO_MTU_MIN, MRC_TOPO_MTU_MAX, 0,
			   MRC_TOPO_MTU_DEFAULT, &mtu)) ||
	    (rc = get_uint(&c, root, "rate_mbit", "top level", 0, MRC_TOPO_RATE_MAX_MBIT, 0, 0,
			   &rate)))
		goto out;
	json_t *g = json_object_get(root, "generate");
	if (g)
		rc = parse_generate(&c, root, g, mtu, rate, block, out);
	else
		rc = parse_explicit(&c, root, mtu, rate, block, out);
out:
	json_decref(root);
	return rc;
}

int mrc_topo_load(const char *path, struct mrc_topo **out, char *err,
		  size_t errlen)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		int e = errno;
		if (err)
			snprintf(err, errlen, "%s: %s", path, strerror(e));
		return -e;
	}
	char *buf = NULL;
	size_t len = 0, cap = 0;
	for (;;) {
		if (len == cap) {
			cap = cap ? cap * 2 : 65536;
			char *nb = cap > (64u << 20) ? NULL : realloc(buf, cap);
			if (!nb) {
				free(buf);
				fclose(f);
				if (err)
					snprintf(err, errlen, "%s: too large or out of memory", path);
				return -EFBIG;
			}
			buf = nb;
		}
		size_t r = fread(buf + len, 1, cap - len, f);
		len += r;
		if (r == 0)
			break;
	}
	int bad = ferror(f);
	fclose(f);
	if (bad) {
		free(buf);
		if (err)
			snprintf(err, errlen, "%s: read error", path);
		return -EIO;
	}
	char msg[MRC_TOPO_ERRLEN];
	int rc = mrc_topo_parse_json(buf, len, out, msg, sizeof(msg));
	free(buf);
	if (rc && err)
		snprintf(err, errlen, "%s: %s", path, msg);
	return rc;
}
