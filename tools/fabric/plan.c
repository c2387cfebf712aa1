/* What each namespace gets: links up, link-local addresses, the static SID
 * routes (seg6local End next-csid on switches, a local route on hosts),
 * optional plain IPv6 ECMP routes, rate limits and sysctls.
 *
 * Configuration is written as `ip -b` / `tc -b` batches, one per namespace,
 * run in parallel.  Why not netlink from here: iproute2's seg6local
 * next-csid encoding is the one checked on this kernel (TESTBED-NOTES),
 * batches are as fast (about 10 ms per namespace, in parallel), and
 * `mrc-fabric -v up` can print exactly what was applied.  srv6/ computes
 * every address; srv6/nl reads the counters back.
 *
 * Link-local plan: on every link the lower-tier end is fe80::1 and the
 * upper-tier end fe80::2, so every static route names its next hop
 * without asking the kernel.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "topology/addr.h"
#include "tools/fabric/fabric.h"

void fab_sid_prefix(const struct fab *f, uint16_t usid, char *buf, size_t len)
{
	struct in6_addr a;
	unsigned plen;
	char s[INET6_ADDRSTRLEN];
	if (mrc_usid_node_prefix(&f->blk, usid, &a, &plen, NULL)) {
		snprintf(buf, len, "::/128");  /* unreachable: topology checked uSIDs */
		return;
	}
	inet_ntop(AF_INET6, &a, s, sizeof(s));
	snprintf(buf, len, "%s/%u", s, plen);
}

int fab_path_addr(const struct fab *f, const struct mrc_path *p, char *buf, size_t len)
{
	struct in6_addr a;
	struct mrc_srv6_err e;
	int rc = mrc_usid_encode(&f->blk, p->usids, p->n_usids, &a, &e);
	if (rc) {
		fab_err("path ev %u: %s", p->ev, e.msg);
		return rc;
	}
	inet_ntop(AF_INET6, &a, buf, (socklen_t)len);
	return 0;
}

bool fab_link_is_lower(const struct mrc_topo *t, uint32_t link, uint32_t node)
{
	return t->links[link].lower == node;
}

uint32_t fab_link_peer(const struct mrc_topo *t, uint32_t link, uint32_t node)
{
	const struct mrc_link *l = &t->links[link];
	return l->lower == node ? l->upper : l->lower;
}

/* Baseline address of host h in plane p: fdbb:bb00:P:H::1 (addr.h). */
static void base_prefix(char *buf, size_t len, uint32_t plane, int host)
{
	if (host < 0)
		snprintf(buf, len, "%x:%x:%x::/48", MRC_BASE_PREFIX_HI, MRC_BASE_PREFIX_LO, plane);
	else
		snprintf(buf, len, "%x:%x:%x:%x::/64", MRC_BASE_PREFIX_HI, MRC_BASE_PREFIX_LO,
			 plane, (unsigned)host);
}

static void plan_ecmp(const struct fab *f, uint32_t node, const char *verb, bool restore,
		      struct sbuf *ip)
{
	const struct mrc_topo *t = f->t;
	const struct mrc_node *n = &t->nodes[node];
	char pfx[64];
	if (n->tier == MRC_TIER_HOST) {
		for (uint32_t p = 0; p < t->planes; p++) {
			const char *dev = t->nodes[mrc_topo_host_leaf(t, n->index, p)].name;
			if (!restore)
				sb_printf(ip, "address add %x:%x:%x:%x::1/128 dev %s nodad\n",
					  MRC_BASE_PREFIX_HI, MRC_BASE_PREFIX_LO, p, n->index, dev);
			base_prefix(pfx, sizeof(pfx), p, -1);
			sb_printf(ip, "route %s %s via fe80::2 dev %s\n", verb, pfx, dev);
		}
		return;
	}
	if (n->tier == MRC_TIER_LEAF) {
		bool any = false;
		base_prefix(pfx, sizeof(pfx), n->plane, -1);
		for (uint32_t s = 0; s < t->n_spines[n->plane]; s++) {
			uint32_t l = t->leaf_spine[n->plane][(size_t)n->index * t->n_spines[n->plane] + s];
			if (l == MRC_TOPO_NONE)
				continue;
			if (!any)
				sb_printf(ip, "route %s %s", verb, pfx);
			any = true;
			sb_printf(ip, " nexthop via fe80::2 dev %s", t->nodes[t->spines[n->plane][s]].name);
		}
		if (any)
			sb_printf(ip, "\n");
	}
	/* Leaves: their own hosts; spines: every host whose leaf they reach. */
	for (uint32_t h = 0; h < t->n_hosts; h++) {
		uint32_t leaf = mrc_topo_host_leaf(t, h, n->plane), link;
		uint32_t hop = n->tier == MRC_TIER_LEAF ? t->hosts[h] : leaf;
		if (n->tier == MRC_TIER_LEAF && leaf != node)
			continue;
		if (mrc_topo_link_find(t, node, hop, &link))
			continue;
		base_prefix(pfx, sizeof(pfx), n->plane, (int)h);
		sb_printf(ip, "route %s %s via fe80::1 dev %s\n", verb, pfx, t->nodes[hop].name);
	}
}

/* The priority band of a rate-limited port, as a switch queues traffic
 * classes apart.  An HTB at the link's rate (sch_prio and sch_ets are not
 * in every kernel; htb, tbf and u32 are): class 1:10 takes the packets
 * marked with the urgent DSCP (the IPv6 traffic class, ECN bits masked),
 * 1:20 everything else.  Urgent is served first (prio 0, up to 90 % of
 * the rate guaranteed, the whole rate when the rest is idle); the rest
 * keeps 10 % under any urgent load and borrows whatever urgent leaves.
 * Each class queues what the tbf alone held (20 ms at the rate). */
static void plan_band(struct sbuf *tc, const char *dev, uint32_t rate_mbit, uint64_t burst,
		      int dscp)
{
	unsigned long long limit = (unsigned long long)rate_mbit * 1000000 / 8 / 50 + burst;
	uint32_t hi = rate_mbit - rate_mbit / 10, lo = rate_mbit / 10 ? rate_mbit / 10 : 1;
	sb_printf(tc, "qdisc add dev %s root handle 1: htb default 20\n", dev);
	sb_printf(tc, "class add dev %s parent 1: classid 1:1 htb rate %umbit ceil %umbit "
		  "burst %llu cburst %llu quantum 20000\n", dev, rate_mbit, rate_mbit,
		  (unsigned long long)burst, (unsigned long long)burst);
	sb_printf(tc, "class add dev %s parent 1:1 classid 1:10 htb rate %umbit ceil %umbit "
		  "burst %llu cburst %llu quantum 20000 prio 0\n", dev, hi ? hi : 1, rate_mbit,
		  (unsigned long long)burst, (unsigned long long)burst);
	sb_printf(tc, "class add dev %s parent 1:1 classid 1:20 htb rate %umbit ceil %umbit "
		  "burst %llu cburst %llu quantum 20000 prio 1\n", dev, lo, rate_mbit,
		  (unsigned long long)burst, (unsigned long long)burst);
	for (int c = 10; c <= 20; c += 10)
		sb_printf(tc, "qdisc add dev %s parent 1:%d handle %d: bfifo limit %llu\n",
			  dev, c, c, limit);
	sb_printf(tc, "filter add dev %s parent 1: protocol ipv6 prio 1 u32 "
		  "match ip6 priority 0x%02x 0xfc flowid 1:10\n", dev, (unsigned)dscp << 2);
}

void fab_plan_node(const struct fab *f, uint32_t node, bool restore,
		   struct sbuf *ip, struct sbuf *tc)
{
	const struct mrc_topo *t = f->t;
	const struct mrc_node *n = &t->nodes[node];
	const char *verb = restore ? "replace" : "add";
	char sid[64];
	if (!restore)
		sb_printf(ip, "link set lo up\n");
	for (uint32_t l = 0; l < t->n_links; l++) {
		const struct mrc_link *lk = &t->links[l];
		if (lk->lower != node && lk->upper != node)
			continue;
		bool lower = lk->lower == node;
		const struct mrc_node *peer = &t->nodes[lower ? lk->upper : lk->lower];
		sb_printf(ip, "link set %s up\n", peer->name);
		/* The kernel drops link-local addresses when a port goes down
		 * (keep_addr_on_down keeps only global ones): restore re-adds. */
		sb_printf(ip, "address %s fe80::%d/64 dev %s nodad\n", restore ? "replace" : "add",
			  lower ? 1 : 2, peer->name);
		if (!restore) {
			if (lk->rate_mbit) {
				/* Burst: two frames or 4 ms of traffic, whichever is more. */
				uint64_t burst = (uint64_t)lk->rate_mbit * 1000000 / 8 / 250;
				if (burst < 2ull * lk->mtu + 64)
					burst = 2ull * lk->mtu + 64;
				if (f->urgent_dscp >= 0)
					plan_band(tc, peer->name, lk->rate_mbit, burst, f->urgent_dscp);
				else
					sb_printf(tc, "qdisc add dev %s root tbf rate %umbit burst %llu latency 20ms\n",
						  peer->name, lk->rate_mbit, (unsigned long long)burst);
			}
		}
		fab_sid_prefix(f, peer->usid, sid, sizeof(sid));
		sb_printf(ip, "route %s %s via fe80::%d dev %s\n", verb, sid, lower ? 2 : 1,
			  peer->name);
	}
	fab_sid_prefix(f, n->usid, sid, sizeof(sid));
	if (n->tier == MRC_TIER_HOST) {
		if (!restore) {
			char a[64];
			snprintf(a, sizeof(a), "%s", sid);
			*strchr(a, '/') = 0;
			sb_printf(ip, "address add %s/128 dev lo nodad\n", a);
		}
		sb_printf(ip, "route %s local %s dev lo table local\n", verb, sid);
	} else {
		if (!restore)
			sb_printf(ip, "link set " FAB_SR_DEV " up\n");
		sb_printf(ip, "route %s %s encap seg6local action End flavors next-csid "
			  "lblen %u nflen %u count dev " FAB_SR_DEV "\n",
			  verb, sid, f->blk.bits, MRC_USID_LEN_BITS);
	}
	if (f->ecmp)
		plan_ecmp(f, node, verb, restore, ip);
}

static int set(const char *key, const char *val)
{
	int rc = mrc_nl_sysctl_set(key, val);
	if (rc)
		fab_err("sysctl %s=%s: %s", key, val, strerror(-rc));
	return rc;
}

int fab_sysctls(const struct fab *f, uint32_t node)
{
	const struct mrc_node *n = &f->t->nodes[node];
	bool sw = n->tier != MRC_TIER_HOST;
	static const char *const conf[] = { "all", "default" };
	char key[96];
	int rc;
	if ((rc = mrc_nl_sysctl_srv6_ns(sw, true)))
		return fab_err("SRv6 sysctls: %s", strerror(-rc)), rc;
	for (unsigned i = 0; i < 2; i++) {
		/* Keep our addresses over a loud failure (link down, then up). */
		snprintf(key, sizeof(key), "net/ipv6/conf/%s/keep_addr_on_down", conf[i]);
		if ((rc = set(key, "1")))
			return rc;
		snprintf(key, sizeof(key), "net/ipv6/conf/%s/accept_ra", conf[i]);
		if ((rc = set(key, "0")))
			return rc;
		snprintf(key, sizeof(key), "net/ipv6/conf/%s/router_solicitations", conf[i]);
		if ((rc = set(key, "0")))
			return rc;
	}
	/* ECMP baselines spread flows by their ports. */
	if (sw && f->ecmp && (rc = set("net/ipv6/fib_multipath_hash_policy", "1")))
		return rc;
	return 0;
}
