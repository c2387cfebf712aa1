/* Logs and diagnostics of the in-memory channel; see chan.h. */
#include <inttypes.h>

#include "tests/support/chan.h"

size_t chan_count_wc(const struct chan *ch, uint32_t n, uint32_t qpn, int op)
{
	size_t c = 0;
	for (size_t i = 0; i < ch->node[n].nwc; i++) {
		const struct mrce_wc *w = &ch->node[n].wc[i];
		if ((qpn == UINT32_MAX || w->qpn == qpn) && (op < 0 || w->op == op))
			c++;
	}
	return c;
}

size_t chan_count_evt(const struct chan *ch, uint32_t n, int type)
{
	size_t c = 0;
	for (size_t i = 0; i < ch->node[n].nevt; i++)
		if (type < 0 || ch->node[n].evt[i].type == type)
			c++;
	return c;
}

void chan_clear_logs(struct chan *ch)
{
	for (uint32_t i = 0; i < ch->cfg.nodes; i++)
		ch->node[i].nwc = ch->node[i].nevt = 0;
}

void chan_dump(const struct chan *ch, FILE *f)
{
	fprintf(f, "chan: now=%" PRIu64 " (+%" PRIu64 " ns) seed=%" PRIu64 " in flight=%zu "
		"handed=%" PRIu64 " delivered=%" PRIu64 " lost=%" PRIu64 " blackholed=%" PRIu64
		" qdrop=%" PRIu64 " dups=%" PRIu64 " trimmed=%" PRIu64 " corrupted=%" PRIu64 "\n",
		ch->now, ch->now - (uint64_t)CHAN_T0, ch->cfg.seed, ch->heap.n, ch->st.handed,
		ch->st.delivered, ch->st.lost, ch->st.blackholed, ch->st.q_dropped,
		ch->st.dups, ch->st.trimmed, ch->st.corrupted);
	for (uint32_t i = 0; i < ch->cfg.nodes; i++) {
		const struct chan_node *n = &ch->node[i];
		struct mrce_stats st;
		mrce_stats(n->e, &st);
		fprintf(f, "  node %u: deadline=%" PRIu64 " tx_pending=%d wcs=%" PRIu64
			" events=%" PRIu64 " rx_err=%" PRIu64 " tx_data=%" PRIu64 " retx=%" PRIu64
			" rto=%" PRIu64 " placed=%" PRIu64 "\n", i,
			mrce_next_deadline(n->e), mrce_tx_pending(n->e),
			n->wc_total, n->evt_total, n->rx_err, st.tx_data, st.tx_retx,
			st.rto_fires, st.bytes_placed);
		int shown = 0;
		for (uint32_t q = 0; q < 1024 && shown < 8; q++) {
			struct mrce_qp_info qi;
			if (mrce_qp_info(n->e, q, &qi) < 0)
				continue;
			shown++;
			fprintf(f, "    qp %u: state=%u err=%d inflight=%u cwnd=%u srtt=%" PRIu64
				" rto=%" PRIu64 " tx=%" PRIu64 " retx=%" PRIu64 " acked=%" PRIu64
				" placed=%" PRIu64 "\n", q, qi.state, qi.error, qi.inflight,
				qi.cwnd_bytes, qi.srtt_ns, qi.rto_ns, qi.tx_pkts, qi.retx,
				qi.bytes_acked, qi.bytes_placed);
		}
	}
}
