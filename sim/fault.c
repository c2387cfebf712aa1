/* Faults at given times: link or switch down (loud: queues are lost and a
 * host whose own NIC link goes down stops using that plane, as mrcd's link
 * monitor makes it), silent blackholes, random loss, and recovery; and the
 * failover analysis after the run (detection from the EV events, goodput
 * recovery of the flows whose paths cross the fault). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errf.h"
#include "sim/sim_int.h"

enum { T_NODE = 0, T_LINK = 1, T_PORT = 2 };

const char *sim_fault_kind_name(uint8_t k)
{
	static const char *n[] = { "down", "blackhole", "loss", "recover" };
	return k < 4 ? n[k] : "?";
}

/* Resolves "NODE", "A-B" (both directions) or "A>B" (one direction). */
static int resolve(const struct mrc_sim *s, const char *t, uint8_t *kind,
		   uint32_t *id, char *err, size_t errlen, uint32_t i)
{
	char a[MRC_SIM_NAME_MAX], *b;
	snprintf(a, sizeof(a), "%s", t);
	uint8_t k = T_NODE;
	if ((b = strchr(a, '-')))
		k = T_LINK;
	else if ((b = strchr(a, '>')))
		k = T_PORT;
	if (b)
		*b++ = 0;
	uint32_t na, nb, link;
	if (sim_fabric_node(&s->fab, a, &na))
		return mrc__errf(err, errlen, "fault[%u]: target '%s': no node named '%s'",
				 i, t, a);
	if (k == T_NODE) {
		if (s->fab.nodes[na].tier == 0)
			return mrc__errf(err, errlen,
					 "fault[%u]: target '%s': a host; name one of its links (%s-<leaf>)",
					 i, t, a);
		*kind = k;
		*id = na;
		return 0;
	}
	if (sim_fabric_node(&s->fab, b, &nb))
		return mrc__errf(err, errlen, "fault[%u]: target '%s': no node named '%s'",
				 i, t, b);
	if (sim_fabric_link(&s->fab, na, nb, &link))
		return mrc__errf(err, errlen, "fault[%u]: target '%s': %s and %s are not linked",
				 i, t, a, b);
	*kind = k;
	*id = k == T_LINK ? link : link * 2 + (s->fab.lower[link] == na ? 0 : 1);
	return 0;
}

static uint32_t target_ports(const struct mrc_sim *s, const struct sim_fault_rec *r,
			     uint32_t *out, uint32_t max);
static uint32_t mark_affected(struct mrc_sim *s, const uint32_t *ports, uint32_t np);

int sim_faults_check(struct mrc_sim *s, char *err, size_t errlen)
{
	for (uint32_t i = 0; i < s->cfg.n_faults; i++) {
		struct sim_fault_rec *r = &s->frec[i];
		int rc = resolve(s, s->cfg.faults[i].target, &r->tgt_kind, &r->tgt,
				 err, errlen, i);
		if (rc)
			return rc;
		r->t_ps = s->cfg.faults[i].at_ns * SIM_PS_PER_NS;
		r->recover_ps = -1;
	}
	return 0;
}

/* Marks the flows whose paths (either direction) cross a fault's target
 * before the run, so their goodput is tracked before the fault too. */
int sim_faults_mark(struct mrc_sim *s)
{
	for (uint32_t i = 0; i < s->cfg.n_faults; i++) {
		struct sim_fault_rec *r = &s->frec[i];
		if (s->cfg.faults[i].kind == MRC_SIM_F_RECOVER)
			continue;
		uint32_t cap = 2;
		if (r->tgt_kind == T_NODE)
			cap = 2 * (s->fab.adj_off[r->tgt + 1] - s->fab.adj_off[r->tgt]);
		uint32_t *ports = malloc(cap * sizeof(*ports));
		if (!ports)
			return -ENOMEM;
		uint32_t np = target_ports(s, r, ports, cap);
		r->affected = mark_affected(s, ports, np);
		free(ports);
	}
	return 0;
}

/* Ports a fault target covers, into out (returns the count). */
static uint32_t target_ports(const struct mrc_sim *s, const struct sim_fault_rec *r,
			     uint32_t *out, uint32_t max)
{
	uint32_t n = 0;
	if (r->tgt_kind == T_PORT) {
		out[n++] = r->tgt;
	} else if (r->tgt_kind == T_LINK) {
		out[n++] = r->tgt * 2;
		out[n++] = r->tgt * 2 + 1;
	} else {
		const struct sim_fabric *f = &s->fab;
		for (uint32_t i = f->adj_off[r->tgt]; i < f->adj_off[r->tgt + 1] && n + 2 <= max; i++) {
			out[n++] = f->adj[i] * 2;
			out[n++] = f->adj[i] * 2 + 1;
		}
	}
	return n;
}

static int route_crosses(const struct mrc_sim *s, const uint32_t *route, int n,
			 const uint32_t *ports, uint32_t np)
{
	for (int h = 0; h < n; h++)
		for (uint32_t i = 0; i < np; i++)
			if (route[h] == ports[i])
				return 1;
	return 0;
}

static uint32_t mark_affected(struct mrc_sim *s, const uint32_t *ports, uint32_t np)
{
	uint32_t route[SIM_MAX_HOPS], count = 0;
	for (uint32_t f = 0; f < s->n_flows; f++) {
		struct sim_flow *fl = &s->flows[f];
		for (uint32_t ev = 0; ev < s->fab.nev; ev++) {
			int n = sim_fabric_route(&s->fab, fl->src, fl->dst, ev, route);
			int m = n > 0 ? n : 0;
			int back = 0;
			if (!route_crosses(s, route, m, ports, np)) {
				/* ACKs take the reverse path. */
				n = sim_fabric_route(&s->fab, fl->dst, fl->src, ev, route);
				back = n > 0 && route_crosses(s, route, n, ports, np);
				if (!back)
					continue;
			}
			fl->affected = 1;
			count++;
			break;
		}
	}
	return count;
}

void sim_fault_apply(struct mrc_sim *s, uint32_t i)
{
	const struct mrc_sim_fault *fc = &s->cfg.faults[i];
	struct sim_fault_rec *r = &s->frec[i];
	uint32_t cap = 2 * (s->fab.n_links + 1);
	uint32_t small[2], *ports = small;
	if (r->tgt_kind == T_NODE) {
		uint32_t deg = s->fab.adj_off[r->tgt + 1] - s->fab.adj_off[r->tgt];
		cap = 2 * deg;
		ports = malloc(cap * sizeof(*ports));
		if (!ports)
			return;
	} else {
		cap = 2;
	}
	uint32_t np = target_ports(s, r, ports, cap);
	for (uint32_t k = 0; k < np; k++) {
		struct sim_port *p = &s->ports[ports[k]];
		uint8_t was = p->state;
		switch (fc->kind) {
		case MRC_SIM_F_DOWN:
			p->state = PS_DOWN;
			sim_port_flush(s, ports[k]);
			break;
		case MRC_SIM_F_BLACKHOLE:
			p->state = PS_BLACKHOLE;
			break;
		case MRC_SIM_F_LOSS:
			p->state = PS_LOSS;
			s->pcold[ports[k]].loss_thr = fc->loss >= 1.0 ? UINT64_MAX :
				      (uint64_t)(fc->loss * 18446744073709551616.0);
			break;
		default:
			p->state = PS_OK;
			s->pcold[ports[k]].loss_thr = 0;
		}
		/* Loud failures of a host's own NIC link: its link monitor
		 * takes the plane out of service, and back after recovery. */
		uint32_t l = ports[k] >> 1;
		uint32_t lo = s->fab.lower[l];
		if ((ports[k] & 1) || s->fab.nodes[lo].tier != 0)
			continue;
		uint32_t plane = s->fab.nodes[s->fab.upper[l]].plane;
		int denied = (s->hosts[lo].denied_planes >> plane) & 1;
		if (p->state == PS_DOWN && !denied)
			sim_host_plane_link(s, lo, plane, 1);
		else if (was == PS_DOWN && p->state != PS_DOWN && denied)
			sim_host_plane_link(s, lo, plane, 0);
	}
	if (ports != small)
		free(ports);
}

/* ---- analysis ---------------------------------------------------------- */

void sim_faults_analyse(struct mrc_sim *s)
{
	for (uint32_t i = 0; i < s->cfg.n_faults; i++) {
		struct sim_fault_rec *r = &s->frec[i];
		if (s->cfg.faults[i].kind == MRC_SIM_F_RECOVER || r->t_ps > s->now)
			continue;
		uint64_t until = s->now;
		for (uint32_t j = 0; j < s->cfg.n_faults; j++)
			if (s->frec[j].t_ps > r->t_ps && s->frec[j].t_ps < until)
				until = s->frec[j].t_ps;
		r->first_bad_ps = r->last_bad_ps = 0;
		r->bad_evs = 0;
		for (uint32_t e = 0; e < s->n_evc; e++) {
			const struct mrc_sim_ev_change *c = &s->evc[e];
			uint64_t t = c->t_ns * SIM_PS_PER_NS;
			if (t < r->t_ps || t >= until || c->new_state != MRCE_EV_ASSUMED_BAD)
				continue;
			if (!r->bad_evs)
				r->first_bad_ps = t;
			r->last_bad_ps = t;
			r->bad_evs++;
		}
		/* Goodput of the affected flows: the rate over up to 10 bins
		 * before the fault; recovered at the first of 3 bins in a row
		 * back at >= 90% of it, after a bin below it.  The window ends
		 * at the next fault or the first affected flow's completion. */
		uint64_t B = s->bin_ps;
		uint32_t bf = (uint32_t)(r->t_ps / B);
		for (uint32_t f = 0; f < s->n_flows; f++) {
			const struct sim_flow *fl = &s->flows[f];
			if (fl->affected && fl->end_ps > r->t_ps && fl->end_ps < until)
				until = fl->end_ps;
		}
		uint32_t bend = (uint32_t)(until / B);
		if (bend > s->n_bins)
			bend = s->n_bins;
		uint32_t w = bf < 10 ? bf : 10;
		if (!w || bf >= bend)
			continue;
		uint64_t pre = 0;
		for (uint32_t b = bf - w; b < bf; b++)
			pre += s->gp_aff[b];
		double thr = 0.9 * (double)pre / w;
		r->pre_gbps = (double)pre / w * 8.0 / ((double)B / 1000.0);
		int dipped = 0;
		for (uint32_t b = bf; b < bend; b++) {
			if ((double)s->gp_aff[b] < thr) {
				dipped = 1;
				continue;
			}
			if (b + 3 > bend)
				break;
			int ok = 1;
			for (uint32_t c = b; c < b + 3; c++)
				ok &= (double)s->gp_aff[c] >= thr;
			if (!ok)
				continue;
			r->recover_ps = dipped ? (int64_t)(b * B - r->t_ps) : 0;
			if (dipped && r->recover_ps < 0)
				r->recover_ps = 0;
			break;
		}
	}
}
