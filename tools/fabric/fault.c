/* Faults, each reversible by `restore`:
 *   fail T          loud: the ports go down (both ends), the kernel flushes
 *                   the routes over them and senders get ICMPv6 errors;
 *   fail T --silent a blackhole: nftables drops everything arriving on the
 *                   ports except neighbour discovery, links stay up;
 *   drop T PCT      random loss of PCT % arriving on the ports (nftables);
 *   trim T PCT      the tc BPF trimmer on the ports' egress.
 * T is a link "A-B" (both ends, so both directions) or a node (all its
 * ports).  restore brings every port up, re-adds every static route
 * (`ip route replace`, since a port going down flushed them), deletes the
 * fault tables and the trimmers.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/fabric/fabric.h"

struct end {
	uint32_t node;   /* namespace */
	uint32_t peer;   /* port = the peer's name */
};

/* The ports a fault acts on. */
static int resolve(const struct fab *f, const char *target, bool peers_too,
		   struct end **ends, size_t *n)
{
	const struct mrc_topo *t = f->t;
	*ends = calloc(2 * (size_t)t->n_links + 2, sizeof(struct end));
	*n = 0;
	if (!*ends)
		return -ENOMEM;
	const char *dash = strchr(target, '-');
	uint32_t a, b, link;
	if (dash) {
		char left[MRC_TOPO_NAME_MAX + 2];
		size_t ln = (size_t)(dash - target);
		if (ln > MRC_TOPO_NAME_MAX || mrc_topo_node_find(t, dash + 1, &b))
			goto bad;
		memcpy(left, target, ln);
		left[ln] = 0;
		if (mrc_topo_node_find(t, left, &a) || mrc_topo_link_find(t, a, b, &link))
			goto bad;
		(*ends)[(*n)++] = (struct end){ a, b };
		(*ends)[(*n)++] = (struct end){ b, a };
		return 0;
	}
	if (mrc_topo_node_find(t, target, &a))
		goto bad;
	for (uint32_t l = 0; l < t->n_links; l++) {
		if (t->links[l].lower != a && t->links[l].upper != a)
			continue;
		b = fab_link_peer(t, l, a);
		(*ends)[(*n)++] = (struct end){ a, b };
		if (peers_too)
			(*ends)[(*n)++] = (struct end){ b, a };
	}
	return 0;
bad:
	fab_err("'%s' is neither a node nor a link (A-B) of fabric '%s'; see `mrc-fabric show`",
		target, f->prefix);
	free(*ends);
	*ends = NULL;
	return -ENOENT;
}

/* "12.5" -> 1250 (parts per 10000). */
static int parse_pct(const char *s, uint32_t *permyriad)
{
	char *e;
	double v = strtod(s, &e);
	if (e == s || *e || !(v >= 0 && v <= 100)) {
		fab_err("percentage '%s' is not a number in 0..100", s);
		return -EINVAL;
	}
	*permyriad = (uint32_t)lround(v * 100);
	return 0;
}

/* One batch per namespace touched, all run in parallel. */
static int per_ns(const struct fab *f, const struct end *ends, size_t n,
		  char *const argv[], const char *kind, uint32_t permyriad)
{
	struct fab_jobs *j = fab_jobs_new();
	if (!j)
		return -ENOMEM;
	int rc = 0;
	for (size_t i = 0; i < n && !rc; i++) {
		bool first = true;
		for (size_t k = 0; k < i; k++)
			if (ends[k].node == ends[i].node)
				first = false;
		if (!first)
			continue;
		struct sbuf b = {0};
		if (strcmp(kind, "down"))
			sb_printf(&b, "add table netdev " FAB_NFT_TABLE "\n");
		for (size_t k = i; k < n; k++) {
			if (ends[k].node != ends[i].node)
				continue;
			const char *dev = f->t->nodes[ends[k].peer].name;
			if (!strcmp(kind, "down")) {
				sb_printf(&b, "link set %s down\n", dev);
				continue;
			}
			sb_printf(&b, "add chain netdev " FAB_NFT_TABLE " %s_%s { type filter hook ingress "
				  "device \"%s\" priority -100; policy accept; }\n", kind, dev, dev);
			sb_printf(&b, "flush chain netdev " FAB_NFT_TABLE " %s_%s\n", kind, dev);
			/* Neighbour discovery passes: a silent fault must not turn
			 * into "address unreachable" errors. */
			sb_printf(&b, "add rule netdev " FAB_NFT_TABLE " %s_%s icmpv6 type "
				  "{ nd-neighbor-solicit, nd-neighbor-advert } accept\n", kind, dev);
			/* numgen's value must stay below its modulus: 100 % is a
			 * plain drop, 0 % no rule at all. */
			if (!strcmp(kind, "drop") && permyriad >= 10000)
				sb_printf(&b, "add rule netdev " FAB_NFT_TABLE " %s_%s counter drop\n",
					  kind, dev);
			else if (!strcmp(kind, "drop") && permyriad)
				sb_printf(&b, "add rule netdev " FAB_NFT_TABLE " %s_%s numgen random mod 10000 < %u counter drop\n",
					  kind, dev, permyriad);
			else if (!strcmp(kind, "drop"))
				;
			else
				sb_printf(&b, "add rule netdev " FAB_NFT_TABLE " %s_%s counter drop\n",
					  kind, dev);
		}
		char ns[FAB_NS_MAX], what[64];
		fab_ns_name(f, ends[i].node, ns);
		snprintf(what, sizeof(what), "%s in %s", argv[0], ns);
		if (f->verbose)
			printf("# %s: %s\n%s", ns, argv[0], b.p ? b.p : "");
		rc = b.oom ? -ENOMEM : fab_job_start(j, ns, argv, &b, false, what);
		sb_free(&b);
	}
	int rc2 = fab_jobs_wait(j);
	return rc ? rc : rc2;
}

int fab_fault(struct fab *f, const char *kind, const char *target, const char *arg,
	      bool silent)
{
	static char *const ip_batch[] = { "ip", "-b", "-", NULL };
	static char *const nft[] = { "nft", "-f", "-", NULL };
	uint32_t permyriad = 0;
	bool loud = !strcmp(kind, "fail") && !silent;
	struct end *ends;
	size_t n;
	int rc;
	if (arg && (rc = parse_pct(arg, &permyriad)))
		return rc;
	if ((rc = resolve(f, target, loud, &ends, &n)))
		return rc;
	char line[160];
	snprintf(line, sizeof(line), "%s %s%s%s", kind, target, loud ? " loud" : "",
		 !strcmp(kind, "fail") && silent ? " silent" : "");
	if (arg)
		snprintf(line + strlen(line), sizeof(line) - strlen(line), " %s%%", arg);
	/* Ledger first: if we die half-way, restore still knows. */
	if ((rc = fab_ledger_add(f, line)))
		fab_err("fault ledger: %s", strerror(-rc));
	if (loud)
		rc = per_ns(f, ends, n, ip_batch, "down", 0);
	else if (!strcmp(kind, "fail"))
		rc = per_ns(f, ends, n, nft, "fail", 0);
	else if (!strcmp(kind, "drop"))
		rc = per_ns(f, ends, n, nft, "drop", permyriad);
	else {
		for (size_t i = 0; i < n && !rc; i++) {
			char ns[FAB_NS_MAX];
			fab_ns_name(f, ends[i].node, ns);
			rc = fab_trim_attach(ns, f->t->nodes[ends[i].peer].name, permyriad);
		}
	}
	free(ends);
	if (!rc && !f->json)
		printf("%s\n", line);
	else if (!rc)
		printf("{\"fault\":\"%s\",\"target\":\"%s\",\"ports\":%zu}\n", kind, target, n);
	return rc;
}

int fab_restore(struct fab *f)
{
	static char *const ip_force[] = { "ip", "-force", "-b", "-", NULL };
	static char *const nft[] = { "nft", "-f", "-", NULL };
	const struct mrc_topo *t = f->t;
	struct fab_jobs *j = fab_jobs_new();
	if (!j)
		return -ENOMEM;
	int rc = 0;
	struct sbuf del = {0};
	sb_printf(&del, "add table netdev " FAB_NFT_TABLE "\ndelete table netdev " FAB_NFT_TABLE "\n");
	for (uint32_t i = 0; i < t->n_nodes && !rc; i++) {
		struct sbuf ip = {0}, tc = {0};
		char ns[FAB_NS_MAX], what[64];
		fab_ns_name(f, i, ns);
		fab_plan_node(f, i, true, &ip, &tc);
		snprintf(what, sizeof(what), "ip restore batch in %s", ns);
		rc = ip.oom ? -ENOMEM : fab_job_start(j, ns, ip_force, &ip, false, what);
		snprintf(what, sizeof(what), "nft in %s", ns);
		if (!rc)
			rc = fab_job_start(j, ns, nft, &del, false, what);
		sb_free(&ip);
		sb_free(&tc);
		for (uint32_t l = 0; l < t->n_links && !rc; l++)
			if (t->links[l].lower == i || t->links[l].upper == i)
				rc = fab_trim_detach(ns, t->nodes[fab_link_peer(t, l, i)].name);
	}
	sb_free(&del);
	int rc2 = fab_jobs_wait(j);
	if (!rc && !rc2)
		fab_ledger_clear(f);
	if (!rc && !rc2 && f->json)
		printf("{\"restored\":true}\n");
	else if (!rc && !rc2)
		printf("fabric '%s' restored\n", f->prefix);
	return rc ? rc : rc2;
}
