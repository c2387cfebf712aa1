/* mrcctl probe: probes of a peer's paths started for one connection,
 * answered when every path replied or the timeout passed (oper.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/oper/oper.h"

void mrcd_oper_probe_clear(struct oper_conn *c)
{
	ev_timer_stop(mrcd_loop(c->o->d), &c->probe_tm);
	free(c->probe_ev);
	free(c->probe_rtt);
	free(c->probe_st);
	c->probe_ev = NULL;
	c->probe_rtt = NULL;
	c->probe_st = NULL;
	c->nprobe = c->probe_left = 0;
}

static void probe_done(struct oper_conn *c);

static void on_probe_timeout(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)revents;
	probe_done(w->data);
}

void mrcd_oper_probe_init(struct oper_conn *c)
{
	ev_init(&c->probe_tm, on_probe_timeout);
}

int mrcd_oper_probe_start(struct oper_conn *c, const struct mrc_oper_req *r, char *err, size_t errlen)
{
	struct oper *o = c->o;
	struct mrcd *d = o->d;
	uint32_t host, peer;
	if (mrcd_oper_find_host(d, r->peer, &host)) {
		snprintf(err, errlen, "no host '%s' in the topology", r->peer);
		return -ENOENT;
	}
	if (mrcd_topology(d) && host == mrcd_self_host(d)) {
		snprintf(err, errlen, "host '%s' is this node", r->peer);
		return -EINVAL;
	}
	struct mrcd_peer_view v, *p = &v;
	int rc = mrcd_peer_of_host(d, host, &peer);
	if (!rc)
		rc = mrcd_peer_get(d, peer, p);
	if (rc) {
		snprintf(err, errlen, "cannot create peer for host '%s': %s", r->peer, strerror(-rc));
		return rc;
	}
	c->probe_ev = calloc(p->nev, sizeof(*c->probe_ev));
	c->probe_rtt = calloc(p->nev, sizeof(*c->probe_rtt));
	c->probe_st = calloc(p->nev, 1);
	if (!c->probe_ev || !c->probe_rtt || !c->probe_st) {
		mrcd_oper_probe_clear(c);
		return -ENOMEM;
	}
	uint64_t now = mrcd_now();
	for (uint32_t ev = 0; ev < p->nev; ev++) {
		int pl, sp;
		mrcd_oper_ev_where(d, ev, &pl, &sp);
		if ((r->plane >= 0 && pl != r->plane) || (r->spine >= 0 && sp != r->spine))
			continue;
		if (p->deny[ev] & MRCD_DENY_MISSING)
			continue;   /* no such path for this pair */
		uint32_t k = c->nprobe++;
		c->probe_ev[k] = (uint16_t)ev;
		c->probe_rtt[k] = UINT64_MAX;
		rc = mrce_ev_probe(mrcd_engine(d), now, peer, ev);
		c->probe_st[k] = (int8_t)(rc ? rc : 0);
		if (!rc)
			c->probe_left++;
	}
	if (!c->nprobe) {
		mrcd_oper_probe_clear(c);
		snprintf(err, errlen, "host '%s' has no path in the selected plane/spine", r->peer);
		return -ENOENT;
	}
	c->probe_id = r->id;
	c->probe_peer = peer;
	c->probe_host = host;
	double tmo = (r->timeout_ms >= 0 ? r->timeout_ms : 1000) / 1000.0;
	ev_timer_init(&c->probe_tm, on_probe_timeout, tmo, 0);
	c->probe_tm.data = c;
	if (c->probe_left) {
		ev_io_stop(mrcd_loop(d), &c->io);   /* one request at a time */
		ev_timer_start(mrcd_loop(d), &c->probe_tm);
		mrcd_flush(d);
	} else {
		probe_done(c);
	}
	return 0;
}

static void probe_done(struct oper_conn *c)
{
	struct oper *o = c->o;
	struct mrcd *d = o->d;
	json_t *res = json_array();
	uint32_t ok = 0, lost = 0, nsent = 0;
	char name[64], addr[64];
	for (uint32_t k = 0; k < c->nprobe; k++) {
		uint32_t ev = c->probe_ev[k];
		int pl, sp;
		mrcd_oper_ev_where(d, ev, &pl, &sp);
		struct mrcd_peer_view p;
		if (mrcd_peer_get(d, c->probe_peer, &p))
			snprintf(addr, sizeof(addr), "::");
		else
			inet_ntop(AF_INET6, &p.dst[ev], addr, sizeof(addr));
		json_t *e = json_pack("{s:i, s:i, s:i, s:s}", "ev", (int)ev, "plane", pl, "spine", sp,
				      "address", addr);
		if (c->probe_st[k] < 0) {
			json_object_set_new(e, "result", json_string(c->probe_st[k] == -ENETDOWN ?
								    "denied" : "error"));
			json_object_set_new(e, "error", json_string(strerror(-c->probe_st[k])));
		} else if (c->probe_rtt[k] != UINT64_MAX) {
			json_object_set_new(e, "result", json_string("ok"));
			json_object_set_new(e, "rtt_us", json_real((double)c->probe_rtt[k] / 1e3));
			ok++;
			nsent++;
		} else {
			json_object_set_new(e, "result", json_string("lost"));
			lost++;
			nsent++;
		}
		json_array_append_new(res, e);
	}
	json_t *out = json_pack("{s:s, s:i, s:i, s:i, s:i, s:o}",
				"peer", mrcd_oper_host_name(d, c->probe_host, name, sizeof(name)),
				"host", (int)c->probe_host, "sent", (int)nsent, "answered", (int)ok,
				"lost", (int)lost, "results", res);
	uint32_t id = c->probe_id;
	mrcd_oper_probe_clear(c);
	ev_io_start(mrcd_loop(d), &c->io);
	mrcd_oper_reply(c, id, 0, NULL, out);
}

void mrcd_oper_probe_result(struct oper *o, uint32_t peer, uint32_t ev, uint64_t rtt)
{
	for (uint32_t i = 0; i < o->nslots; i++) {
		struct oper_conn *c = o->conns[i];
		if (!c || !c->probe_left || c->probe_peer != peer)
			continue;
		for (uint32_t k = 0; k < c->nprobe; k++)
			if (c->probe_ev[k] == ev && !c->probe_st[k] && c->probe_rtt[k] == UINT64_MAX) {
				c->probe_rtt[k] = rtt;
				if (!--c->probe_left)
					probe_done(c);
				break;
			}
	}
}
