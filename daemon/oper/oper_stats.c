/* `mrcctl stats`: every counter of the engine, the datapath, the daemon
 * core and the operator interface, with the planes, peers and the path
 * RTT histogram (docs/ctl.md; Prometheus text is made from it). */
#include <stdio.h>
#include <string.h>

#include "daemon/clients/clients.h"
#include "daemon/oper/oper.h"

/* Snapshot histogram of every path's smoothed RTT (le bounds in us). */
static json_t *rtt_hist(struct mrcd *d)
{
	static const double le[] = { 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 50000, 100000 };
	enum { N = sizeof(le) / sizeof(le[0]) };
	uint64_t cnt[N + 1] = { 0 }, n = 0;
	double sum = 0;
	struct mrcd_peer_view pe;
	for (uint32_t it = 0; mrcd_peer_next(d, &it, &pe);) {
		for (uint32_t ev = 0; ev < pe.nev; ev++) {
			struct mrce_ev_info i;
			if (!mrcd_oper_path_exists(&pe, ev) || mrce_ev_info(mrcd_engine(d), pe.id, ev, &i) || !i.srtt_ns)
				continue;
			double us = (double)i.srtt_ns / 1e3;
			int b = 0;
			while (b < N && us > le[b])
				b++;
			cnt[b]++;
			n++;
			sum += us;
		}
	}
	json_t *bl = json_array(), *bc = json_array();
	uint64_t cum = 0;
	for (int b = 0; b < N; b++) {
		cum += cnt[b];
		json_array_append_new(bl, json_real(le[b]));
		json_array_append_new(bc, json_integer((json_int_t)cum));
	}
	return json_pack("{s:o, s:o, s:I, s:f}", "le_us", bl, "cumulative", bc, "count",
			 (json_int_t)n, "sum_us", sum);
}

/* The engine's counters (transport/engine.h). */
static json_t *stats_engine(struct mrcd *d)
{
	struct mrce_stats s;
	mrce_stats(mrcd_engine(d), &s);
	json_t *drop = json_object(), *ntx = json_object(), *nrx = json_object();
	for (int i = 1; i < MRCE_DROP__COUNT; i++)
		json_object_set_new(drop, mrce_drop_name((unsigned)i),
				    json_integer((json_int_t)s.rx_drop[i]));
	/* Codes the transport adds later still show, by number. */
	static const char *nn[] = { "none", "trimmed", "oow", "access", "rnr", "noqp" };
	for (int i = 1; i <= MRCE_NACK_MAX; i++) {
		char num[16];
		snprintf(num, sizeof(num), "nack%d", i);
		const char *k = i < (int)(sizeof(nn) / sizeof(nn[0])) ? nn[i] : num;
		json_object_set_new(ntx, k, json_integer((json_int_t)s.nack_tx[i]));
		json_object_set_new(nrx, k, json_integer((json_int_t)s.nack_rx[i]));
	}
	json_t *eng = json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:o, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:o, s:o, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
		"rx_pkts", (json_int_t)s.rx_pkts, "tx_pkts", (json_int_t)s.tx_pkts,
		"tx_data", (json_int_t)s.tx_data, "tx_retx", (json_int_t)s.tx_retx,
		"tx_acks", (json_int_t)s.tx_acks, "tx_probes", (json_int_t)s.tx_probes,
		"rx_drop", drop, "rx_unknown_qp", (json_int_t)s.rx_unknown_qp,
		"rx_bad_peer", (json_int_t)s.rx_bad_peer, "rx_qp_error", (json_int_t)s.rx_qp_error,
		"rx_dup", (json_int_t)s.rx_dup, "rx_oow", (json_int_t)s.rx_oow,
		"rx_trimmed", (json_int_t)s.rx_trimmed, "rx_ecn", (json_int_t)s.rx_ecn,
		"nack_tx", ntx, "nack_rx", nrx, "access_errors", (json_int_t)s.access_errors,
		"rto_fires", (json_int_t)s.rto_fires, "loss_detected", (json_int_t)s.loss_detected,
		"ctrl_overflow", (json_int_t)s.ctrl_overflow, "events_dropped", (json_int_t)s.events_dropped,
		"ev_changes", (json_int_t)s.ev_changes, "bytes_placed", (json_int_t)s.bytes_placed,
		"msgs_completed", (json_int_t)s.msgs_completed);
	json_t *tok = json_object();
	for (int k = 0; k < MRCE_TOK__COUNT; k++)
		json_object_set_new(tok, mrce_tok_kind_name((enum mrce_tok_kind)k),
				    json_integer((json_int_t)s.rx_bad_token[k]));
	json_object_set_new(eng, "rx_bad_token", tok);
	/* ACKs that rode on reverse data, and held ACKs that left alone;
	 * paths suspected under congestion: probed, kept, retired. */
	json_object_update_missing_new(eng, json_pack("{s:I, s:I, s:I, s:I, s:I, s:I}",
		"tx_pb_acks", (json_int_t)s.tx_pb_acks, "rx_pb_acks", (json_int_t)s.rx_pb_acks,
		"ack_delay_expired", (json_int_t)s.ack_delay_expired,
		"suspect_probes", (json_int_t)s.suspect_probes,
		"suspect_cleared", (json_int_t)s.suspect_cleared,
		"suspect_retired", (json_int_t)s.suspect_retired));
	json_object_set_new(eng, "suspect_extended", json_integer((json_int_t)s.suspect_extended));
	json_object_set_new(eng, "tlp_probes", json_integer((json_int_t)s.tlp_probes));
	/* RTOs the next ACK proved spurious (ack_rx.c rto_check). */
	json_object_set_new(eng, "rto_spurious", json_integer((json_int_t)s.rto_spurious));
	/* Losses the reorder window declared, by evidence; declarations the
	 * peer proved wrong, by rule (docs/design.md "Loss detection"). */
	json_object_update_missing_new(eng, json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
		"loss_own_path", (json_int_t)s.loss_own_path,
		"loss_cross_path", (json_int_t)s.loss_cross_path,
		"loss_spurious", (json_int_t)s.loss_spurious,
		"loss_spurious_own", (json_int_t)s.loss_spurious_own,
		"loss_spurious_cross", (json_int_t)s.loss_spurious_cross,
		"loss_spurious_tlp", (json_int_t)s.loss_spurious_tlp,
		"loss_spurious_rto", (json_int_t)s.loss_spurious_rto));
	/* The RTO evidence (engine.h mrce_stats rto_lag, rto_sp_*). */
	json_t *lag = json_array(), *after = json_array(), *ratio = json_array();
	for (int k = 0; k < MRCE_RTO_HIST; k++) {
		json_array_append_new(lag, json_integer((json_int_t)s.rto_lag[k]));
		json_array_append_new(after, json_integer((json_int_t)s.rto_sp_after[k]));
		json_array_append_new(ratio, json_integer((json_int_t)s.rto_sp_ratio[k]));
	}
	json_object_set_new(eng, "rto_lag", lag);
	json_object_set_new(eng, "rto_sp_after", after);
	json_object_set_new(eng, "rto_sp_ratio", ratio);
	json_object_update_missing_new(eng, json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
		"rto_sp_rto_ns", (json_int_t)s.rto_sp_rto_ns,
		"rto_sp_srtt_ns", (json_int_t)s.rto_sp_srtt_ns,
		"rto_sp_rttvar_ns", (json_int_t)s.rto_sp_rttvar_ns,
		"rto_sp_floor_ns", (json_int_t)s.rto_sp_floor_ns,
		"rto_sp_lag_ns", (json_int_t)s.rto_sp_lag_ns,
		"rto_sp_silent", (json_int_t)s.rto_sp_silent,
		"rto_silent", (json_int_t)s.rto_silent));
	json_object_update_missing_new(eng, json_pack("{s:I, s:I}",
		"rto_lost_rest", (json_int_t)s.rto_lost_rest,
		"loss_spurious_rto_rest", (json_int_t)s.loss_spurious_rto_rest));
	/* Of the piggybacked ACKs, those of another QP to the same peer. */
	json_object_set_new(eng, "tx_xacks", json_integer((json_int_t)s.tx_xacks));
	json_object_set_new(eng, "rx_xacks", json_integer((json_int_t)s.rx_xacks));
	/* Probe replies that answer no outstanding probe; NOQPs not sent. */
	json_object_update_missing_new(eng, json_pack("{s:I, s:I}",
		"rx_probe_stale", (json_int_t)s.rx_probe_stale,
		"noqp_limited", (json_int_t)s.noqp_limited));
	/* Data packets per traffic class, and the turns the lower band got
	 * over waiting urgent QPs (bulk_min_pct). */
	json_t *cls = json_object();
	for (unsigned k = 0; k < MRCE_TC__COUNT; k++)
		json_object_set_new(cls, mrce_tclass_name(k), json_integer((json_int_t)s.tx_class[k]));
	json_object_set_new(eng, "tx_class", cls);
	json_object_set_new(eng, "tx_share_turns", json_integer((json_int_t)s.tx_share_turns));
	return eng;
}

/* The datapath's counters and the rates sampled each second. */
static json_t *stats_datapath(struct oper *o)
{
	struct mrcd *d = o->d;
	struct mrc_dp_stats ds;
	mrc_dp_get_stats(mrcd_datapath(d), &ds);
	json_t *dp = json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
		"tx_pkts", (json_int_t)ds.tx_pkts, "tx_bytes", (json_int_t)ds.tx_bytes,
		"tx_errs", (json_int_t)ds.tx_errs, "tx_eagain", (json_int_t)ds.tx_eagain,
		"rx_pkts", (json_int_t)ds.rx_pkts, "rx_bytes", (json_int_t)ds.rx_bytes,
		"rx_truncated", (json_int_t)ds.rx_truncated, "rx_dropped", (json_int_t)ds.rx_dropped,
		"tx_pps", (json_int_t)o->dp_tx_rate, "rx_pps", (json_int_t)o->dp_rx_rate,
		"tx_bytes_per_s", (json_int_t)o->dp_txb_rate, "rx_bytes_per_s", (json_int_t)o->dp_rxb_rate);
	/* udp's gso and gro (docs/datapaths.md): datagrams sent in runs and
	 * received in coalesced buffers, and planes that fell back to one
	 * datagram per message or buffer. */
	json_object_update_missing_new(dp, json_pack("{s:I, s:I, s:I, s:I}",
		"tx_gso_segs", (json_int_t)ds.tx_gso_segs,
		"tx_gso_fallbacks", (json_int_t)ds.tx_gso_fallbacks,
		"rx_gro_segs", (json_int_t)ds.rx_gro_segs,
		"rx_gro_fallbacks", (json_int_t)ds.rx_gro_fallbacks));
	/* udp's urgent receive queue (mrc_dp_cfg.urgent_dscp). */
	json_object_update_missing_new(dp, json_pack("{s:I, s:I}",
		"rx_urgent", (json_int_t)ds.rx_urgent,
		"rx_urgent_fallbacks", (json_int_t)ds.rx_urgent_fallbacks));
	return dp;
}

/* The daemon core's own drops and checks. */
static json_t *stats_daemon(struct mrcd *d)
{
	struct mrcd_stats st;
	mrcd_stats_get(d, &st);
	json_t *dm = json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:f}",
		"rx_unknown_src", (json_int_t)st.rx_unknown_src, "rx_short", (json_int_t)st.rx_short,
		"tx_unmapped", (json_int_t)st.tx_unmapped, "wc_unbound", (json_int_t)st.wc_unbound,
		"ctrl_rx", (json_int_t)st.ctrl_rx, "ctrl_tx", (json_int_t)st.ctrl_tx,
		"ctrl_bad", (json_int_t)st.ctrl_bad,
		"uptime_s", (double)(mrcd_now() - mrcd_started_ns(d)) / 1e9);
	/* Authentication drops by reason (docs/security.md). */
	json_object_update_missing_new(dm, json_pack("{s:I, s:I, s:I, s:I, s:I, s:I}",
		"rx_bad_sport", (json_int_t)st.rx_bad_sport,
		"ctrl_bad_mac", (json_int_t)st.ctrl_bad_mac,
		"ctrl_wrong_dst", (json_int_t)st.ctrl_wrong_dst,
		"ctrl_wrong_src", (json_int_t)st.ctrl_wrong_src,
		"ctrl_replay", (json_int_t)st.ctrl_replay,
		"ctrl_stale", (json_int_t)st.ctrl_stale));
	/* CTRL sessions (challenges) and packets from hosts that are no peer. */
	json_object_update_missing_new(dm, json_pack("{s:I, s:I, s:I, s:I}",
		"ctrl_no_session", (json_int_t)st.ctrl_no_session,
		"ctrl_challenge_tx", (json_int_t)st.ctrl_challenge_tx,
		"ctrl_challenge_rx", (json_int_t)st.ctrl_challenge_rx,
		"rx_no_peer", (json_int_t)st.rx_no_peer));
	/* Data on the verbs side channel (only CTRL belongs there): dropped. */
	json_object_set_new(dm, "rx_side_data", json_integer((json_int_t)st.rx_side_data));
	/* Fabric health (docs/health.md). */
	json_object_update_missing_new(dm, json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
		"health_changes", (json_int_t)st.health_changes,
		"health_located", (json_int_t)st.health_located,
		"health_denied", (json_int_t)st.health_denied,
		"health_tx", (json_int_t)st.health_tx, "health_rx", (json_int_t)st.health_rx,
		"health_rx_limited", (json_int_t)st.health_rx_limited,
		"health_rx_bad", (json_int_t)st.health_rx_bad,
		"health_suspects", (json_int_t)st.health_suspects));
	/* Datagrams to this host itself, delivered in-process (local.c). */
	json_object_update_missing_new(dm, json_pack("{s:I, s:I, s:I, s:I, s:I}",
		"local_tx", (json_int_t)st.local_tx,
		"local_drop", (json_int_t)st.local_drop,
		"local_ref", (json_int_t)st.local_ref,
		"local_unref", (json_int_t)st.local_unref,
		"timer_superseded", (json_int_t)st.timer_superseded));
	/* The engine timer (timer.c): fires, early fires, timerfd re-arms and
	 * the lateness of the fires (timer_late_us: by bucket, in us, Prometheus
	 * labels). */
	json_object_update_missing_new(dm, json_pack("{s:I, s:I, s:I}",
		"timer_fires", (json_int_t)st.timer_fires,
		"timer_early", (json_int_t)st.timer_early,
		"timer_rearms", (json_int_t)st.timer_rearms));
	static const char *const late_us[MRCD_TIMER_LATE_BUCKETS] = {
		"lt10", "lt50", "lt100", "lt250", "lt500", "lt1000", "lt2000", "ge2000" };
	json_t *late = json_object();
	for (unsigned i = 0; i < MRCD_TIMER_LATE_BUCKETS; i++)
		json_object_set_new(late, late_us[i], json_integer((json_int_t)st.timer_late[i]));
	json_object_set_new(dm, "timer_late_us", late);
	/* AEAD mode (payload_encryption = aes-gcm): seals and drops. */
	struct mrce_seal_stats es;
	if (!mrcd_aead_stats(d, &es)) {
		json_object_set_new(dm, "enc", json_pack(
			"{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
			"tx_sealed", (json_int_t)es.tx_sealed, "tx_fail", (json_int_t)es.tx_fail,
			"tx_nokey", (json_int_t)es.tx_nokey, "rx_opened", (json_int_t)es.rx_opened,
			"rx_trimmed", (json_int_t)es.rx_trimmed,
			"rx_bad_auth", (json_int_t)es.rx_bad_auth,
			"rx_bad_pcrc", (json_int_t)es.rx_bad_pcrc,
			"rx_bad_len", (json_int_t)es.rx_bad_len,
			"rx_missing", (json_int_t)es.rx_missing, "rx_nokey", (json_int_t)es.rx_nokey,
			"rx_replay", (json_int_t)es.rx_replay, "rx_stale", (json_int_t)es.rx_stale));
	}
	return dm;
}

/* The operator interface's and the client socket's counters. */
static json_t *stats_oper(struct oper *o)
{
	json_t *op = json_pack("{s:I, s:I, s:I, s:I, s:I, s:I}",
		"connections", (json_int_t)o->conns_total, "refused", (json_int_t)o->refused_total,
		"metrics_refused", (json_int_t)o->http_refused,
		"requests", (json_int_t)o->requests_total, "events", (json_int_t)o->seq,
		"log_suppressed", (json_int_t)o->bucket.suppressed_total);
	/* Local sockets under misuse (docs/security.md "Local users"). */
	uint64_t cref, chto, cpaused;
	mrcd_clients_counters(&cref, &chto, &cpaused);
	json_object_update_missing_new(op, json_pack("{s:I, s:I, s:I, s:I, s:I}",
		"idle_closed", (json_int_t)o->idle_closed,
		"metrics_evicted", (json_int_t)o->http_evicted,
		"clients_refused", (json_int_t)cref,
		"clients_hello_timeouts", (json_int_t)chto,
		"accept_paused", (json_int_t)(cpaused + o->lguard.paused + o->mguard.paused)));
	return op;
}

json_t *mrcd_oper_stats(struct oper *o)
{
	struct mrcd *d = o->d;
	json_t *eng = stats_engine(d), *dp = stats_datapath(o), *dm = stats_daemon(d),
	       *op = stats_oper(o);
	json_t *pl = mrcd_oper_planes(o), *pe = mrcd_oper_peers(o);
	json_t *r = json_pack("{s:o, s:o, s:o, s:o, s:o, s:O, s:O, s:o}", "engine", eng, "datapath", dp,
			      "daemon", dm, "oper", op, "rings", mrcd_oper_rings(d),
			      "planes", json_object_get(pl, "planes"),
			      "peers", json_object_get(pe, "peers"), "path_srtt_histogram", rtt_hist(d));
	json_object_set_new(r, "fabric", mrcd_oper_fabric_links(o));
	json_decref(pl);
	json_decref(pe);
	return r;
}

