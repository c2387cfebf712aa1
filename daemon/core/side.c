/* The side channel: datapaths with endpoints (verbs) make first contact
 * over udp on the same planes, control only (daemon/core/node.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/core/node.h"

static uint16_t side_port(const struct mrcd *d)
{
	return mrcd_cfg_side_port(&d->cfg);
}

/* The side channel (core.h, d->side) carries control only. */
static void on_side_rx(struct ev_loop *loop, ev_io *w, int revents)
{
	struct mrcd *d = w->data;
	(void)loop;
	(void)revents;
	struct mrc_dp_in in[MRC_DP_BATCH];
	int n = mrc_dp_recv(d->side, (uint32_t)(w - d->side_w), in, MRC_DP_BATCH);
	uint64_t now = mrcd_now();
	for (int i = 0; i < n; i++) {
		if (!mrce_is_ctrl(in[i].buf, in[i].len)) {
			d->st.rx_side_data++;
			continue;
		}
		/* From a daemon's side port, it stands for its MRC port. */
		if (in[i].sport == side_port(d))
			in[i].sport = (uint16_t)d->cfg.port;
		else
			in[i].sport = 0;   /* counted as rx_bad_sport */
		mrcd_node_rx(d, &in[i], now);
	}
	mrcd_flush(d);
}

/* Opens the side channel when the datapath has endpoints (dpep.h): the
 * udp provider on the same planes, on side_port. */
int mrcd__side_open(struct mrcd *d, const struct mrc_dp_cfg *dc, char *err, size_t errlen)
{
	if (!d->topo || !mrc_dp_has_eps(d->dp))
		return 0;
	struct mrc_dp_cfg sc = *dc;
	/* Control only, read one batch per wakeup (on_side_rx): no GRO, whose
	 * split buffers could hold datagrams the descriptor does not show. */
	sc.args = "gro=off";
	sc.urgent_dscp = 0;   /* control only: one queue */
	sc.port = side_port(d);
	char why[256] = "";
	int rc = mrc_dp_open(&d->side, "udp", &sc, why, sizeof(why));
	if (rc) {
		snprintf(err, errlen, "datapath %s: its side channel for first contact (udp): %s",
			 mrc_dp_name(d->dp), why[0] ? why : strerror(-rc));
		return rc;
	}
	for (uint32_t i = 0; i < d->nplanes; i++) {
		ev_io_init(&d->side_w[i], on_side_rx, mrc_dp_fd(d->side, i), EV_READ);
		ev_set_priority(&d->side_w[i], MRCD_PRI_RX);
		d->side_w[i].data = d;
		ev_io_start(d->loop, &d->side_w[i]);
	}
	mrcd_log(MRCD_LOG_NOTICE, "datapath %s: first contact over udp port %u",
		 mrc_dp_name(d->dp), (unsigned)sc.port);
	return 0;
}
