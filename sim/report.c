/* Reports: JSON for machines, a summary table for people, gnuplot plots.
 * Everything printed is a function of the scenario and seed (integers and
 * fixed-precision ratios); wall time and memory only with timing set. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sim/sim_int.h"

#define JSON_FLOWS_MAX 100000   /* per-flow records in the JSON report */
#define JSON_EVC_MAX 2000       /* EV changes listed in the JSON report */

/* ---- a growable string -------------------------------------------------- */

struct sb {
	char *p;
	size_t n, cap;
	int oom;
};

static void sb_printf(struct sb *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(struct sb *b, const char *fmt, ...)
{
	if (b->oom)
		return;
	for (;;) {
		va_list ap;
		va_start(ap, fmt);
		int n = vsnprintf(b->p + b->n, b->cap - b->n, fmt, ap);
		va_end(ap);
		if (n < 0) {
			b->oom = 1;
			return;
		}
		if ((size_t)n < b->cap - b->n) {
			b->n += (size_t)n;
			return;
		}
		size_t nc = b->cap ? 2 * b->cap : 65536;
		while (nc < b->n + (size_t)n + 1)
			nc *= 2;
		char *q = realloc(b->p, nc);
		if (!q) {
			b->oom = 1;
			return;
		}
		b->p = q;
		b->cap = nc;
	}
}

/* ---- helpers ------------------------------------------------------------ */

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

static int dbl_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

struct fct_stats {
	uint32_t n;
	double p50, p90, p99, p999, max, mean;
	uint32_t slowest;
	double *sorted;            /* caller frees */
};

static void fct_stats(const struct mrc_sim *s, struct fct_stats *o)
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
	qsort(o->sorted, o->n, sizeof(double), dbl_cmp);
	o->p50 = sim_pct(o->sorted, o->n, 50);
	o->p90 = sim_pct(o->sorted, o->n, 90);
	o->p99 = sim_pct(o->sorted, o->n, 99);
	o->p999 = sim_pct(o->sorted, o->n, 99.9);
	o->max = o->n ? o->sorted[o->n - 1] : 0;
	o->mean = o->n ? sum / o->n : 0;
}

static const char *tier_name(const struct mrc_sim *s, uint8_t t)
{
	static const char *clos[] = { "host", "leaf", "spine", "?" };
	static const char *ft[] = { "host", "edge", "agg", "core" };
	return t < 4 ? (s->fab.kind == MRC_SIM_FATTREE ? ft[t] : clos[t]) : "?";
}

static uint64_t span_ps(const struct mrc_sim *s)
{
	uint64_t a = s->first_start_ps == UINT64_MAX ? 0 : s->first_start_ps;
	uint64_t b = s->last_end_ps > a ? s->last_end_ps : s->now;
	return b > a ? b - a : 1;
}

static double port_util(const struct mrc_sim *s, const struct sim_port *p)
{
	double busy = (double)p->tx_bytes * (double)s->ser_num / (double)s->fab.rate_mbit;
	return busy / (double)span_ps(s);
}

struct link_class {
	uint32_t ports;
	double sum, max;
	uint64_t qmax;
};

/* Classes by (from tier, to tier). */
static void link_classes(const struct mrc_sim *s, struct link_class cls[16])
{
	memset(cls, 0, 16 * sizeof(*cls));
	for (uint32_t p = 0; p < s->n_ports; p++) {
		uint8_t a = s->fab.nodes[sim_port_from(&s->fab, p)].tier;
		uint8_t b = s->fab.nodes[sim_port_to(&s->fab, p)].tier;
		struct link_class *c = &cls[a * 4 + b];
		double u = port_util(s, &s->ports[p]);
		c->ports++;
		c->sum += u;
		if (u > c->max)
			c->max = u;
		if (s->ports[p].qmax > c->qmax)
			c->qmax = s->ports[p].qmax;
	}
}

struct totals {
	uint64_t data, retx, acks, probes, rto, nack_trim, rx_trimmed, ctrl_overflow,
		 events_dropped, decode_drops, rx_ecn, loss_detected, suspect_probes,
		 suspect_cleared, suspect_retired;
};

static void totals(const struct mrc_sim *s, struct totals *t)
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
		t->ctrl_overflow += st.ctrl_overflow;
		t->events_dropped += st.events_dropped;
		for (int i = 1; i < MRC_DROP__COUNT; i++)
			t->decode_drops += st.rx_drop[i];
	}
}

static const char *wl_name(const struct mrc_sim *s, uint32_t w)
{
	return sim_wl_name(s->cfg.wl[w].kind);
}

static void port_name(const struct mrc_sim *s, uint32_t p, char *buf, size_t len)
{
	snprintf(buf, len, "%s>%s", s->fab.nodes[sim_port_from(&s->fab, p)].name,
		 s->fab.nodes[sim_port_to(&s->fab, p)].name);
}

/* The busiest ports, by bytes sent (ties: lower port id first). */
static uint32_t top_ports(const struct mrc_sim *s, uint32_t *out, uint32_t max)
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

static void fault_target(const struct mrc_sim *s, uint32_t i, char *buf, size_t len)
{
	snprintf(buf, len, "%s", s->cfg.faults[i].target);
}

/* ---- JSON -------------------------------------------------------------- */

static void json_str(struct sb *b, const char *v)
{
	/* Our strings are names and fixed words: no escaping needed beyond
	 * quotes and backslashes, which we never produce, but be safe. */
	sb_printf(b, "\"");
	for (const char *c = v; *c; c++)
		if (*c == '"' || *c == '\\')
			sb_printf(b, "\\%c", *c);
		else if ((unsigned char)*c >= 0x20)
			sb_printf(b, "%c", *c);
	sb_printf(b, "\"");
}

int mrc_sim_report_json(const struct mrc_sim *s, int timing, char **out)
{
	struct sb b = { 0 };
	const struct mrc_sim_cfg *c = &s->cfg;
	struct fct_stats fs;
	fct_stats(s, &fs);
	struct totals t;
	totals(s, &t);
	sb_printf(&b, "{\n  \"scenario\": {\"fabric\": ");
	json_str(&b, s->desc);
	sb_printf(&b, ", \"topo\": \"%s\", \"planes\": %u, \"hosts\": %u, \"evs\": %u, "
		  "\"rate_mbit\": %llu, \"delay_ns\": %llu,\n    \"mode\": \"%s\", \"paths\": %u, "
		  "\"cc\": \"%s\", \"mtu\": %u, \"window\": %u, \"buffer\": %llu, \"ecn\": %llu, "
		  "\"trim\": %llu, \"prio_buffer\": %llu, \"overhead\": %u, \"nic_queue\": %u, "
		  "\"seed\": %llu,\n    \"workloads\": [",
		  s->fab.kind == MRC_SIM_FATTREE ? "fattree" : "clos", s->fab.planes,
		  s->fab.n_hosts, s->fab.nev, (unsigned long long)s->fab.rate_mbit,
		  (unsigned long long)s->fab.delay_ns, c->mode == MRC_SIM_ECMP ? "ecmp" : "spray",
		  c->paths, c->cc_fixed ? "fixed" : "nscc", c->mtu, s->ecfg.window,
		  (unsigned long long)c->buffer, (unsigned long long)c->ecn,
		  (unsigned long long)c->trim, (unsigned long long)c->prio_buffer,
		  c->frame_overhead, c->nic_queue, (unsigned long long)c->seed);
	for (uint32_t w = 0; w < c->n_wl; w++) {
		const struct mrc_sim_workload *wl = &c->wl[w];
		sb_printf(&b, "%s{\"kind\": \"%s\", \"size\": %llu, \"start_ns\": %llu, "
			  "\"jitter_ns\": %llu, \"group\": %u, \"qps\": %u, \"flows\": %u}",
			  w ? ", " : "", wl_name(s, w), (unsigned long long)wl->size,
			  (unsigned long long)wl->start_ns, (unsigned long long)wl->jitter_ns,
			  wl->group, wl->qps ? wl->qps : 1, s->jobs[w].nflows);
	}
	sb_printf(&b, "],\n    \"faults\": [");
	for (uint32_t i = 0; i < c->n_faults; i++) {
		sb_printf(&b, "%s{\"at_ns\": %llu, \"kind\": \"%s\", \"target\": ", i ? ", " : "",
			  (unsigned long long)c->faults[i].at_ns,
			  sim_fault_kind_name(c->faults[i].kind));
		json_str(&b, c->faults[i].target);
		if (c->faults[i].kind == MRC_SIM_F_LOSS)
			sb_printf(&b, ", \"loss\": %.6f", c->faults[i].loss);
		sb_printf(&b, "}");
	}
	sb_printf(&b, "]},\n");
	const char *ver = s->verified > 0 ? "equal" : s->verified < 0 ? "MISMATCH" : "not_compared";
	sb_printf(&b, "  \"result\": {\"complete\": %s, \"stalled\": %s, \"end_ns\": %llu, "
		  "\"makespan_ns\": %llu, \"events\": %llu, \"flows\": %u, \"flows_done\": %u, "
		  "\"flows_failed\": %u, \"bytes_placed\": %llu, \"data_verified\": \"%s\"},\n",
		  s->flows_done == s->n_flows ? "true" : "false", s->stalled ? "true" : "false",
		  (unsigned long long)(s->now / SIM_PS_PER_NS),
		  (unsigned long long)(span_ps(s) / SIM_PS_PER_NS),
		  (unsigned long long)s->events, s->n_flows, s->flows_done, s->flows_failed,
		  (unsigned long long)s->bytes_placed, ver);
	sb_printf(&b, "  \"fct_vs_ideal\": {\"flows\": %u, \"p50\": %.4f, \"p90\": %.4f, "
		  "\"p99\": %.4f, \"p999\": %.4f, \"max\": %.4f, \"mean\": %.4f",
		  fs.n, fs.p50, fs.p90, fs.p99, fs.p999, fs.max, fs.mean);
	if (fs.slowest != SIM_NONE) {
		const struct sim_flow *fl = &s->flows[fs.slowest];
		sb_printf(&b, ",\n    \"slowest\": {\"flow\": %u, \"src\": \"h%u\", \"dst\": \"h%u\", "
			  "\"size\": %llu, \"fct_ns\": %llu, \"ideal_ns\": %llu, \"base_rtt_ns\": %llu}",
			  fs.slowest, fl->src, fl->dst, (unsigned long long)fl->size,
			  (unsigned long long)((fl->end_ps - fl->start_ps) / SIM_PS_PER_NS),
			  (unsigned long long)(fl->ideal_ps / SIM_PS_PER_NS),
			  (unsigned long long)(fl->rtt_ps / SIM_PS_PER_NS));
	}
	sb_printf(&b, "},\n  \"jobs\": [");
	for (uint32_t w = 0; w < c->n_wl; w++) {
		const struct sim_job *j = &s->jobs[w];
		uint64_t end = 0, done = 1;
		for (uint32_t i = j->flow0; i < j->flow0 + j->nflows; i++) {
			const struct sim_flow *fl = &s->flows[i];
			uint64_t e = fl->end_ps > fl->recv_ps ? fl->end_ps : fl->recv_ps;
			done &= fl->parts_done == fl->nconn;
			if (e > end)
				end = e;
		}
		uint64_t st = j->start_ps == UINT64_MAX ? 0 : j->start_ps;
		sb_printf(&b, "%s{\"kind\": \"%s\", \"flows\": %u, \"complete\": %s, "
			  "\"time_ns\": %llu, \"ideal_ns\": %llu, \"vs_ideal\": %.4f}",
			  w ? ", " : "", wl_name(s, w), j->nflows, done ? "true" : "false",
			  (unsigned long long)((end - st) / SIM_PS_PER_NS),
			  (unsigned long long)(j->ideal_ps / SIM_PS_PER_NS),
			  j->ideal_ps ? (double)(end - st) / (double)j->ideal_ps : 0.0);
	}
	sb_printf(&b, "],\n  \"packets\": {\"data_sent\": %llu, \"retransmits\": %llu, "
		  "\"acks\": %llu, \"probes\": %llu, \"rto_fires\": %llu, \"trimmed\": %llu, "
		  "\"trim_nacks\": %llu, \"ecn_marked\": %llu, \"pool_peak\": %llu,\n"
		  "    \"drops\": {\"buffer\": %llu, \"prio_buffer\": %llu, \"link_down\": %llu, "
		  "\"blackhole\": %llu, \"random_loss\": %llu, \"no_route\": %llu},\n"
		  "    \"engine\": {\"ctrl_overflow\": %llu, \"events_dropped\": %llu, "
		  "\"decode_drops\": %llu, \"rx_ecn\": %llu, \"losses\": %llu, "
		  "\"suspect_probes\": %llu, \"suspect_cleared\": %llu, "
		  "\"suspect_retired\": %llu}},\n",
		  (unsigned long long)t.data, (unsigned long long)t.retx,
		  (unsigned long long)t.acks, (unsigned long long)t.probes,
		  (unsigned long long)t.rto, (unsigned long long)s->trims,
		  (unsigned long long)t.nack_trim, (unsigned long long)s->marks,
		  (unsigned long long)s->pool.peak, (unsigned long long)s->drop_full,
		  (unsigned long long)s->drop_prio, (unsigned long long)s->drop_down,
		  (unsigned long long)s->drop_blackhole, (unsigned long long)s->drop_loss,
		  (unsigned long long)s->drop_noroute, (unsigned long long)t.ctrl_overflow,
		  (unsigned long long)t.events_dropped, (unsigned long long)t.decode_drops,
		  (unsigned long long)t.rx_ecn, (unsigned long long)t.loss_detected,
		  (unsigned long long)t.suspect_probes, (unsigned long long)t.suspect_cleared,
		  (unsigned long long)t.suspect_retired);
	struct link_class cls[16];
	link_classes(s, cls);
	sb_printf(&b, "  \"links\": {\"span_ns\": %llu, \"classes\": [",
		  (unsigned long long)(span_ps(s) / SIM_PS_PER_NS));
	int first = 1;
	for (int i = 0; i < 16; i++) {
		if (!cls[i].ports)
			continue;
		sb_printf(&b, "%s{\"name\": \"%s>%s\", \"ports\": %u, \"util_mean\": %.4f, "
			  "\"util_max\": %.4f, \"queue_max\": %llu}", first ? "" : ", ",
			  tier_name(s, (uint8_t)(i / 4)), tier_name(s, (uint8_t)(i % 4)),
			  cls[i].ports, cls[i].sum / cls[i].ports, cls[i].max,
			  (unsigned long long)cls[i].qmax);
		first = 0;
	}
	uint32_t top[10], nt = top_ports(s, top, 10);
	sb_printf(&b, "],\n    \"busiest\": [");
	for (uint32_t i = 0; i < nt; i++) {
		char pn[48];
		port_name(s, top[i], pn, sizeof(pn));
		const struct sim_port *p = &s->ports[top[i]];
		const struct sim_port_cold *pc = &s->pcold[top[i]];
		sb_printf(&b, "%s{\"port\": \"%s\", \"util\": %.4f, \"queue_max\": %llu, "
			  "\"drops\": %llu, \"trims\": %llu, \"ecn\": %llu}", i ? ", " : "", pn,
			  port_util(s, p), (unsigned long long)p->qmax,
			  (unsigned long long)pc->drops, (unsigned long long)pc->trims,
			  (unsigned long long)pc->marks);
	}
	uint64_t to_bad = 0, to_good = 0;
	for (uint32_t i = 0; i < s->n_evc; i++) {
		to_bad += s->evc[i].new_state == MRC_EV_ASSUMED_BAD;
		to_good += s->evc[i].new_state == MRC_EV_GOOD;
	}
	sb_printf(&b, "]},\n  \"ev_changes\": {\"total\": %llu, \"to_assumed_bad\": %llu, "
		  "\"to_good\": %llu, \"floor_events\": %llu, \"qp_errors\": %llu, \"list\": [",
		  (unsigned long long)s->evc_total, (unsigned long long)to_bad,
		  (unsigned long long)to_good, (unsigned long long)s->floor_events,
		  (unsigned long long)s->qp_errors);
	for (uint32_t i = 0; i < s->n_evc && i < JSON_EVC_MAX; i++) {
		const struct mrc_sim_ev_change *e = &s->evc[i];
		sb_printf(&b, "%s\n    {\"t_ns\": %llu, \"host\": \"h%u\", \"peer\": \"h%u\", "
			  "\"ev\": %u, \"plane\": %u, \"from\": \"%s\", \"to\": \"%s\", \"reason\": \"%s\"}",
			  i ? "," : "", (unsigned long long)e->t_ns, e->host, e->peer_host, e->ev,
			  s->fab.plane_of_ev[e->ev], mrce_ev_state_name(e->old_state),
			  mrce_ev_state_name(e->new_state), mrce_ev_reason_name(e->reason));
	}
	sb_printf(&b, "]},\n  \"faults\": [");
	for (uint32_t i = 0; i < c->n_faults; i++) {
		const struct sim_fault_rec *r = &s->frec[i];
		char tg[MRC_SIM_NAME_MAX];
		fault_target(s, i, tg, sizeof(tg));
		sb_printf(&b, "%s\n    {\"at_ns\": %llu, \"kind\": \"%s\", \"target\": ", i ? "," : "",
			  (unsigned long long)(r->t_ps / SIM_PS_PER_NS),
			  sim_fault_kind_name(c->faults[i].kind));
		json_str(&b, tg);
		if (c->faults[i].kind != MRC_SIM_F_RECOVER) {
			sb_printf(&b, ", \"affected_flows\": %u, \"evs_to_bad\": %u", r->affected,
				  r->bad_evs);
			if (r->bad_evs)
				sb_printf(&b, ", \"first_detect_ns\": %llu, \"last_detect_ns\": %llu",
					  (unsigned long long)((r->first_bad_ps - r->t_ps) / SIM_PS_PER_NS),
					  (unsigned long long)((r->last_bad_ps - r->t_ps) / SIM_PS_PER_NS));
			sb_printf(&b, ", \"pre_fault_gbps\": %.3f, \"goodput_recovery_ns\": %lld",
				  r->pre_gbps, (long long)(r->recover_ps < 0 ? -1 :
							   r->recover_ps / (int64_t)SIM_PS_PER_NS));
		}
		sb_printf(&b, "}");
	}
	sb_printf(&b, "],\n  \"goodput\": {\"bin_ns\": %llu, \"bins\": %u}",
		  (unsigned long long)(s->bin_ps / SIM_PS_PER_NS), s->n_bins);
	if (s->n_flows <= JSON_FLOWS_MAX) {
		sb_printf(&b, ",\n  \"flows\": [");
		for (uint32_t i = 0; i < s->n_flows; i++) {
			const struct sim_flow *fl = &s->flows[i];
			int done = fl->parts_done == fl->nconn;
			uint64_t st = fl->start_ps == UINT64_MAX ? 0 : fl->start_ps;
			sb_printf(&b, "%s\n    [%u, %u, %llu, %llu, %lld, %llu, %d]", i ? "," : "",
				  fl->src, fl->dst, (unsigned long long)fl->size,
				  (unsigned long long)(st / SIM_PS_PER_NS),
				  done ? (long long)((fl->end_ps - st) / SIM_PS_PER_NS) : -1LL,
				  (unsigned long long)(fl->ideal_ps / SIM_PS_PER_NS),
				  done ? fl->status : -EINPROGRESS);
		}
		sb_printf(&b, "],\n  \"flow_fields\": [\"src\", \"dst\", \"size\", \"start_ns\", "
			  "\"fct_ns\", \"ideal_ns\", \"status\"]");
	}
	if (s->cfg.stalls) {
		const struct sim_stalls *st = &s->stalls;
		double send = st->send_ps ? (double)st->send_ps : 1.0;
		sb_printf(&b, ",\n  \"stalls\": {\"send_ps\": %llu, \"drain\": %.4f, "
			  "\"cwnd\": %.4f, \"window\": %.4f, \"other\": %.4f, "
			  "\"samples\": %llu, \"cwnd_mean\": %llu, \"srtt_mean_ns\": %llu}",
			  (unsigned long long)st->send_ps, st->ps[SIM_STALL_DRAIN] / send,
			  st->ps[SIM_STALL_CWND] / send, st->ps[SIM_STALL_WINDOW] / send,
			  st->ps[SIM_STALL_OTHER] / send, (unsigned long long)st->n,
			  (unsigned long long)(st->n ? st->cwnd_sum / st->n : 0),
			  (unsigned long long)(st->n ? st->srtt_sum / st->n : 0));
	}
	if (timing) {
		uint32_t active = 0;
		for (uint32_t h = 0; h < s->fab.n_hosts; h++)
			active += s->hosts[h].eng != NULL;
		/* Events per CPU second: wall time depends on what else
		 * the machine runs. */
		sb_printf(&b, ",\n  \"timing\": {\"wall_s\": %.3f, \"cpu_s\": %.3f, "
			  "\"events_per_s\": %.0f, \"maxrss_kb\": %ld, \"kb_per_host\": %.1f}",
			  s->wall_s, s->cpu_s, s->cpu_s > 0 ? (double)s->events / s->cpu_s : 0.0,
			  s->maxrss_kb, active ? (double)s->maxrss_kb / active : 0.0);
	}
	sb_printf(&b, "\n}\n");
	free(fs.sorted);
	if (b.oom) {
		free(b.p);
		return -ENOMEM;
	}
	*out = b.p;
	return 0;
}

/* ---- text ---------------------------------------------------------------- */

void mrc_sim_report_text(const struct mrc_sim *s, int timing, FILE *f)
{
	const struct mrc_sim_cfg *c = &s->cfg;
	struct fct_stats fs;
	fct_stats(s, &fs);
	struct totals t;
	totals(s, &t);
	char a[32], b2[32], d[32];
	fprintf(f, "fabric    %s, %llu Gbit/s links, %llu ns propagation\n", s->desc,
		(unsigned long long)(s->fab.rate_mbit / 1000), (unsigned long long)s->fab.delay_ns);
	sim_human_bytes(c->buffer, a, sizeof(a));
	fprintf(f, "transport %s%s, cc %s, window %u x %u B, buffer %s/port, ECN %llu K, "
		"trim %s, seed %llu\n", c->mode == MRC_SIM_ECMP ? "ECMP (pinned EV per QP)" : "spray",
		c->paths ? " (subset of EVs per pair)" : "", c->cc_fixed ? "fixed" : "nscc",
		s->ecfg.window, c->mtu, a, (unsigned long long)(c->ecn >> 10),
		c->trim ? "on" : "off", (unsigned long long)c->seed);
	for (uint32_t w = 0; w < c->n_wl; w++) {
		const struct sim_job *j = &s->jobs[w];
		uint64_t end = 0;
		for (uint32_t i = j->flow0; i < j->flow0 + j->nflows; i++) {
			const struct sim_flow *fl = &s->flows[i];
			uint64_t e = fl->end_ps > fl->recv_ps ? fl->end_ps : fl->recv_ps;
			if (e > end)
				end = e;
		}
		uint64_t st = j->start_ps == UINT64_MAX ? 0 : j->start_ps;
		sim_human_bytes(c->wl[w].size, a, sizeof(a));
		sim_human_time(end > st ? end - st : 0, b2, sizeof(b2));
		sim_human_time(j->ideal_ps, d, sizeof(d));
		fprintf(f, "workload  %-11s %s x %u flows: done in %s, ideal %s (x%.3f)\n",
			wl_name(s, w), a, j->nflows, b2, d,
			j->ideal_ps ? (double)(end - st) / (double)j->ideal_ps : 0.0);
	}
	fprintf(f, "flows     %u/%u complete%s%s, data %s\n", s->flows_done, s->n_flows,
		s->flows_failed ? ", FAILED: " : "", s->flows_failed ? "some" : "",
		s->verified > 0 ? "compared equal" : s->verified < 0 ? "MISMATCH" :
		"not compared (too large)");
	if (s->stalled)
		fprintf(f, "          STALLED: the event queue ran dry before every flow finished\n");
	fprintf(f, "FCT/ideal p50 %.3f  p90 %.3f  p99 %.3f  p99.9 %.3f  max %.3f  mean %.3f\n",
		fs.p50, fs.p90, fs.p99, fs.p999, fs.max, fs.mean);
	if (fs.slowest != SIM_NONE) {
		const struct sim_flow *fl = &s->flows[fs.slowest];
		sim_human_time(fl->end_ps - fl->start_ps, a, sizeof(a));
		sim_human_time(fl->ideal_ps, b2, sizeof(b2));
		sim_human_time(fl->rtt_ps, d, sizeof(d));
		fprintf(f, "slowest   h%u -> h%u: %s, ideal %s (base RTT %s)\n", fl->src, fl->dst,
			a, b2, d);
	}
	struct link_class cls[16];
	link_classes(s, cls);
	fprintf(f, "links     utilisation mean/max over %.3f us:", (double)span_ps(s) / 1e6);
	for (int i = 0; i < 16; i++)
		if (cls[i].ports)
			fprintf(f, " %s>%s %.2f/%.2f", tier_name(s, (uint8_t)(i / 4)),
				tier_name(s, (uint8_t)(i % 4)), cls[i].sum / cls[i].ports, cls[i].max);
	fprintf(f, "\npackets   data %llu, retransmits %llu, trimmed %llu, ECN marked %llu, "
		"RTOs %llu, probes %llu\n", (unsigned long long)t.data, (unsigned long long)t.retx,
		(unsigned long long)s->trims, (unsigned long long)s->marks,
		(unsigned long long)t.rto, (unsigned long long)t.probes);
	fprintf(f, "drops     buffer %llu, prio %llu, link down %llu, blackhole %llu, "
		"random loss %llu\n", (unsigned long long)s->drop_full,
		(unsigned long long)s->drop_prio, (unsigned long long)s->drop_down,
		(unsigned long long)s->drop_blackhole, (unsigned long long)s->drop_loss);
	uint64_t to_bad = 0, to_good = 0;
	for (uint32_t i = 0; i < s->n_evc; i++) {
		to_bad += s->evc[i].new_state == MRC_EV_ASSUMED_BAD;
		to_good += s->evc[i].new_state == MRC_EV_GOOD;
	}
	fprintf(f, "EV states %llu changes (%llu to ASSUMED_BAD, %llu to GOOD), %llu floor events\n",
		(unsigned long long)s->evc_total, (unsigned long long)to_bad,
		(unsigned long long)to_good, (unsigned long long)s->floor_events);
	for (uint32_t i = 0; i < c->n_faults; i++) {
		const struct sim_fault_rec *r = &s->frec[i];
		sim_human_time(r->t_ps, a, sizeof(a));
		fprintf(f, "fault     %s %s %s", a, sim_fault_kind_name(c->faults[i].kind),
			c->faults[i].target);
		if (c->faults[i].kind != MRC_SIM_F_RECOVER) {
			fprintf(f, ": %u flows cross it, %u EVs to ASSUMED_BAD", r->affected, r->bad_evs);
			if (r->bad_evs) {
				sim_human_time(r->first_bad_ps - r->t_ps, b2, sizeof(b2));
				sim_human_time(r->last_bad_ps - r->t_ps, d, sizeof(d));
				fprintf(f, " (first +%s, last +%s)", b2, d);
			}
			if (r->recover_ps >= 0) {
				sim_human_time((uint64_t)r->recover_ps, b2, sizeof(b2));
				fprintf(f, ", goodput back to 90%% of %.1f Gbit/s after %s",
					r->pre_gbps, b2);
			} else {
				fprintf(f, ", goodput recovery not measured");
			}
		}
		fprintf(f, "\n");
	}
	fprintf(f, "sim       %llu events, %s virtual, packet pool peak %llu\n",
		(unsigned long long)s->events, (sim_human_time(s->now, a, sizeof(a)), a),
		(unsigned long long)s->pool.peak);
	if (s->cfg.stalls) {
		const struct sim_stalls *st = &s->stalls;
		double send = st->send_ps ? (double)st->send_ps / 100 : 1.0;
		fprintf(f, "stalls    NIC idle while sending, %% of flow time: drain %.2f, "
			"cwnd %.2f, window %.2f, other %.2f; at idle: cwnd %llu B, srtt %llu ns\n",
			st->ps[SIM_STALL_DRAIN] / send, st->ps[SIM_STALL_CWND] / send,
			st->ps[SIM_STALL_WINDOW] / send, st->ps[SIM_STALL_OTHER] / send,
			(unsigned long long)(st->n ? st->cwnd_sum / st->n : 0),
			(unsigned long long)(st->n ? st->srtt_sum / st->n : 0));
	}
	if (timing) {
		uint32_t active = 0;
		for (uint32_t h = 0; h < s->fab.n_hosts; h++)
			active += s->hosts[h].eng != NULL;
		fprintf(f, "timing    %.3f s wall, %.3f s CPU, %.2f M events per CPU second, "
			"max RSS %.1f MiB (%.1f KiB per host)\n", s->wall_s, s->cpu_s,
			s->cpu_s > 0 ? s->events / s->cpu_s / 1e6 : 0.0,
			s->maxrss_kb / 1024.0, active ? (double)s->maxrss_kb / active : 0.0);
	}
	free(fs.sorted);
}

/* ---- plots ---------------------------------------------------------------- */

static FILE *open_in(const char *dir, const char *name, char *path, size_t len)
{
	snprintf(path, len, "%s/%s", dir, name);
	return fopen(path, "w");
}

int mrc_sim_plot(const struct mrc_sim *s, const char *dir, char *err, size_t errlen)
{
	char path[4096];
	if (mkdir(dir, 0755) && errno != EEXIST) {
		snprintf(err, errlen, "plot: cannot create %s: %s", dir, strerror(errno));
		return -errno;
	}
	struct fct_stats fs;
	fct_stats(s, &fs);
	FILE *f = open_in(dir, "fct.dat", path, sizeof(path));
	if (!f)
		goto io;
	fprintf(f, "# FCT/ideal  CDF\n");
	for (uint32_t i = 0; i < fs.n; i++)
		fprintf(f, "%.5f %.6f\n", fs.sorted[i], (double)(i + 1) / fs.n);
	fclose(f);
	f = open_in(dir, "goodput.dat", path, sizeof(path));
	if (!f)
		goto io;
	double per = 8.0 / ((double)s->bin_ps / 1000.0);   /* bytes/bin -> Gbit/s */
	fprintf(f, "# t_us  all_gbps  affected_gbps\n");
	for (uint32_t b = 0; b < s->n_bins; b++)
		fprintf(f, "%.3f %.3f %.3f\n", (double)b * s->bin_ps / 1e6, s->gp_all[b] * per,
			s->gp_aff[b] * per);
	fclose(f);
	f = open_in(dir, "evbad.dat", path, sizeof(path));
	if (!f)
		goto io;
	fprintf(f, "# t_us  EVs in ASSUMED_BAD (all hosts)\n0 0\n");
	long bad = 0;
	for (uint32_t i = 0; i < s->n_evc; i++) {
		const struct mrc_sim_ev_change *e = &s->evc[i];
		bad += (e->new_state == MRC_EV_ASSUMED_BAD) - (e->old_state == MRC_EV_ASSUMED_BAD);
		fprintf(f, "%.3f %ld\n", e->t_ns / 1e3, bad);
	}
	fprintf(f, "%.3f %ld\n", s->now / 1e6, bad);
	fclose(f);
	f = open_in(dir, "plots.gp", path, sizeof(path));
	if (!f)
		goto io;
	fprintf(f, "set terminal pngcairo size 900,540\nset grid\n");
	for (uint32_t i = 0; i < s->cfg.n_faults; i++)
		fprintf(f, "set arrow from %.3f, graph 0 to %.3f, graph 1 nohead dt 2 lc rgb 'red'\n",
			s->frec[i].t_ps / 1e6, s->frec[i].t_ps / 1e6);
	fprintf(f, "set output '%s/goodput.png'\nset title \"%s: goodput\"\n"
		"set xlabel 'time (us)'\nset ylabel 'Gbit/s'\n"
		"plot '%s/goodput.dat' u 1:2 w l t 'all flows', '' u 1:3 w l t 'flows crossing a fault'\n",
		dir, s->desc, dir);
	fprintf(f, "set output '%s/evbad.png'\nset title 'EVs in ASSUMED_BAD'\n"
		"set ylabel 'EVs'\nplot '%s/evbad.dat' u 1:2 w steps t 'ASSUMED_BAD'\n", dir, dir);
	fprintf(f, "unset arrow\nset output '%s/fct_cdf.png'\nset title \"%s: FCT / ideal\"\n"
		"set xlabel 'FCT / ideal'\nset ylabel 'CDF'\nset yrange [0:1]\n"
		"plot '%s/fct.dat' u 1:2 w l t '%s'\n", dir, s->desc, dir,
		s->cfg.mode == MRC_SIM_ECMP ? "ecmp" : "spray");
	fclose(f);
	free(fs.sorted);
	fs.sorted = NULL;
	pid_t pid = fork();
	if (pid < 0)
		goto io;
	if (!pid) {
		execlp("gnuplot", "gnuplot", path, (char *)NULL);
		_exit(127);
	}
	int st;
	if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st)) {
		snprintf(err, errlen, "plot: gnuplot %s failed (exit %d); is gnuplot installed?",
			 path, WIFEXITED(st) ? WEXITSTATUS(st) : -1);
		return -EIO;
	}
	return 0;
io:
	free(fs.sorted);
	snprintf(err, errlen, "plot: %s: %s", path, strerror(errno));
	return -EIO;
}
