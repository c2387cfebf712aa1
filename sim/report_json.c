/* The JSON report (docs/sim.md): everything printed is a function of the
 * scenario and seed; wall time and memory only with timing set. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/report_int.h"

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

/* The step workload's figures (only when the scenario has one, so other
 * reports are unchanged). */
static void step_json(struct sb *b, const struct mrc_sim *s)
{
	struct mrc_sim_step_result r;
	if (mrc_sim_step_result(s, &r))
		return;
	const struct mrc_sim_step *p = &s->cfg.wl[0].step;
	for (uint32_t w = 0; w < s->cfg.n_wl; w++)
		if (s->cfg.wl[w].kind == MRC_SIM_WL_STEP)
			p = &s->cfg.wl[w].step;
	sb_printf(b, ",\n  \"step\": {\"hosts\": %u, \"steps\": %u, \"complete\": %s, "
		  "\"layers\": %u, \"moe_layer\": %u, \"ep\": %u, \"local\": %u, \"dp\": %u, "
		  "\"buckets\": %u, \"compute_ns\": %llu, \"time_to_n_ns\": %llu, "
		  "\"step_trimmed_ns\": %llu,\n    \"tokens\": %llu, \"dropped\": %llu, "
		  "\"drop_share\": %.4f",
		  r.hosts, r.steps, r.done ? "true" : "false", p->layers, p->moe_layer,
		  s->step_ep, s->step_local, p->dp, sim_step_nb(s),
		  (unsigned long long)r.compute_ns, (unsigned long long)r.time_to_n_ns,
		  (unsigned long long)r.step_trimmed_ns, (unsigned long long)r.tokens,
		  (unsigned long long)r.dropped,
		  r.tokens ? (double)r.dropped / (double)r.tokens : 0.0);
	const char *names[3] = { "step_ns", "exposed_mean_ns", "exposed_max_ns" };
	const uint64_t *v[3] = { r.step_ns, r.exposed_mean_ns, r.exposed_max_ns };
	for (int k = 0; k < 3; k++) {
		sb_printf(b, ",\n    \"%s\": [", names[k]);
		for (uint32_t i = 0; i < r.steps; i++)
			sb_printf(b, "%s%llu", i ? ", " : "", (unsigned long long)v[k][i]);
		sb_printf(b, "]");
	}
	sb_printf(b, "}");
}

int mrc_sim_report_json(const struct mrc_sim *s, int timing, char **out)
{
	struct sb b = { 0 };
	const struct mrc_sim_cfg *c = &s->cfg;
	struct fct_stats fs;
	sim_rep_fct_stats(s, &fs);
	struct totals t;
	sim_rep_totals(s, &t);
	/* Named only when not the default, so reports before it compare. */
	char rxb[48] = "";
	if (c->rx_batch_off)
		snprintf(rxb, sizeof(rxb), " \"rx_batch\": \"off\",");
	else if (c->rx_batch_ns)
		snprintf(rxb, sizeof(rxb), " \"rx_batch_ns\": %llu,",
			 (unsigned long long)c->rx_batch_ns);
	sb_printf(&b, "{\n  \"scenario\": {\"fabric\": ");
	json_str(&b, s->desc);
	sb_printf(&b, ", \"topo\": \"%s\", \"planes\": %u, \"hosts\": %u, \"evs\": %u, "
		  "\"rate_mbit\": %llu, \"delay_ns\": %llu,\n    \"mode\": \"%s\", \"paths\": %u, "
		  "\"cc\": \"%s\", \"mtu\": %u, \"window\": %u, \"buffer\": %llu, \"ecn\": %llu, "
		  "\"trim\": %llu, \"prio_buffer\": %llu, \"overhead\": %u, \"nic_queue\": %u, "
		  "\"seed\": %llu,%s%s\n    \"workloads\": [",
		  s->fab.kind == MRC_SIM_FATTREE ? "fattree" : "clos", s->fab.planes,
		  s->fab.n_hosts, s->fab.nev, (unsigned long long)s->fab.rate_mbit,
		  (unsigned long long)s->fab.delay_ns, c->mode == MRC_SIM_ECMP ? "ecmp" : "spray",
		  c->paths, c->cc_fixed ? "fixed" : "nscc", c->mtu, s->ecfg.window,
		  (unsigned long long)c->buffer, (unsigned long long)c->ecn,
		  (unsigned long long)c->trim, (unsigned long long)c->prio_buffer,
		  c->frame_overhead, c->nic_queue, (unsigned long long)c->seed,
		  c->spray_slot ? " \"spray_slot\": \"topo\"," : "", rxb);
	for (uint32_t w = 0; w < c->n_wl; w++) {
		const struct mrc_sim_workload *wl = &c->wl[w];
		sb_printf(&b, "%s{\"kind\": \"%s\", \"size\": %llu, \"start_ns\": %llu, "
			  "\"jitter_ns\": %llu, \"group\": %u, \"qps\": %u, \"flows\": %u}",
			  w ? ", " : "", sim_rep_wl_name(s, w), (unsigned long long)wl->size,
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
		  (unsigned long long)(sim_rep_span_ps(s) / SIM_PS_PER_NS),
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
			  w ? ", " : "", sim_rep_wl_name(s, w), j->nflows, done ? "true" : "false",
			  (unsigned long long)((end - st) / SIM_PS_PER_NS),
			  (unsigned long long)(j->ideal_ps / SIM_PS_PER_NS),
			  j->ideal_ps ? (double)(end - st) / (double)j->ideal_ps : 0.0);
	}
	sb_printf(&b, "]");
	step_json(&b, s);
	sb_printf(&b, ",\n  \"packets\": {\"data_sent\": %llu, \"retransmits\": %llu, "
		  "\"acks\": %llu, \"probes\": %llu, \"rto_fires\": %llu, \"trimmed\": %llu, "
		  "\"trim_nacks\": %llu, \"ecn_marked\": %llu, \"pool_peak\": %llu,\n"
		  "    \"drops\": {\"buffer\": %llu, \"prio_buffer\": %llu, \"link_down\": %llu, "
		  "\"blackhole\": %llu, \"random_loss\": %llu, \"no_route\": %llu},\n"
		  "    \"engine\": {\"ctrl_overflow\": %llu, \"events_dropped\": %llu, "
		  "\"decode_drops\": %llu, \"rx_ecn\": %llu, \"losses\": %llu, "
		  "\"suspect_probes\": %llu, \"suspect_cleared\": %llu, "
		  "\"suspect_retired\": %llu, \"suspect_extended\": %llu, "
		  "\"tlp_probes\": %llu}},\n",
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
		  (unsigned long long)t.suspect_retired, (unsigned long long)t.suspect_extended,
		  (unsigned long long)t.tlp_probes);
	if (s->cfg.health) {
		char hl[1024];
		sim_health_fmt(s, 1, hl, sizeof(hl));
		sb_printf(&b, "%s", hl);
	}
	struct link_class cls[16];
	sim_rep_link_classes(s, cls);
	sb_printf(&b, "  \"links\": {\"span_ns\": %llu, \"classes\": [",
		  (unsigned long long)(sim_rep_span_ps(s) / SIM_PS_PER_NS));
	int first = 1;
	for (int i = 0; i < 16; i++) {
		if (!cls[i].ports)
			continue;
		sb_printf(&b, "%s{\"name\": \"%s>%s\", \"ports\": %u, \"util_mean\": %.4f, "
			  "\"util_max\": %.4f, \"queue_max\": %llu}", first ? "" : ", ",
			  sim_rep_tier_name(s, (uint8_t)(i / 4)), sim_rep_tier_name(s, (uint8_t)(i % 4)),
			  cls[i].ports, cls[i].sum / cls[i].ports, cls[i].max,
			  (unsigned long long)cls[i].qmax);
		first = 0;
	}
	uint32_t top[10], nt = sim_rep_top_ports(s, top, 10);
	sb_printf(&b, "],\n    \"busiest\": [");
	for (uint32_t i = 0; i < nt; i++) {
		char pn[48];
		sim_rep_port_name(s, top[i], pn, sizeof(pn));
		const struct sim_port *p = &s->ports[top[i]];
		const struct sim_port_cold *pc = &s->pcold[top[i]];
		sb_printf(&b, "%s{\"port\": \"%s\", \"util\": %.4f, \"queue_max\": %llu, "
			  "\"drops\": %llu, \"trims\": %llu, \"ecn\": %llu}", i ? ", " : "", pn,
			  sim_rep_port_util(s, p), (unsigned long long)p->qmax,
			  (unsigned long long)pc->drops, (unsigned long long)pc->trims,
			  (unsigned long long)pc->marks);
	}
	uint64_t to_bad = 0, to_good = 0;
	for (uint32_t i = 0; i < s->n_evc; i++) {
		to_bad += s->evc[i].new_state == MRCE_EV_ASSUMED_BAD;
		to_good += s->evc[i].new_state == MRCE_EV_GOOD;
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
		sim_rep_fault_target(s, i, tg, sizeof(tg));
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
		uint32_t active = sim_rep_active_hosts(s);
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
