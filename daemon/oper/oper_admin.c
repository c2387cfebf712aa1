/* Admin verbs: `plane disable|enable P` and `path deny|allow PEER EV`.
 * The state is remembered, so peers created later get it too, and it
 * survives link changes (the core re-allows a plane's EVs when its NIC
 * comes back; oper_events.c denies the admin ones again). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "daemon/oper/oper.h"

static const struct in6_addr no_addr;

static int path_denied(struct oper *o, uint32_t host, uint32_t ev)
{
	for (uint32_t i = 0; i < o->npath_deny; i++)
		if (o->path_deny[i].host == host && o->path_deny[i].ev == ev)
			return 1;
	return 0;
}

int mrcd_oper_wants_denied(struct oper *o, uint32_t peer, uint32_t ev)
{
	struct mrcd *d = o->d;
	if (peer >= d->max_peers || !d->peers[peer].used || ev >= d->peers[peer].nev)
		return 0;
	const struct mrcd_peer *p = &d->peers[peer];
	if (d->topo && !memcmp(&p->dst[ev], &no_addr, sizeof(no_addr)))
		return 1;   /* no such path for this pair */
	return (o->admin_planes >> p->plane[ev] & 1) || path_denied(o, p->host, ev);
}

void mrcd_oper_admin_scan(struct oper *o)
{
	struct mrcd *d = o->d;
	uint64_t now = 0;
	for (uint32_t p = 0; p < d->max_peers; p++) {
		if (!d->peers[p].used || o->peer_seen[p])
			continue;
		o->peer_seen[p] = 1;
		if (!o->admin_planes && !o->npath_deny)
			continue;
		if (!now)
			now = mrcd_now();
		for (uint32_t ev = 0; ev < d->peers[p].nev; ev++)
			if (mrcd_oper_wants_denied(o, p, ev))
				mrc_ev_set_denied(d->eng, now, p, ev, 1);
	}
}

/* Allows an EV unless something else (admin, link, the peer's link)
 * still wants it denied. */
static int maybe_allow(struct oper *o, uint32_t peer, uint32_t ev, uint64_t now)
{
	struct mrcd *d = o->d;
	const struct mrcd_peer *p = &d->peers[peer];
	uint32_t bit = 1u << p->plane[ev];
	if (mrcd_oper_wants_denied(o, peer, ev) || ((d->local_down | p->remote_down) & bit))
		return 0;
	mrc_ev_set_denied(d->eng, now, peer, ev, 0);
	return 1;
}

int mrcd_oper_plane_admin(struct oper *o, struct oper_conn *c, int plane, int disable,
			  json_t **out, char *err, size_t errlen)
{
	struct mrcd *d = o->d;
	if (plane < 0 || (uint32_t)plane >= d->nplanes) {
		snprintf(err, errlen, "plane %d does not exist (this node has planes 0..%u)", plane,
			 d->nplanes - 1);
		return -ENOENT;
	}
	mrcd_oper_admin_scan(o);
	uint32_t bit = 1u << plane;
	int changed = !!(o->admin_planes & bit) != disable;
	o->admin_planes = disable ? o->admin_planes | bit : o->admin_planes & ~bit;
	uint64_t now = mrcd_now();
	uint32_t npeers = 0, nev = 0;
	for (uint32_t p = 0; p < d->max_peers; p++) {
		const struct mrcd_peer *pe = &d->peers[p];
		if (!pe->used)
			continue;
		npeers++;
		for (uint32_t ev = 0; ev < pe->nev; ev++) {
			if (pe->plane[ev] != (uint32_t)plane)
				continue;
			if (disable) {
				mrc_ev_set_denied(d->eng, now, p, ev, 1);
				nev++;
			} else {
				nev += (uint32_t)maybe_allow(o, p, ev, now);
			}
		}
	}
	if (changed)
		mrcd_oper_admin_note(o, "admin: plane %d %s by uid %u (pid %d): %u paths of %u peers %s",
				     plane, disable ? "disabled" : "enabled", (unsigned)c->uid,
				     (int)c->pid, nev, npeers, disable ? "denied" : "allowed (probed back to GOOD)");
	mrcd_flush(d);
	*out = json_pack("{s:i, s:s, s:b, s:i, s:i}", "plane", plane,
			 "admin", disable ? "disabled" : "enabled", "changed", changed,
			 "peers", (int)npeers, "evs", (int)nev);
	return 0;
}

int mrcd_oper_path_admin(struct oper *o, struct oper_conn *c, const char *peer, int ev,
			 int deny, json_t **out, char *err, size_t errlen)
{
	struct mrcd *d = o->d;
	uint32_t host, p;
	if (mrcd_oper_find_host(d, peer, &host)) {
		snprintf(err, errlen, "no host '%s' in the topology", peer);
		return -ENOENT;
	}
	if (d->topo && host == d->self) {
		snprintf(err, errlen, "host '%s' is this node", peer);
		return -EINVAL;
	}
	int rc = mrcd_peer_of_host(d, host, &p);
	if (rc) {
		snprintf(err, errlen, "cannot create peer for host '%s': %s", peer, strerror(-rc));
		return rc;
	}
	mrcd_oper_admin_scan(o);
	const struct mrcd_peer *pe = &d->peers[p];
	if ((uint32_t)ev >= pe->nev || (d->topo && !memcmp(&pe->dst[ev], &no_addr, sizeof(no_addr)))) {
		snprintf(err, errlen, "host '%s' has no path with ev %d", peer, ev);
		return -ENOENT;
	}
	int was = path_denied(o, host, (uint32_t)ev), changed = was != deny;
	if (deny && !was) {
		if (o->npath_deny == OPER_MAX_PATH_DENY) {
			snprintf(err, errlen, "too many denied paths (%d)", OPER_MAX_PATH_DENY);
			return -ENOSPC;
		}
		o->path_deny[o->npath_deny].host = host;
		o->path_deny[o->npath_deny++].ev = (uint32_t)ev;
	} else if (!deny && was) {
		for (uint32_t i = 0; i < o->npath_deny; i++)
			if (o->path_deny[i].host == host && o->path_deny[i].ev == (uint32_t)ev)
				o->path_deny[i] = o->path_deny[--o->npath_deny];
	}
	uint64_t now = mrcd_now();
	int allowed = 0;
	if (deny)
		mrc_ev_set_denied(d->eng, now, p, (uint32_t)ev, 1);
	else
		allowed = maybe_allow(o, p, (uint32_t)ev, now);
	struct mrc_ev_info i;
	mrc_ev_info(d->eng, p, (uint32_t)ev, &i);
	char name[64];
	mrcd_oper_host_name(d, host, name, sizeof(name));
	if (changed)
		mrcd_oper_admin_note(o, "admin: path %s ev %d %s by uid %u (pid %d)%s", name, ev,
				     deny ? "denied" : "allowed", (unsigned)c->uid, (int)c->pid,
				     !deny && !allowed ? "; still denied (plane disabled or link down)" : "");
	mrcd_flush(d);
	*out = json_pack("{s:s, s:i, s:i, s:s, s:b, s:s}", "peer", name, "host", (int)host,
			 "ev", ev, "admin", deny ? "denied" : "allowed", "changed", changed,
			 "state", mrc_ev_state_name(i.state));
	return 0;
}

/* Observer callbacks (daemon/core/mrcd.h): a new peer gets the admin
 * state at once, and the core asks before it re-allows a path after a link
 * change. */
void mrcd_oper_on_peer_added(void *arg, uint32_t peer)
{
	(void)peer;
	mrcd_oper_admin_scan(arg);
}

int mrcd_oper_on_denies(void *arg, uint32_t peer, uint32_t ev)
{
	return mrcd_oper_wants_denied(arg, peer, ev);
}
