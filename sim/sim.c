/* The simulator core: setup from a scenario, the event loop and the
 * end-of-run checks (what a run records and reports: record.c). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "common/clock.h"
#include "common/errf.h"
#include "sim/sim_int.h"

static uint32_t pow2_at_least(uint64_t v)
{
	uint32_t p = 1;
	while (p < v && p < (1u << 30))
		p <<= 1;
	return p;
}

static void engine_cfg(struct mrc_sim *s)
{
	const struct mrc_sim_cfg *c = &s->cfg;
	struct mrce_cfg *e = &s->ecfg;
	mrce_cfg_default(e);
	e->mtu = c->mtu;
	e->cc = c->cc_fixed ? MRCE_CC_FIXED : MRCE_CC_NSCC;
	if (c->rto_min_ns) {
		e->rto_min_ns = c->rto_min_ns;
		if (e->rto_init_ns < e->rto_min_ns)
			e->rto_init_ns = e->rto_min_ns;
		if (e->rto_max_ns < e->rto_init_ns)
			e->rto_max_ns = e->rto_init_ns;
	}
	if (c->probe_interval_ns) {
		e->probe_interval_ns = c->probe_interval_ns;
		if (e->probe_max_interval_ns < e->probe_interval_ns)
			e->probe_max_interval_ns = e->probe_interval_ns;
	}
	if (c->reorder_slack_ns)
		e->reorder_slack_ns = c->reorder_slack_ns;
	if (c->tlp_set)
		e->tlp_min_ns = c->tlp_min_ns;
	if (c->tlp_lone)
		e->tlp_lone = c->tlp_lone == 1;
	if (c->ev_floor)
		e->ev_floor = c->ev_floor;
	/* Small queues: thousands of engines share this process.  Control
	 * packets and events are drained after every engine call. */
	e->ctrl_queue = 256;
	e->event_queue = 256;
	e->rq_depth = 4;
	/* Per-QP per-EV counters are for mrcctl; the report does not read
	 * them, and at 8,192 hosts they would be 16 MiB of the 1 GiB. */
	e->qp_ev_stats = 0;
	/* The fabric cannot corrupt a payload, and computing and checking
	 * its CRC was 4% of a run (docs/sim.md); headers are still checked.
	 * The daemon's engines keep the default (verify). */
	e->skip_payload_crc = 1;
	if (c->window) {
		e->window = c->window;
	} else {
		/* Twice the bandwidth-delay product of the longest path. */
		uint64_t data = MRC_DATA_HDR_LEN + c->mtu + MRC_TRAILER_LEN + c->frame_overhead;
		uint64_t ack = MRC_ACK_HDR_LEN + c->frame_overhead;
		uint64_t rtt = s->fab.max_hops * (sim_ser_ps(s, (uint32_t)data) +
						  sim_ser_ps(s, (uint32_t)ack) + 2 * s->prop_ps);
		uint64_t bdp = s->host_cap_mbit * rtt / 8000000;
		uint32_t w = pow2_at_least(2 * bdp / c->mtu + 1);
		e->window = w < 8 ? 8 : w > MRCE_MAX_WINDOW ? MRCE_MAX_WINDOW : w;
	}
	/* Ring steps queue on one QP; everything else posts one WR per QP. */
	uint32_t per_qp = 1;
	for (uint32_t w = 0; w < c->n_wl; w++)
		if (c->wl[w].kind == MRC_SIM_WL_RING) {
			uint32_t g = c->wl[w].group ? c->wl[w].group : s->fab.n_hosts;
			if (2 * g > per_qp)
				per_qp = 2 * g;
		}
	/* Step flows share a QP per host pair and wait in step.c when its
	 * send queue is full: a short one keeps 8,192 hosts' QPs small. */
	for (uint32_t w = 0; w < c->n_wl; w++)
		if (c->wl[w].kind == MRC_SIM_WL_STEP && per_qp < 7)
			per_qp = 7;
	e->sq_depth = pow2_at_least(per_qp + 1);
	if (e->sq_depth < 4)
		e->sq_depth = 4;
}

static int ports_init(struct mrc_sim *s, char *err, size_t errlen)
{
	const struct sim_fabric *f = &s->fab;
	s->n_ports = f->n_links * 2;
	/* Cache-line aligned: calloc's 16-byte offset spread each record
	 * over two lines, and the prefetch below takes one. */
	void *pm = sim_alloc_huge((size_t)s->n_ports * sizeof(*s->ports));
	if (pm)
		memset(pm, 0, (size_t)s->n_ports * sizeof(*s->ports));
	s->ports = pm;
	s->pcold = calloc(s->n_ports, sizeof(*s->pcold));
	if (!s->ports || !s->pcold)
		return mrc__errf(err, errlen, "fabric: out of memory for %u ports", s->n_ports);
	if (f->n_hosts >= SIM_PORT_SW)
		return mrc__errf(err, errlen, "fabric: %u hosts, at most %u", f->n_hosts,
				 SIM_PORT_SW - 1);
	for (uint32_t p = 0; p < s->n_ports; p++) {
		struct sim_port *x = &s->ports[p];
		uint32_t from = sim_port_from(f, p);
		x->from_host = f->nodes[from].tier == 0 ? f->nodes[from].index : SIM_PORT_SW;
	}
	return 0;
}

int mrc_sim_create(const struct mrc_sim_cfg *c, struct mrc_sim **out, char *err,
		   size_t errlen)
{
	if (c->trim && c->trim > c->buffer)
		return mrc__errf(err, errlen, "trim=%llu: must not exceed buffer=%llu (a packet "
			    "is trimmed instead of dropped, so trimming starts first)",
			    (unsigned long long)c->trim, (unsigned long long)c->buffer);
	if (!c->n_wl)
		return mrc__errf(err, errlen, "workload: none given");
	/* Port queue byte counts are 32-bit (one cache line per port). */
	if (c->buffer > SIM_QBYTES_MAX || c->prio_buffer > SIM_QBYTES_MAX)
		return mrc__errf(err, errlen, "buffer=%llu, prio-buffer=%llu: at most 2G each",
			    (unsigned long long)c->buffer, (unsigned long long)c->prio_buffer);
	struct mrc_sim *s = calloc(1, sizeof(*s));
	if (!s)
		return mrc__errf(err, errlen, "out of memory"), -ENOMEM;
	s->cfg = *c;
	int rc = sim_fabric_build(&s->fab, &c->topo, err, errlen);
	if (rc)
		goto fail;
	s->ser_num = 8000000;
	s->prop_ps = c->topo.delay_ns * SIM_PS_PER_NS;
	s->host_cap_mbit = s->fab.rate_mbit * s->fab.planes;
	s->nic_limit = s->fab.planes * (c->nic_queue ? c->nic_queue : 1);
	/* One NIC never delivers two packets at one instant (each takes a
	 * frame time): there a same-instant batch is always one arrival, so
	 * the batch end is skipped and the run is the unbatched one. */
	s->rx_batch = !c->rx_batch_off && (c->rx_batch_ns || s->fab.planes > 1);
	s->bin_ps = (c->bin_ns ? c->bin_ns : 10000) * SIM_PS_PER_NS;
	s->first_start_ps = UINT64_MAX;
	mrc_rng_seed(&s->rng, c->seed);
	engine_cfg(s);
	sim_fabric_describe(&s->fab, s->desc, sizeof(s->desc));
	if ((rc = ports_init(s, err, errlen)) ||
	    (rc = sim_workload_build(s, err, errlen)) ||
	    (rc = sim_faults_check(s, err, errlen)) ||
	    (rc = sim_faults_mark(s)) ||
	    (rc = sim_hosts_create(s, err, errlen)) ||
	    (rc = sim_health_init(s)))
		goto fail;
	s->rx_buf = malloc(MRC_HDR_MAX + MRC_MAX_PAYLOAD + MRC_TRAILER_LEN);
	s->rxq = malloc(((size_t)s->fab.n_hosts + 1) * sizeof(*s->rxq));
	if (!s->rx_buf || !s->rxq || sim_evq_init(&s->q, (uint64_t)s->fab.n_hosts + s->n_flows + 1024) ||
	    sim_pool_init(&s->pool)) {
		rc = mrc__errf(err, errlen, "out of memory");
		goto fail;
	}
	for (uint32_t f = 0; f < s->n_flows; f++)
		if (!s->flows[f].triggered)
			sim_schedule(s, s->flows[f].start_ps, SE_START, f);
	for (uint32_t i = 0; i < c->n_faults; i++)
		sim_schedule(s, s->frec[i].t_ps, SE_FAULT, i);
	if (sim_step_kick(s)) {
		rc = mrc__errf(err, errlen, "out of memory");
		goto fail;
	}
	s->progress_every = 1u << 20;
	*out = s;
	return 0;
fail:
	mrc_sim_destroy(s);
	return rc ? rc : -EINVAL;
}

void mrc_sim_destroy(struct mrc_sim *s)
{
	if (!s)
		return;
	sim_health_free(s);
	sim_hosts_free(s);
	sim_step_free(s);
	if (s->flows)
		for (uint32_t i = 0; i < s->n_flows; i++)
			free(s->flows[i].rbuf);
	free(s->flows);
	free(s->conns);
	free(s->ports);
	free(s->pcold);
	sim_fabric_free(&s->fab);
	sim_evq_free(&s->q);
	sim_pool_free(&s->pool);
	free(s->src_buf);
	free(s->sink_buf);
	free(s->rx_buf);
	free(s->rxq);
	free(s->evc);
	free(s->gp_all);
	free(s->gp_aff);
	free(s);
}

static void verify(struct mrc_sim *s)
{
	if (!s->verified)
		return;
	for (uint32_t i = 0; i < s->n_flows; i++) {
		const struct sim_flow *fl = &s->flows[i];
		if (fl->rbuf && (fl->status || fl->parts_done != fl->nconn ||
				 memcmp(fl->rbuf, s->src_buf + fl->loff, fl->size))) {
			s->verified = -1;
			return;
		}
	}
}

static double cpu(void)
{
	struct rusage ru;
	if (getrusage(RUSAGE_SELF, &ru))
		return 0;
	return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

static void progress(const struct mrc_sim *s, int last)
{
	fprintf(stderr, "\rmrcsim: t=%.3f ms  events %llu  flows %u/%u done%s",
		(double)s->now / 1e9, (unsigned long long)s->events,
		s->flows_done + s->flows_failed, s->n_flows, last ? "\n" : "  ");
}

/* The packet and port records of a big run do not fit the caches, and
 * each event's first touch of them was a miss (most of the profile).  The
 * FIFO the event came from holds the next ones in order, so fetch ahead in
 * three steps: a later event's packet or port now; for a nearer one (whose
 * first record is in cache by then) the records it leads to (the ports a
 * packet crosses and enters, the packet a port starts next, the host);
 * for the nearest, the engine of a host it will call. */
#define PF_FAR 16
#define PF_NEAR 8
#define PF_HOST 4
/* The host an event will call into (SIM_NONE: none): a packet's last hop
 * or a NIC's transmission end. */
static inline uint32_t event_host(const struct mrc_sim *s, const struct sim_event *e)
{
	if (sim_event_type(e) == SE_ARRIVE) {
		const struct sim_pkt *k = (const struct sim_pkt *)(uintptr_t)e->arg;
		return k->hop + 1 == k->nhops ? k->dst : SIM_NONE;
	}
	if (sim_event_type(e) == SE_TXDONE) {
		uint32_t h = s->ports[e->arg].from_host;
		return h == SIM_PORT_SW ? SIM_NONE : h;
	}
	return SIM_NONE;
}

/* always_inline: a plain inline function whose only effects are
 * prefetches is "pure" to GCC (12: local-pure-const), and a call to a
 * pure function with no result is deleted before inlining; so were these
 * prefetches, from every build until 2026-11-28 (docs/sim.md). */
static inline __attribute__((always_inline)) void prefetch(const struct mrc_sim *s)
{
	const struct sim_event *e = sim_evq_ahead(&s->q, PF_FAR);
	if (e) {
		if (sim_event_type(e) == SE_ARRIVE) {
			/* The record's first line: all a hop touches. */
			__builtin_prefetch((const void *)(uintptr_t)e->arg);
		} else if (sim_event_type(e) == SE_TXDONE) {
			__builtin_prefetch(&s->ports[e->arg]);
		}
	}
	e = sim_evq_ahead(&s->q, PF_NEAR);
	if (e) {
		if (sim_event_type(e) == SE_ARRIVE) {
			const struct sim_pkt *k = (const struct sim_pkt *)(uintptr_t)e->arg;
			__builtin_prefetch(&s->ports[k->route[k->hop]]);
			if (k->hop + 1 < k->nhops) {
				__builtin_prefetch(&s->ports[k->route[k->hop + 1]]);
			} else {
				/* The host copies the header out of both lines. */
				__builtin_prefetch((const char *)k + 64);
				__builtin_prefetch(&s->hosts[k->dst]);
			}
		} else if (sim_event_type(e) == SE_TXDONE) {
			const struct sim_port *p = &s->ports[e->arg];
			__builtin_prefetch(p->cur);
			/* The packet port_start takes next. */
			__builtin_prefetch(p->qh[0] ? p->qh[0] : p->qh[1]);
			if (p->from_host != SIM_PORT_SW)
				__builtin_prefetch(&s->hosts[p->from_host]);
		}
	}
	e = sim_evq_ahead(&s->q, PF_HOST);
	if (e) {
		uint32_t h = event_host(s, e);
		if (h != SIM_NONE && s->engs[h]) {
			/* struct mrce keeps what every engine call reads first
			 * in its first two lines (transport/store.h). */
			__builtin_prefetch(s->engs[h]);
			__builtin_prefetch((const char *)s->engs[h] + 64);
		}
	}
}

int mrc_sim_run(struct mrc_sim *s, char *err, size_t errlen)
{
	if (s->ran)
		return mrc__errf(err, errlen, "run: already ran");
	s->ran = 1;
	double t0 = mrc__mono_s(), c0 = cpu();
	uint64_t until = s->cfg.until_ns ? s->cfg.until_ns * SIM_PS_PER_NS : UINT64_MAX;
	uint64_t hold = s->cfg.hold_ns * SIM_PS_PER_NS;
	struct sim_event ev;
	int done = 0;
	while (!s->oom) {
		int got = sim_evq_pop(&s->q, &ev);
		if (s->n_rxq && (!got || ev.t != s->now)) {
			/* The instant is over: its receive batches end.  When
			 * their sends schedule something before ev (the next
			 * event was further away than a frame time), ev goes
			 * back in its place and the earlier event runs first. */
			s->sched_min = UINT64_MAX;
			sim_host_rx_flush(s);
			if (!got || s->sched_min < ev.t) {
				if (got && sim_evq_requeue(&s->q, &ev))
					s->oom = 1;
				continue;
			}
		}
		if (!got)
			break;
		int all = s->flows_done + s->flows_failed == s->n_flows &&
			  !sim_step_pending(s);
		if (ev.t > until || (all && ev.t > hold)) {
			done = 1;
			break;
		}
		s->now = ev.t;
		s->events++;
		prefetch(s);
		switch (sim_event_type(&ev)) {
		case SE_ARRIVE:
			sim_arrive(s, (struct sim_pkt *)(uintptr_t)ev.arg);
			break;
		case SE_TXDONE:
			sim_port_txdone(s, (uint32_t)ev.arg);
			break;
		case SE_TIMER:
			sim_host_timer(s, (uint32_t)ev.arg, ev.t);
			break;
		case SE_START:
			sim_flow_start(s, (uint32_t)ev.arg);
			break;
		case SE_FAULT:
			sim_fault_apply(s, (uint32_t)ev.arg);
			break;
		case SE_STEP:
			sim_step_event(s, (uint32_t)ev.arg);
			break;
		case SE_RXEND:
			sim_host_rx_end(s, (uint32_t)ev.arg);
			break;
		}
		if (s->cfg.progress && !(s->events & (s->progress_every - 1)))
			progress(s, 0);
	}
	if (!done && (s->flows_done + s->flows_failed < s->n_flows || sim_step_pending(s)))
		s->stalled = 1;
	if (s->cfg.progress)
		progress(s, 1);
	verify(s);
	sim_faults_analyse(s);
	s->wall_s = mrc__mono_s() - t0;
	s->cpu_s = cpu() - c0;
	struct rusage ru;
	if (!getrusage(RUSAGE_SELF, &ru))
		s->maxrss_kb = ru.ru_maxrss;
	if (s->oom)
		return mrc__errf(err, errlen, "run: out of memory"), -ENOMEM;
	return 0;
}
