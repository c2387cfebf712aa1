/* Setting the data plane up and down: topology, cluster key, peer tables,
 * engine, datapath and its watchers (the jobs themselves: node.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth/auth.h"
#include "daemon/core/enc.h"
#include "daemon/core/node.h"
#include "srv6/linkmon.h"

/* ---- setup ------------------------------------------------------------- */

#define REPLAY_WINDOW_NS 5000000000ull   /* CTRL reordering tolerated */

/* The cluster key: without it this daemon could neither prove itself to
 * its peers nor check them, so it does not start. */
static int mrcd_auth_init(struct mrcd *d, char *err, size_t errlen)
{
	const char *why = "";
	int rc = mrc_auth_key_load(d->cfg.key_file, &d->auth, &why);
	if (rc) {
		snprintf(err, errlen, "cluster key %s (key_file): %s; `mrcd --genkey PATH` makes "
			 "one, to copy to every host (owner root, mode 0600; docs/operator.md)",
			 d->cfg.key_file, why);
		return rc;
	}
	/* A fresh epoch per start: peers issue us cookies for it, so nothing
	 * sealed by or for an earlier run is acted on (docs/security.md);
	 * stamps within max_clock_skew_ms of our clock (NTP/PTP). */
	if ((rc = mrc_auth_ctrl_tx_init(&d->ctrl_tx))) {
		snprintf(err, errlen, "CTRL epoch: %s", strerror(-rc));
		return rc;
	}
	struct mrc_auth_replay_cfg rc_cfg = { .self_host = d->self, .max_hosts = d->nhosts,
		.window_ns = REPLAY_WINDOW_NS,
		.max_skew_ns = (uint64_t)d->cfg.max_clock_skew_ms * 1000000,
		.epoch = d->ctrl_tx.epoch };
	if ((rc = mrc_auth_replay_create(&rc_cfg, &d->replay)))
		snprintf(err, errlen, "CTRL replay table: %s", strerror(-rc));
	return rc;
}

static int plane_ifs(struct mrcd *d, char *err, size_t errlen)
{
	if (d->cfg.plane_ifs[0]) {
		char tmp[MRCD_PATH_MAX], *save = NULL;
		snprintf(tmp, sizeof(tmp), "%s", d->cfg.plane_ifs);
		uint32_t n = 0;
		for (char *t = strtok_r(tmp, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
			if (n == d->nplanes || strlen(t) >= 16) {
				snprintf(err, errlen, "plane_ifs: '%s' names more than %u planes or a name over 15 characters",
					 d->cfg.plane_ifs, d->nplanes);
				return -EINVAL;
			}
			snprintf(d->plane_if[n++], 16, "%s", t);
		}
		if (n != d->nplanes) {
			snprintf(err, errlen, "plane_ifs: %u names for %u planes", n, d->nplanes);
			return -EINVAL;
		}
		return 0;
	}
	/* The fabric tool names a host's plane NIC after the leaf it meets. */
	for (uint32_t pl = 0; pl < d->nplanes; pl++)
		snprintf(d->plane_if[pl], 16, "%s",
			 d->topo->nodes[mrc_topo_host_leaf(d->topo, d->self, pl)].name);
	return 0;
}

static int resolve_self(struct mrcd *d, char *err, size_t errlen)
{
	const char *h = d->cfg.host;
	if (!mrc_topo_host_lookup(d->topo, h, &d->self))
		return 0;
	snprintf(err, errlen, "host '%s' is neither a host name nor an index below %u of the topology",
		 h, d->topo->n_hosts);
	return -EINVAL;
}

/* Where this host sits: the topology's block, its index and address, its
 * plane NICs; without a topology, the single-host loopback mode. */
static int node_place(struct mrcd *d, char *err, size_t errlen)
{
	int rc;
	mrc_usid_block_default(&d->blk);
	if (!d->cfg.topology[0]) {
		d->nhosts = d->nplanes = 1;
		d->self_addr = in6addr_loopback;
		return 0;
	}
	if ((rc = mrc_topo_load(d->cfg.topology, &d->topo, err, errlen)))
		return rc;
	d->blk.prefix = d->topo->block;
	d->blk.bits = d->topo->block_bits;
	if ((rc = resolve_self(d, err, errlen)))
		return rc;
	d->nhosts = d->topo->n_hosts;
	d->nplanes = d->topo->planes;
	if ((rc = plane_ifs(d, err, errlen)))
		return rc;
	struct mrc_srv6_err e;
	uint16_t u = d->topo->nodes[d->topo->hosts[d->self]].usid;
	if (mrc_usid_encode(&d->blk, &u, 1, &d->self_addr, &e)) {
		snprintf(err, errlen, "host uSID %#x does not encode", u);
		return -EINVAL;
	}
	return 0;
}

/* The peer tables, sized by the topology. */
static int node_tables(struct mrcd *d)
{
	d->peer_of_host = malloc(sizeof(uint32_t) * d->nhosts);
	d->host_epoch = calloc(d->nhosts, sizeof(uint64_t));
	d->host_of_usid = malloc(sizeof(uint32_t) * 65536);
	d->qpb = calloc(65536, sizeof(*d->qpb));
	d->max_peers = d->nhosts < 65535 ? d->nhosts + 1 : 65535;
	d->peers = calloc(d->max_peers, sizeof(*d->peers));
	if (!d->peer_of_host || !d->host_epoch || !d->host_of_usid || !d->qpb || !d->peers)
		return -ENOMEM;
	memset(d->peer_of_host, 0xff, sizeof(uint32_t) * d->nhosts);
	memset(d->host_of_usid, 0xff, sizeof(uint32_t) * 65536);
	for (uint32_t h = 0; d->topo && h < d->nhosts; h++)
		d->host_of_usid[d->topo->nodes[d->topo->hosts[h]].usid] = h;
	return 0;
}

static int node_engine(struct mrcd *d, char *err, size_t errlen)
{
	struct mrce_cfg ec;
	mrce_cfg_default(&ec);
	/* A datagram to this host never meets a wire: local.c's in-process
	 * queue in topology mode, the kernel's lo (64 KiB MTU) through udp
	 * sockets in loopback mode; another provider without a topology
	 * would put it on a NIC, so it keeps mtu.  Fewer, larger packets
	 * between two clients of one mrcd: half the engine turns, ACKs and
	 * datagrams per byte (docs/client.md "Clients of one mrcd").  Other
	 * peers' QPs are held to mtu by the negotiation (cm.c). */
	d->local_mtu = d->cfg.mtu;
	if (d->cfg.local_mtu > d->cfg.mtu && (d->topo || !strcmp(d->cfg.datapath, "udp")))
		d->local_mtu = d->cfg.local_mtu;
	/* Loopback mode's only peer is this daemon on its own port (dport
	 * 0): handed over in-process as in topology mode, which saves each
	 * datagram a sendmmsg, lo and a wake-up (docs/client.md). */
	d->self_inproc = d->topo || (d->cfg.loopback_inproc && !strcmp(d->cfg.datapath, "udp"));
	ec.mtu = d->local_mtu;
	ec.window = d->cfg.window;
	ec.ev_floor = d->cfg.ev_floor;
	ec.max_peers = d->max_peers;
	ec.max_qps = 65535;
	ec.max_mrs = d->cfg.max_clients * d->cfg.client_max_mrs;   /* checked by mrcd_cfg_check_limits */
	ec.probe_interval_ns = (uint64_t)d->cfg.probe_interval_us * 1000;
	ec.probe_max_interval_ns = (uint64_t)d->cfg.probe_max_interval_us * 1000;
	ec.rto_min_ns = (uint64_t)d->cfg.rto_min_us * 1000;
	ec.rto_max_ns = (uint64_t)d->cfg.rto_max_us * 1000;
	if (ec.rto_init_ns < ec.rto_min_ns)
		ec.rto_init_ns = ec.rto_min_ns;
	if (ec.rto_init_ns > ec.rto_max_ns)
		ec.rto_init_ns = ec.rto_max_ns;
	/* The engine takes at most rto_min / 4: a longer hold is cut to it. */
	ec.ack_delay_ns = (uint64_t)d->cfg.ack_delay_us * 1000;
	if (ec.ack_delay_ns > ec.rto_min_ns / 4) {
		mrcd_log(MRCD_LOG_NOTICE, "ack_delay_us %u: %llu (rto_min_us / 4)", d->cfg.ack_delay_us,
			 (unsigned long long)(ec.rto_min_ns / 4000));
		ec.ack_delay_ns = ec.rto_min_ns / 4;
	}
	ec.tlp_lone = d->cfg.tlp_lone;
	ec.cc = strcmp(d->cfg.cc, "fixed") ? MRCE_CC_NSCC : MRCE_CC_FIXED;
	ec.rnr_retry = d->cfg.rnr_retry;
	ec.qp_ev_stats = d->cfg.qp_ev_stats;
	/* Cross-QP ACKs change the data header's length, which the AEAD
	 * mode's framing does not take (docs/wire.md "Cross-QP ACK"). */
	ec.xack = d->cfg.xack && !strcmp(d->cfg.payload_encryption, "off");
	ec.bulk_min_pct = d->cfg.bulk_min_pct;
	ec.no_path_timeout_ns = (uint64_t)d->cfg.no_path_timeout_ms * 1000000;
	ec.spray_slot = mrcd_cfg_spray_slot(&d->cfg, d->topo, d->self);
	/* Every QP and peer gets tokens derived from the cluster key. */
	ec.require_tokens = 1;
	const char *why = NULL;
	int rc = mrce_create(&ec, &d->eng, &why);
	if (rc) {
		snprintf(err, errlen, "engine: %s", why ? why : strerror(-rc));
		return rc;
	}
	if (ec.spray_slot)
		mrcd_log(MRCD_LOG_INFO, "spray slot %u (under leaf %s; spray_slot = topo)", ec.spray_slot,
			 d->topo->nodes[mrc_topo_host_leaf(d->topo, d->self, 0)].name);
	else
		mrcd_log(MRCD_LOG_INFO, "spray slot 0: hash of the QP (spray_slot = %s%s)",
			 d->cfg.spray_slot, d->topo ? "" : ", loopback fabric");
	return 0;
}

/* The configured datapath, its side channel, and a watcher per plane (or
 * a poller of the core's busy loop for a poll-mode provider). */
static int node_datapath(struct mrcd *d, char *err, size_t errlen)
{
	int rc;
	struct mrc_dp_plane pl[MRC_DP_MAX_PLANES];
	memset(pl, 0, sizeof(pl));
	for (uint32_t i = 0; i < d->nplanes; i++) {
		snprintf(pl[i].ifname, sizeof(pl[i].ifname), "%s", d->topo ? d->plane_if[i] : "");
		pl[i].local = d->self_addr;
	}
	struct mrc_dp_cfg dc = { .planes = pl, .nplanes = d->nplanes, .port = (uint16_t)d->cfg.port,
		.args = d->cfg.datapath_args[0] ? d->cfg.datapath_args : NULL };
	/* Urgent datagrams in a receive queue of their own (udp.h), unless
	 * the urgent DSCP is also another class's (it would catch those). */
	if (d->cfg.dscp_urgent != d->cfg.dscp_bulk && d->cfg.dscp_urgent != d->cfg.dscp_default)
		dc.urgent_dscp = (uint8_t)d->cfg.dscp_urgent;
	char dwhy[256] = "";
	if ((rc = mrc_dp_open(&d->dp, d->cfg.datapath, &dc, dwhy, sizeof(dwhy)))) {
		snprintf(err, errlen, "datapath %s: %s", d->cfg.datapath, dwhy[0] ? dwhy : strerror(-rc));
		return rc;
	}
	if ((rc = mrcd__side_open(d, &dc, err, errlen)))
		return rc;
	int polled = 0;
	for (uint32_t i = 0; i < d->nplanes; i++) {
		int fd = mrc_dp_fd(d->dp, i);
		if (fd == -EOPNOTSUPP) {
			polled = 1;
			continue;
		}
		if (fd < 0) {
			snprintf(err, errlen, "datapath %s: plane %u: no descriptor to wait on (%s)",
				 mrc_dp_name(d->dp), i, strerror(-fd));
			return fd;
		}
		ev_io_init(&d->rx_w[i], mrcd__on_rx, fd, EV_READ);
		ev_set_priority(&d->rx_w[i], MRCD_PRI_RX);
		d->rx_w[i].data = d;
		ev_io_start(d->loop, &d->rx_w[i]);
	}
	if (polled) {
		struct mrcd_poller p = { .poll = mrcd__dp_poll, .arm = mrcd__dp_arm, .ctx = d };
		if ((rc = mrcd_poller_add(d, &p))) {
			snprintf(err, errlen, "datapath %s: no poller slot", mrc_dp_name(d->dp));
			return rc;
		}
		mrcd_log(MRCD_LOG_NOTICE, "datapath %s is poll-mode: mrcd spins on its core",
			 mrc_dp_name(d->dp));
	}
	return 0;
}

int mrcd_node_init(struct mrcd *d, char *err, size_t errlen)
{
	int rc;
	if ((rc = node_place(d, err, errlen)) || (rc = mrcd_auth_init(d, err, errlen)) ||
	    (rc = node_tables(d)) || (rc = node_engine(d, err, errlen)) ||
	    (rc = node_datapath(d, err, errlen)))
		return rc;
	mrcd_timer_init(d);
	const char *why = NULL;
	if (!strcmp(d->cfg.payload_encryption, "aes-gcm") &&
	    (rc = mrcd_enc_create(&d->enc, &why))) {
		snprintf(err, errlen, "%s", why);
		return rc;
	}
	if (d->enc)
		mrcd_log(MRCD_LOG_NOTICE, "payload encryption: aes-gcm (connections keyed at setup)");
	if ((rc = mrcd_health_init(d))) {
		snprintf(err, errlen, "fabric health: %s", strerror(-rc));
		return rc;
	}
	return 0;
}

void mrcd_node_fini(struct mrcd *d)
{
	mrcd_timer_fini(d);
	mrcd_health_fini(d);
	mrcd_local_fini(d);
	if (d->lm)
		mrc_linkmon_close(d->lm);
	mrcd_poller_del(d, d);
	for (uint32_t i = 0; d->side && i < d->nplanes; i++)
		ev_io_stop(d->loop, &d->side_w[i]);
	mrc_dp_close(d->side);
	mrc_dp_close(d->dp);
	for (uint32_t p = 0; p < d->max_peers && d->peers; p++) {
		free(d->peers[p].dst);
		free(d->peers[p].plane);
		free(d->peers[p].deny);
	}
	if (d->enc)
		mrcd__enc_report(d);
	mrcd_enc_free(d->enc);
	mrce_destroy(d->eng);
	mrc_topo_free(d->topo);
	mrc_auth_replay_free(d->replay);
	mrc_auth_free(d->auth);
	free(d->peers);
	free(d->peer_of_host);
	free(d->host_epoch);
	free(d->host_of_usid);
	free(d->qpb);
}
