/* Admin verbs: `plane disable|enable P` and `path deny|allow PEER EV`.
 * The core keeps the state (ADMIN_PLANE and ADMIN_PATH among a path's deny
 * reasons, daemon/core/deny.c), so peers created later get it too and it
 * survives link changes; oper_state.c keeps it across restarts. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "daemon/oper/oper.h"

int mrcd_oper_plane_admin(struct oper *o, struct oper_conn *c, int plane, int disable,
			  json_t **out, char *err, size_t errlen)
{
	struct mrcd *d = o->d;
	if (plane < 0 || (uint32_t)plane >= mrcd_n_planes(d)) {
		snprintf(err, errlen, "plane %d does not exist (this node has planes 0..%u)", plane,
			 mrcd_n_planes(d) - 1);
		return -ENOENT;
	}
	uint32_t bit = 1u << plane;
	int changed = !!(mrcd_admin_planes(d) & bit) != disable;
	uint32_t npeers, nev;
	mrcd_admin_plane(d, (uint32_t)plane, disable, &npeers, &nev);
	if (changed)
		mrcd_oper_admin_note(o, "admin: plane %d %s by uid %u (pid %d): %u paths of %u peers %s",
				     plane, disable ? "disabled" : "enabled", (unsigned)c->uid,
				     (int)c->pid, nev, npeers, disable ? "denied" : "allowed (probed back to GOOD)");
	if (changed)
		mrcd_oper_state_save(o);
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
	if (mrcd_topology(d) && host == mrcd_self_host(d)) {
		snprintf(err, errlen, "host '%s' is this node", peer);
		return -EINVAL;
	}
	struct mrcd_peer_view v, *pe = &v;   /* deny[] is the core's: it shows the change */
	int rc = mrcd_peer_of_host(d, host, &p);
	if (!rc)
		rc = mrcd_peer_get(d, p, pe);
	if (rc) {
		snprintf(err, errlen, "cannot create peer for host '%s': %s", peer, strerror(-rc));
		return rc;
	}
	if ((uint32_t)ev >= pe->nev || (pe->deny[ev] & MRCD_DENY_MISSING)) {
		snprintf(err, errlen, "host '%s' has no path with ev %d", peer, ev);
		return -ENOENT;
	}
	int was = !!(pe->deny[ev] & MRCD_DENY_ADMIN_PATH), changed = was != deny;
	mrcd_admin_path(d, p, (uint32_t)ev, deny);
	int allowed = !deny && !pe->deny[ev];
	struct mrce_ev_info i;
	mrce_ev_info(mrcd_engine(d), p, (uint32_t)ev, &i);
	char name[64];
	mrcd_oper_host_name(d, host, name, sizeof(name));
	if (changed)
		mrcd_oper_admin_note(o, "admin: path %s ev %d %s by uid %u (pid %d)%s", name, ev,
				     deny ? "denied" : "allowed", (unsigned)c->uid, (int)c->pid,
				     !deny && !allowed ? "; still denied (plane disabled or link down)" : "");
	if (changed)
		mrcd_oper_state_save(o);
	mrcd_flush(d);
	*out = json_pack("{s:s, s:i, s:i, s:s, s:b, s:s}", "peer", name, "host", (int)host,
			 "ev", ev, "admin", deny ? "denied" : "allowed", "changed", changed,
			 "state", mrce_ev_state_name(i.state));
	return 0;
}
