/* The figures every report shows, computed from a finished run
 * (report_int.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/report_int.h"

void sim_human_bytes(uint64_t b, char *buf, size_t len)
{
	if (b >= (1ull << 30) && !(b % (1ull << 20)))
		snprintf(buf, len, "%.2f GiB", (double)b / (1ull << 30));
	else if (b >= (1ull << 20))
		snprintf(buf, len, "%.2f MiB", (double)b / (1ull << 20));
	else if (b >= 1024)
		snprintf(buf, len, "%.1f KiB", (double)b / 1024);
	else
		snprintf(buf, len, "%llu B", (unsigned long long)b);
}

void sim_human_time(uint64_t ps, char *buf, size_t len)
{
	if (ps >= 1000000000ull)
		snprintf(buf, len, "%.3f ms", (double)ps / 1e9);
	else
		snprintf(buf, len, "%.3f us", (double)ps / 1e6);
}

void sim_rep_fct_stats(const struct mrc_sim *s, struct fct_stats *o)
{
	memset(o, 0, sizeof(*o));
	o->slowest = SIM_NONE;
	o->sorted = malloc((s->n_flows + 1) * sizeof(double));
	if (!o->sorted)
		return;
	double sum = 0, worst = -1;
	for (uint32_t i = 0; i < s->n_flows; i++) {
		const struct sim_flow *fl = &s->flows[i];
		if (fl->parts_done != fl->nconn || fl->status)
			continue;
		double r = (double)(fl->end_ps - fl->start_ps) / (double)fl->ideal_ps;
		o->sorted[o->n++] = r;
		sum += r;
		if (r > worst) {
			worst = r;
			o->slowest = i;
		}
	}
	qsort(o->sorted, o->n, sizeof(double), sim_dbl_cmp);
	o->p50 = sim_pct(o->sorted, o->n, 50);
	o->p90 = sim_pct(o->sorted, o->n, 90);
	o->p99 = sim_pct(o->sorted, o->n, 99);
	o->p999 = sim_pct(o->sorted, o->n, 99.9);
	o->max = o->n ? o->sorted[o->n - 1] : 0;
	o->mean = o->n ? sum / o->n : 0;
}

const char *sim_rep_tier_name(const struct mrc_sim *s, uint8_t t)
{
	static const char *clos[] = { "host", "leaf", "spine", "?" };
	static const char *ft[] = { "host", "edge", "agg", "core" };
	return t < 4 ? (s->fab.kind == MRC_SIM_FATTREE ? ft[t] : clos[t]) : "?";
}

uint64_t sim_rep_span_ps(const struct mrc_sim *s)
{
	uint64_t a = s->first_start_ps == UINT64_MAX ? 0 : s->first_start_ps;
	uint64_t b = s->last_end_ps > a ? s->last_end_ps : s->now;
	return b > a ? b - a : 1;
}

double sim_rep_port_util(const struct mrc_sim *s, const struct sim_port *p)
{
	double busy = (double)p->tx_bytes * (double)s->ser_num / (double)s->fab.rate_mbit;
	return busy / (double)sim_rep_span_ps(s);
}


/* Classes by (from tier, to tier). */
void sim_rep_link_classes(const struct mrc_sim *s, struct link_class cls[16])
{
	memset(cls, 0, 16 * sizeof(*cls));
	for (uint32_t p = 0; p < s->n_ports; p++) {
		uint8_t a = s->fab.nodes[sim_port_from(&s->fab, p)].tier;
		uint8_t b = s->fab.nodes[sim_port_to(&s->fab, p)].tier;
		struct link_class *c = &cls[a * 4 + b];
		double u = sim_rep_port_util(s, &s->ports[p]);
		c->ports++;
		c->sum += u;
		if (u > c->max)
			c->max = u;
		if (s->ports[p].qmax > c->qmax)
			c->qmax = s->ports[p].qmax;
	}
}


void sim_rep_totals(const struct mrc_sim *s, struct totals *t)
{
	memset(t, 0, sizeof(*t));
	for (uint32_t h = 0; h < s->fab.n_hosts; h++) {
		if (!s->hosts[h].eng)
			continue;
		struct mrce_stats st;
		mrce_stats(s->hosts[h].eng, &st);
		t->data += st.tx_data;
		t->retx += st.tx_retx;
		t->acks += st.tx_acks;
		t->probes += st.tx_probes;
		t->rto += st.rto_fires;
		t->nack_trim += st.nack_rx[MRC_NACK_TRIMMED];
		t->rx_trimmed += st.rx_trimmed;
		t->rx_ecn += st.rx_ecn;
		t->loss_detected += st.loss_detected;
		t->suspect_probes += st.suspect_probes;
		t->suspect_cleared += st.suspect_cleared;
		t->suspect_retired += st.suspect_retired;
		t->suspect_extended += st.suspect_extended;
		t->tlp_probes += st.tlp_probes;
		t->ctrl_overflow += st.ctrl_overflow;
		t->events_dropped += st.events_dropped;
		for (int i = 1; i < MRC_DROP__COUNT; i++)
			t->decode_drops += st.rx_drop[i];
	}
}

const char *sim_rep_wl_name(const struct mrc_sim *s, uint32_t w)
{
	return sim_wl_name(s->cfg.wl[w].kind);
}

void sim_rep_port_name(const struct mrc_sim *s, uint32_t p, char *buf, size_t len)
{
	snprintf(buf, len, "%s>%s", s->fab.nodes[sim_port_from(&s->fab, p)].name,
		 s->fab.nodes[sim_port_to(&s->fab, p)].name);
}

/* The busiest ports, by bytes sent (ties: lower port id first). */
uint32_t sim_rep_top_ports(const struct mrc_sim *s, uint32_t *out, uint32_t max)
{
	uint32_t n = 0;
	for (uint32_t p = 0; p < s->n_ports; p++) {
		uint64_t v = s->ports[p].tx_bytes;
		uint32_t i = n < max ? n++ : max;
		if (i == max) {
			if (v <= s->ports[out[max - 1]].tx_bytes)
				continue;
			i = max - 1;
		}
		while (i > 0 && s->ports[out[i - 1]].tx_bytes < v) {
			out[i] = out[i - 1];
			i--;
		}
		out[i] = p;
	}
	return n;
}

void sim_rep_fault_target(const struct mrc_sim *s, uint32_t i, char *buf, size_t len)
{
	snprintf(buf, len, "%s", s->cfg.faults[i].target);
}

/* Hosts whose engine ran (the per-host memory figure divides by them). */
uint32_t sim_rep_active_hosts(const struct mrc_sim *s)
{
	uint32_t active = 0;
	for (uint32_t h = 0; h < s->fab.n_hosts; h++)
		active += s->hosts[h].eng != NULL;
	return active;
}
