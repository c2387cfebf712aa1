/* Read-only commands: show, path, counters. */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "srv6/nl.h"
#include "tools/fabric/fabric.h"

static void print_json(json_t *v)
{
	char *s = json_dumps(v, JSON_COMPACT | JSON_PRESERVE_ORDER);
	if (s)
		puts(s);
	free(s);
	json_decref(v);
}

static json_t *usid_json(uint16_t u)
{
	char b[8];
	snprintf(b, sizeof(b), "0x%04x", u);
	return json_string(b);
}

int fab_show(const struct fab *f)
{
	const struct mrc_topo *t = f->t;
	char block[MRC_USID_BLOCK_STRLEN], sid[64], ns[FAB_NS_MAX];
	mrc_usid_block_format(&f->blk, block, sizeof(block));
	char **faults = fab_ledger_read(f);
	json_t *root = json_object(), *nodes = json_array(), *links = json_array(),
	       *fl = json_array();
	json_object_set_new(root, "prefix", json_string(f->prefix));
	json_object_set_new(root, "block", json_string(block));
	json_object_set_new(root, "planes", json_integer(t->planes));
	json_object_set_new(root, "hosts", json_integer(t->n_hosts));
	json_object_set_new(root, "ev_count", json_integer(mrc_topo_ev_count(t)));
	json_object_set_new(root, "ecmp", json_boolean(f->ecmp));
	for (uint32_t i = 0; i < t->n_nodes; i++) {
		const struct mrc_node *n = &t->nodes[i];
		fab_sid_prefix(f, n->usid, sid, sizeof(sid));
		fab_ns_name(f, i, ns);
		json_t *o = json_pack("{s:s, s:s, s:i, s:i, s:o, s:s, s:s}", "name", n->name,
				      "tier", mrc_topo_tier_name(n->tier), "plane", n->plane,
				      "index", n->index, "usid", usid_json(n->usid), "sid", sid,
				      "namespace", ns);
		if (n->tier == MRC_TIER_HOST) {
			json_object_del(o, "plane");
			json_t *nics = json_array();
			for (uint32_t p = 0; p < t->planes; p++) {
				const char *leaf = t->nodes[mrc_topo_host_leaf(t, n->index, p)].name;
				json_array_append_new(nics, json_pack("{s:i, s:s, s:s}", "plane", p,
								      "dev", leaf, "leaf", leaf));
			}
			json_object_set_new(o, "nics", nics);
		}
		json_array_append_new(nodes, o);
	}
	for (uint32_t i = 0; i < t->n_links; i++) {
		const struct mrc_link *l = &t->links[i];
		const char *a = t->nodes[l->lower].name, *b = t->nodes[l->upper].name;
		json_array_append_new(links, json_pack("{s:s, s:s, s:i, s:i, s:i, s:s, s:s}",
			"a", a, "b", b, "plane", l->plane, "mtu", l->mtu, "rate_mbit", l->rate_mbit,
			"dev_in_a", b, "dev_in_b", a));
	}
	for (size_t i = 0; faults && faults[i]; i++)
		json_array_append_new(fl, json_string(faults[i]));
	fab_ledger_free(faults);
	json_object_set_new(root, "nodes", nodes);
	json_object_set_new(root, "links", links);
	json_object_set_new(root, "faults", fl);
	if (f->json) {
		print_json(root);
		return 0;
	}
	printf("fabric '%s': block %s, %u planes, %u hosts, %u switches, %u links, %u EVs%s\n",
	       f->prefix, block, t->planes, t->n_hosts, t->n_nodes - t->n_hosts, t->n_links,
	       mrc_topo_ev_count(t), f->ecmp ? ", ECMP baseline routes" : "");
	size_t i;
	json_t *v;
	printf("%-16s %-6s %-5s %-7s %-22s %s\n", "NODE", "TIER", "PLANE", "USID", "SID", "NAMESPACE");
	json_array_foreach(nodes, i, v) {
		json_t *pl = json_object_get(v, "plane");
		char plane[8] = "-";
		if (pl)
			snprintf(plane, sizeof(plane), "%lld", (long long)json_integer_value(pl));
		printf("%-16s %-6s %-5s %-7s %-22s %s\n", json_string_value(json_object_get(v, "name")),
		       json_string_value(json_object_get(v, "tier")), plane,
		       json_string_value(json_object_get(v, "usid")),
		       json_string_value(json_object_get(v, "sid")),
		       json_string_value(json_object_get(v, "namespace")));
	}
	printf("%-34s %-5s %-6s %s\n", "LINK (port in A is named B and back)", "PLANE", "MTU", "RATE");
	for (uint32_t k = 0; k < t->n_links; k++) {
		const struct mrc_link *l = &t->links[k];
		char name[40], rate[24] = "-";
		snprintf(name, sizeof(name), "%s-%s", t->nodes[l->lower].name, t->nodes[l->upper].name);
		if (l->rate_mbit)
			snprintf(rate, sizeof(rate), "%u Mbit/s", l->rate_mbit);
		printf("%-34s %-5u %-6u %s\n", name, l->plane, l->mtu, rate);
	}
	json_array_foreach(fl, i, v)
		printf("fault: %s\n", json_string_value(v));
	json_decref(root);
	return 0;
}

static json_t *path_json(const struct fab *f, const struct mrc_path *p, const char *addr)
{
	const struct mrc_topo *t = f->t;
	json_t *sw = json_array(), *ln = json_array(), *us = json_array();
	for (unsigned i = 0; i < p->n_switches; i++)
		json_array_append_new(sw, json_string(t->nodes[p->switches[i]].name));
	for (unsigned i = 0; i < p->n_links; i++) {
		char b[40];
		const struct mrc_link *l = &t->links[p->links[i]];
		snprintf(b, sizeof(b), "%s-%s", t->nodes[l->lower].name, t->nodes[l->upper].name);
		json_array_append_new(ln, json_string(b));
	}
	for (unsigned i = 0; i < p->n_usids; i++)
		json_array_append_new(us, usid_json(p->usids[i]));
	return json_pack("{s:i, s:i, s:o, s:s, s:o, s:o, s:o}", "ev", p->ev, "plane", p->plane,
			 "spine", p->spine == MRC_PATH_SPINE_DIRECT ? json_null() : json_integer(p->spine),
			 "addr", addr, "switches", sw, "links", ln, "usids", us);
}

int fab_host_arg(const struct fab *f, const char *name, uint32_t *h)
{
	if (mrc_topo_host_lookup(f->t, name, h)) {
		fab_err("'%s' is not a host of this topology", name);
		return -ENOENT;
	}
	return 0;
}

int fab_num(const char *name, const char *arg, long lo, long hi, long *out)
{
	char *end;
	errno = 0;
	long v = strtol(arg, &end, 10);
	if (errno || end == arg || *end || v < lo || v > hi) {
		fab_err("--%s '%s': want a whole number from %ld to %ld", name, arg, lo, hi);
		return -EINVAL;
	}
	*out = v;
	return 0;
}

int fab_sel_opt(struct fab_sel *s, int c, const char *arg)
{
	switch (c) {
	case 'P': return fab_num("plane", arg, 0, MRC_TOPO_MAX_PLANES - 1, &s->plane) ?: 1;
	case 'S': return fab_num("spine", arg, 0, INT32_MAX, &s->spine) ?: 1;
	case 'E': return fab_num("ev", arg, 0, INT32_MAX, &s->ev) ?: 1;
	case 'D': s->direct = true; return 1;
	default: return 0;
	}
}

int fab_sel_ev(const struct fab *f, const struct fab_sel *s, long *ev)
{
	*ev = s->ev;
	if (s->plane < 0 && s->spine < 0 && !s->direct)
		return 0;
	if (s->plane < 0 || (s->spine < 0) == !s->direct || s->ev >= 0) {
		fab_err("give --plane P with exactly one of --spine S or --direct, or --ev E alone");
		return -EINVAL;
	}
	*ev = mrc_topo_ev_of(f->t, (uint32_t)s->plane,
			     s->direct ? MRC_PATH_SPINE_DIRECT : (uint32_t)s->spine);
	if (*ev < 0) {
		fab_err("plane %ld / spine %ld: no such plane or spine", s->plane, s->spine);
		return -EINVAL;
	}
	return 0;
}

int fab_path(const struct fab *f, int argc, char **argv)
{
	static const struct option opts[] = { FAB_SEL_OPTIONS, { NULL, 0, NULL, 0 } };
	struct fab_sel sel = FAB_SEL_INIT;
	int c, rc;
	optind = 0;  /* 0: glibc re-initialises (main used getopt already) */
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1)
		if ((rc = fab_sel_opt(&sel, c, optarg)) <= 0)
			return -EINVAL;
	if (argc - optind != 2) {
		fab_err("usage: path SRC DST [--plane P (--spine S | --direct) | --ev E]");
		return -EINVAL;
	}
	uint32_t a, b;
	long ev;
	if ((rc = fab_host_arg(f, argv[optind], &a)) || (rc = fab_host_arg(f, argv[optind + 1], &b)))
		return rc;
	if (a == b) {
		fab_err("source and destination are the same host");
		return -EINVAL;
	}
	if ((rc = fab_sel_ev(f, &sel, &ev)))
		return rc;
	struct mrc_path p;
	char addr[INET6_ADDRSTRLEN];
	if (ev >= 0) {
		rc = mrc_topo_path(f->t, a, b, (uint32_t)ev, &p);
		if (rc) {
			fab_err("%s -> %s has no path with EV %ld (%s)", argv[optind], argv[optind + 1], ev,
				rc == -ENOENT ? "its links do not exist, or the hosts share no leaf"
					      : "EV out of range");
			return rc;
		}
		if ((rc = fab_path_addr(f, &p, addr, sizeof(addr))))
			return rc;
		if (f->json)
			print_json(path_json(f, &p, addr));
		else
			printf("%s\n", addr);
		return 0;
	}
	json_t *all = json_array();
	for (uint32_t e = 0; e < mrc_topo_ev_count(f->t); e++) {
		if (mrc_topo_path(f->t, a, b, e, &p) || fab_path_addr(f, &p, addr, sizeof(addr)))
			continue;
		json_array_append_new(all, path_json(f, &p, addr));
		if (!f->json) {
			printf("ev %-3u plane %-2u ", e, p.plane);
			if (p.spine == MRC_PATH_SPINE_DIRECT)
				printf("direct   ");
			else
				printf("spine %-3u", p.spine);
			printf(" %-40s", addr);
			for (unsigned i = 0; i < p.n_switches; i++)
				printf(" %s", f->t->nodes[p.switches[i]].name);
			printf("\n");
		}
	}
	if (f->json)
		print_json(all);
	else
		json_decref(all);
	return 0;
}

struct cnt_ctx {
	const struct fab *f;
	const char *node;
	json_t *out;
};

static int one_sid(const struct mrc_nl_seg6local_info *info, void *arg)
{
	struct cnt_ctx *c = arg;
	char a[INET6_ADDRSTRLEN], sid[64];
	inet_ntop(AF_INET6, &info->route.sid, a, sizeof(a));
	snprintf(sid, sizeof(sid), "%s/%u", a, info->route.sid_len);
	json_array_append_new(c->out, json_pack("{s:s, s:s, s:I, s:I, s:I}", "node", c->node,
		"sid", sid, "packets", (json_int_t)info->cnt.packets,
		"bytes", (json_int_t)info->cnt.bytes, "errors", (json_int_t)info->cnt.errors));
	return 0;
}

int fab_counters(const struct fab *f, int argc, char **argv)
{
	const struct mrc_topo *t = f->t;
	json_t *out = json_array();
	int rc = 0;
	for (int k = 1; k < argc; k++) {
		uint32_t id;
		if (mrc_topo_node_find(t, argv[k], &id)) {
			fab_err("'%s' is not a node of this topology", argv[k]);
			json_decref(out);
			return -ENOENT;
		}
	}
	for (uint32_t i = 0; i < t->n_nodes && !rc; i++) {
		const struct mrc_node *n = &t->nodes[i];
		bool want = argc <= 1 && n->tier != MRC_TIER_HOST;
		for (int k = 1; k < argc; k++)
			want |= !strcmp(argv[k], n->name);
		if (!want)
			continue;
		char ns[FAB_NS_MAX], path[64];
		fab_ns_name(f, i, ns);
		snprintf(path, sizeof(path), "/run/netns/%s", ns);
		FILE *fp = fopen(path, "r");
		if (!fp) {
			fab_err("namespace %s is missing: is fabric '%s' up?", ns, f->prefix);
			rc = -ENOENT;
			break;
		}
		struct mrc_nl *nl;
		rc = mrc_nl_open_netns(fileno(fp), &nl);
		fclose(fp);
		if (rc)
			break;
		struct cnt_ctx c = { f, n->name, out };
		rc = mrc_nl_seg6local_dump(nl, 0, one_sid, &c);
		mrc_nl_close(nl);
	}
	if (rc) {
		fab_err("reading counters: %s", strerror(-rc));
		json_decref(out);
		return rc;
	}
	if (f->json) {
		print_json(out);
		return 0;
	}
	size_t i;
	json_t *v;
	printf("%-16s %-24s %10s %12s %8s\n", "NODE", "SID", "PACKETS", "BYTES", "ERRORS");
	json_array_foreach(out, i, v)
		printf("%-16s %-24s %10lld %12lld %8lld\n", json_string_value(json_object_get(v, "node")),
		       json_string_value(json_object_get(v, "sid")),
		       (long long)json_integer_value(json_object_get(v, "packets")),
		       (long long)json_integer_value(json_object_get(v, "bytes")),
		       (long long)json_integer_value(json_object_get(v, "errors")));
	json_decref(out);
	return 0;
}
