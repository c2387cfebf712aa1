/* Sender stalls (setting `stalls on`): how long each host's NIC had no data
 * packet to send while one of its flows was still sending, and why - the
 * question behind a permutation's FCT / ideal (docs/sim.md).  Only the
 * engine's public view (mrce_qp_info) is read, once per idle period, so
 * the engine's hot path is untouched and a run without the setting does no
 * work here.  Simulated time only: deterministic. */
#include "sim/sim_int.h"

/* The host's most telling reason over its unfinished outgoing flows:
 * window > cwnd > other > drain; -1 when it has none. */
static int stall_cause(struct mrc_sim *s, uint32_t h)
{
	const struct sim_host *x = &s->hosts[h];
	int why = -1;
	for (uint32_t q = 0; q < x->nqps; q++) {
		const struct sim_conn *c = &s->conns[x->qp_conn[q]];
		const struct sim_flow *fl = &s->flows[c->flow];
		struct mrce_qp_info in;
		if (fl->src != h || !fl->posted || fl->end_ps ||
		    mrce_qp_info(x->eng, c->sqpn, &in))
			continue;
		s->stalls.n++;
		s->stalls.cwnd_sum += in.cwnd_bytes;
		s->stalls.srtt_sum += in.srtt_ns;
		int w;
		if ((in.tx_pkts - in.retx) * s->ecfg.mtu >= c->len)
			w = SIM_STALL_DRAIN;
		else if (in.inflight >= s->ecfg.window)
			w = SIM_STALL_WINDOW;
		else if ((uint64_t)(in.inflight + 1) * s->ecfg.mtu > in.cwnd_bytes)
			w = SIM_STALL_CWND;
		else
			w = SIM_STALL_OTHER;
		static const int rank[SIM_STALL__N] = { 0, 2, 3, 1 };
		if (why < 0 || rank[w] > rank[why])
			why = w;
	}
	return why;
}

void sim_stall_begin(struct mrc_sim *s, uint32_t h)
{
	struct sim_host *x = &s->hosts[h];
	if (x->idle_since)
		return;
	/* Idle once the last data frame has left every NIC of the host
	 * (its txdone asks again), not when the NIC's wait queue empties. */
	for (uint32_t p = 0; p < s->fab.planes; p++) {
		const struct sim_pkt *k = s->ports[sim_fabric_nic(&s->fab, h, p)].cur;
		if (k && (k->flags & PF_DATA))
			return;
	}
	int why = stall_cause(s, h);
	if (why < 0)
		return;
	x->idle_since = s->now ? s->now : 1;
	x->idle_why = (uint8_t)why;
}

void sim_stall_end(struct mrc_sim *s, uint32_t h)
{
	struct sim_host *x = &s->hosts[h];
	if (!x->idle_since)
		return;
	s->stalls.ps[x->idle_why] += s->now - x->idle_since;
	x->idle_since = 0;
}
