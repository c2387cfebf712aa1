/* The simulator's recorder: goodput per time bin, path-state changes and
 * counted events as a run goes, and the accessors a report reads after
 * it (sim.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim_int.h"

#define EVC_MAX (1u << 20)   /* EV changes kept in detail (all counted) */

void sim_goodput_add(struct mrc_sim *s, uint32_t flow, uint64_t bytes)
{
	uint64_t b = s->now / s->bin_ps;
	if (b >= s->cap_bins) {
		uint64_t nc = s->cap_bins ? s->cap_bins : 1024;
		while (nc <= b)
			nc *= 2;
		uint64_t *a = realloc(s->gp_all, nc * sizeof(*a));
		uint64_t *f = a ? realloc(s->gp_aff, nc * sizeof(*f)) : NULL;
		if (a)
			s->gp_all = a;
		if (!a || !f) {
			s->oom = 1;
			return;
		}
		s->gp_aff = f;
		memset(a + s->cap_bins, 0, (nc - s->cap_bins) * sizeof(*a));
		memset(f + s->cap_bins, 0, (nc - s->cap_bins) * sizeof(*f));
		s->cap_bins = (uint32_t)nc;
	}
	if (b + 1 > s->n_bins)
		s->n_bins = (uint32_t)b + 1;
	s->gp_all[b] += bytes;
	if (s->flows[flow].affected)
		s->gp_aff[b] += bytes;
	s->flows[flow].placed += bytes;
	s->bytes_placed += bytes;
}

void sim_record_event(struct mrc_sim *s, uint32_t h, const struct mrce_event *ev)
{
	if (ev->type == MRCE_EVT_FLOOR) {
		s->floor_events++;
		return;
	}
	if (ev->type == MRCE_EVT_QP_ERROR) {
		s->qp_errors++;
		return;
	}
	if (ev->type != MRCE_EVT_EV_STATE)
		return;
	s->evc_total++;
	if (s->n_evc == EVC_MAX)
		return;
	if (s->n_evc == s->cap_evc) {
		uint32_t nc = s->cap_evc ? 2 * s->cap_evc : 256;
		struct mrc_sim_ev_change *a = realloc(s->evc, nc * sizeof(*a));
		if (!a) {
			s->oom = 1;
			return;
		}
		s->evc = a;
		s->cap_evc = nc;
	}
	const struct sim_host *x = &s->hosts[h];
	s->evc[s->n_evc++] = (struct mrc_sim_ev_change){ .t_ns = ev->time_ns,
		.host = h, .peer_host = ev->peer < x->npeers ? x->peer_host[ev->peer] : SIM_NONE,
		.ev = (uint16_t)(x->evmap && ev->peer < x->npeers && ev->ev < x->nevmap[ev->peer] ?
				 x->evmap[ev->peer][ev->ev] : ev->ev), .old_state = ev->old_state,
		.new_state = ev->new_state, .reason = ev->reason };
}

/* ---- accessors --------------------------------------------------------- */

int sim_dbl_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

double sim_pct(const double *sorted, uint32_t n, double p)
{
	if (!n)
		return 0;
	/* Nearest rank: the smallest value with at least p% at or below. */
	uint64_t r = (uint64_t)(p / 100.0 * n + 0.999999999);
	if (r < 1)
		r = 1;
	if (r > n)
		r = n;
	return sorted[r - 1];
}

void mrc_sim_summary(const struct mrc_sim *s, struct mrc_sim_summary *o)
{
	memset(o, 0, sizeof(*o));
	o->flows = s->n_flows;
	o->flows_done = s->flows_done;
	o->flows_failed = s->flows_failed;
	o->end_ns = s->now / SIM_PS_PER_NS;
	o->events = s->events;
	o->drops = s->drop_full + s->drop_prio + s->drop_down + s->drop_blackhole +
		   s->drop_loss + s->drop_noroute;
	o->trims = s->trims;
	o->ecn_marks = s->marks;
	o->ev_changes = (uint32_t)s->evc_total;
	o->verified = s->verified;
	o->bytes_placed = s->bytes_placed;
	double *sl = malloc((s->n_flows + 1) * sizeof(*sl));
	uint32_t n = 0;
	for (uint32_t i = 0; i < s->n_flows; i++) {
		const struct sim_flow *fl = &s->flows[i];
		o->bytes += fl->size;
		if (sl && fl->parts_done == fl->nconn && !fl->status)
			sl[n++] = (double)(fl->end_ps - fl->start_ps) / (double)fl->ideal_ps;
	}
	if (sl) {
		qsort(sl, n, sizeof(*sl), sim_dbl_cmp);
		o->slow_p50 = sim_pct(sl, n, 50);
		o->slow_p99 = sim_pct(sl, n, 99);
		o->slow_max = n ? sl[n - 1] : 0;
		free(sl);
	}
	for (uint32_t h = 0; h < s->fab.n_hosts; h++) {
		if (!s->hosts[h].eng)
			continue;
		struct mrce_stats st;
		mrce_stats(s->hosts[h].eng, &st);
		o->retx += st.tx_retx;
	}
}

uint32_t mrc_sim_flow_count(const struct mrc_sim *s) { return s->n_flows; }

int mrc_sim_flow(const struct mrc_sim *s, uint32_t i, struct mrc_sim_flow_info *f)
{
	if (i >= s->n_flows)
		return -EINVAL;
	const struct sim_flow *fl = &s->flows[i];
	int done = fl->parts_done == fl->nconn;
	*f = (struct mrc_sim_flow_info){ .src = fl->src, .dst = fl->dst, .size = fl->size,
		.start_ns = fl->start_ps == UINT64_MAX ? 0 : fl->start_ps / SIM_PS_PER_NS,
		.end_ns = done ? fl->end_ps / SIM_PS_PER_NS : 0,
		.ideal_ns = fl->ideal_ps / SIM_PS_PER_NS,
		.status = done ? fl->status : -EINPROGRESS };
	return 0;
}

uint32_t mrc_sim_ev_change_count(const struct mrc_sim *s) { return s->n_evc; }
const struct mrc_sim_ev_change *mrc_sim_ev_changes(const struct mrc_sim *s) { return s->evc; }

struct mrce *mrc_sim_engine(const struct mrc_sim *s, uint32_t host)
{
	return host < s->fab.n_hosts ? s->hosts[host].eng : NULL;
}

int mrc_sim_peer(const struct mrc_sim *s, uint32_t host, uint32_t remote, uint32_t *peer)
{
	return sim_host_peer(s, host, remote, peer);
}

uint32_t mrc_sim_ev_count(const struct mrc_sim *s) { return s->fab.nev; }

int mrc_sim_evs_crossing(const struct mrc_sim *s, uint32_t src, uint32_t dst,
			 const char *node, uint16_t *evs, size_t max, size_t *n)
{
	uint32_t id, route[SIM_MAX_HOPS];
	*n = 0;
	if (sim_fabric_node(&s->fab, node, &id))
		return -ENOENT;
	for (uint32_t ev = 0; ev < s->fab.nev; ev++) {
		int k = sim_fabric_route(&s->fab, src, dst, ev, route), hit = 0;
		for (int i = 0; i < k && !hit; i++)
			hit = sim_port_to(&s->fab, route[i]) == id;
		if (!hit)
			continue;
		if (*n < max)
			evs[*n] = (uint16_t)ev;
		(*n)++;
	}
	return *n > max ? -ENOSPC : 0;
}

uint64_t mrc_sim_base_rtt(const struct mrc_sim *s, uint32_t src, uint32_t dst)
{
	return sim_pair_rtt_ps(s, src, dst) / SIM_PS_PER_NS;
}
