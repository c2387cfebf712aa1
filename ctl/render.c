/* Human tables for mrcctl, in the style of iproute2/ss: one header line,
 * columns padded to the widest cell, numbers as they come. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ctl/render.h"
#include "ctl/table.h"

/* A cell from a column key: "a.b" looks up b in the object at a; a
 * leading '%' renders a ratio as a percentage with two decimals. */
static char *key_cell(const json_t *e, const char *k)
{
	int pct = k[0] == '%';
	k += pct;
	const char *dot = strchr(k, '.');
	if (dot) {
		char outer[64];
		snprintf(outer, sizeof(outer), "%.*s", (int)(dot - k), k);
		e = get(e, outer);
		k = dot + 1;
	}
	return pct ? cellf("%.2f", json_number_value(get(e, k)) * 100) : cell(get(e, k));
}

/* Rows of an array: each column a key of the element (key_cell). */
static int simple(FILE *f, const json_t *arr, const char *const *head, const char *const *keys,
		  int (*keep)(const json_t *))
{
	if (!json_is_array(arr))
		return -EINVAL;
	struct table t;
	t_init(&t, head);
	size_t i;
	json_t *e;
	json_array_foreach(arr, i, e) {
		if (keep && !keep(e))
			continue;
		char **r = t_row(&t);
		if (!r)
			break;
		for (int c = 0; c < t.ncol; c++)
			r[c] = key_cell(e, keys[c]);
	}
	t_print(f, &t);
	return 0;
}

int mrc_ctl_render_planes(FILE *f, const json_t *res)
{
	static const char *h[] = { "PLANE", "NIC", "LINK", "ADMIN", "TX_PPS", "TX_PKTS", "LOST",
				   "LOSS%", "TRIMS", "ECN", "GOOD", "BAD", "DENIED", NULL };
	static const char *k[] = { "plane", "nic", "link", "admin", "tx_pps", "tx_pkts", "lost",
				   "%loss_ratio", "trims", "ecn", "evs.GOOD", "evs.ASSUMED_BAD",
				   "evs.DENIED", NULL };
	return simple(f, get(res, "planes"), h, k, NULL);
}

int mrc_ctl_render_peers(FILE *f, const json_t *res)
{
	static const char *h[] = { "PEER", "HOST", "ADDRESS", "PATHS", "GOOD", "BAD", "DENIED",
				   "QPS", "TX_PKTS", "LOST", "SRTT_MIN_US", NULL };
	static const char *k[] = { "peer", "host", "address", "paths", "evs.GOOD",
				   "evs.ASSUMED_BAD", "evs.DENIED", "qps", "tx_pkts", "lost",
				   "srtt_us_min", NULL };
	return simple(f, get(res, "peers"), h, k, NULL);
}

static int exists(const json_t *e) { return json_is_true(json_object_get(e, "exists")); }

int mrc_ctl_render_paths(FILE *f, const json_t *res)
{
	const json_t *a = get(res, "paths");
	if (!json_is_array(a))
		return -EINVAL;
	fprintf(f, "paths to %s (host %lld)\n", gs(res, "peer"), gi(res, "host"));
	static const char *h[] = { "EV", "PLANE", "SPINE", "ADDRESS", "STATE", "REASON", "SINCE",
				   "SRTT_US", "TX_PKTS", "LOST", "TRIMS", "ECN", "PROBES", NULL };
	struct table t;
	t_init(&t, h);
	size_t i;
	json_t *e;
	int absent = 0;
	json_array_foreach(a, i, e) {
		if (!exists(e)) {
			absent++;
			continue;
		}
		char **r = t_row(&t);
		if (!r)
			break;
		long long sp = gi(e, "spine");
		r[0] = cell(get(e, "ev"));
		r[1] = cell(get(e, "plane"));
		/* A detour carries data only while its plane has no other GOOD
		 * EV: say so, or an idle GOOD path looks broken. */
		r[2] = sp < 0 ? strdup("direct") :
		       json_is_true(get(e, "detour")) ? cellf("%.0f (detour)", (double)sp) : cell(get(e, "spine"));
		r[3] = cell(get(e, "address"));
		r[4] = cell(get(e, "state"));
		if (json_is_true(get(e, "admin_denied")))
			free(r[4]), r[4] = strdup("DENIED(admin)");
		r[5] = cell(get(e, "reason"));
		r[6] = cellf("%.1fs ago", json_number_value(get(e, "last_change_age_s")));
		r[7] = cell(get(e, "srtt_us"));
		r[8] = cell(get(e, "tx_pkts"));
		r[9] = cell(get(e, "lost"));
		r[10] = cell(get(e, "trims"));
		r[11] = cell(get(e, "ecn"));
		char b[48];
		snprintf(b, sizeof(b), "%lld/%lld", gi(e, "probes_ok"), gi(e, "probes_sent"));
		r[12] = strdup(b);
	}
	t_print(f, &t);
	if (absent)
		fprintf(f, "(%d EVs have no path between these hosts)\n", absent);
	return 0;
}

int mrc_ctl_render_probe(FILE *f, const json_t *res)
{
	const json_t *a = get(res, "results");
	if (!json_is_array(a))
		return -EINVAL;
	static const char *h[] = { "EV", "PLANE", "SPINE", "ADDRESS", "RESULT", "RTT_US", NULL };
	static const char *k[] = { "ev", "plane", "spine", "address", "result", "rtt_us", NULL };
	fprintf(f, "probe %s (host %lld): %lld sent, %lld answered, %lld lost\n", gs(res, "peer"),
		gi(res, "host"), gi(res, "sent"), gi(res, "answered"), gi(res, "lost"));
	return simple(f, a, h, k, NULL);
}

int mrc_ctl_render_qps(FILE *f, const json_t *res)
{
	static const char *h[] = { "QPN", "STATE", "PEER", "RQPN", "PLANES", "INFLIGHT", "CWND",
				   "SRTT_US", "RETX", "RTO_FIRES", "TX_PKTS", "RX_PKTS", "BYTES_ACKED",
				   NULL };
	static const char *k[] = { "qpn_hex", "state", "peer", "rqpn", "planes", "inflight",
				   "cwnd_bytes", "srtt_us", "retx", "rto_fires", "tx_pkts", "rx_pkts",
				   "bytes_acked", NULL };
	const json_t *qa = get(res, "qps");
	int rc = simple(f, qa, h, k, NULL);
	if (rc)
		return rc;
	/* Per EV: the paths each QP's data went over and where it lost. */
	static const char *he[] = { "QPN", "EV", "PLANE", "SPINE", "TX_PKTS", "SHARE", "LOST",
				    "LOST%", NULL };
	struct table t;
	t_init(&t, he);
	size_t i, j;
	json_t *q, *e;
	json_array_foreach(qa, i, q) {
		double tot = (double)gi(q, "tx_pkts");
		json_array_foreach(get(q, "evs"), j, e) {
			char **r = t_row(&t);
			if (!r)
				break;
			long long tx = gi(e, "tx_pkts"), lost = gi(e, "lost_pkts");
			r[0] = cell(get(q, "qpn_hex"));
			r[1] = cell(get(e, "ev"));
			r[2] = cell(get(e, "plane"));
			r[3] = gi(e, "spine") < 0 ? strdup("direct") : cell(get(e, "spine"));
			r[4] = cell(get(e, "tx_pkts"));
			r[5] = cellf("%.1f%%", tot > 0 ? 100.0 * (double)tx / tot : 0.0);
			r[6] = cell(get(e, "lost_pkts"));
			r[7] = cellf("%.2f%%", tx > 0 ? 100.0 * (double)lost / (double)tx : 0.0);
		}
		const json_t *o = get(q, "evs_other");
		if (json_is_object(o))
			fprintf(f, "(QP %s: %lld packets, %lld lost, on EVs beyond mrcd's qp_ev_stats)\n",
				gs(q, "qpn_hex"), gi(o, "tx_pkts"), gi(o, "lost_pkts"));
	}
	if (t.nrow) {
		fprintf(f, "\nper EV:\n");
		t_print(f, &t);
	} else {
		free(t.cell);
	}
	return 0;
}

static void kv(FILE *f, const char *indent, const json_t *o)
{
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)o, k, v) {
		if (json_is_object(v)) {
			fprintf(f, "%s%s:\n", indent, k);
			char in2[32];
			snprintf(in2, sizeof(in2), "%s  ", indent);
			kv(f, in2, v);
		} else if (json_is_array(v)) {
			char *s = json_dumps(v, JSON_COMPACT);
			fprintf(f, "%s%-22s %s\n", indent, k, s ? s : "");
			free(s);
		} else {
			char *s = cell(v);
			fprintf(f, "%s%-22s %s\n", indent, k, s ? s : "");
			free(s);
		}
	}
}

/* status's "admin_state": where the admin state is kept and what the
 * start restored from it (daemon/oper/oper_state.c). */
static void render_admin_state(FILE *f, const json_t *a)
{
	if (!json_is_object(a))
		return;
	if (!json_is_true(get(a, "persisted"))) {
		fprintf(f, "  admin state: not kept across restarts (state_dir unset)\n");
	} else if (json_is_true(get(a, "restored"))) {
		char *s = json_dumps(get(a, "planes_disabled"), JSON_COMPACT);
		fprintf(f, "  admin state: %s, restored at start (saved %s); still in effect: "
			"planes %s disabled, %lld path%s denied\n", gs(a, "file"), gs(a, "saved"),
			s ? s : "[]", gi(a, "paths_denied"), gi(a, "paths_denied") == 1 ? "" : "s");
		free(s);
	} else {
		fprintf(f, "  admin state: %s, nothing restored at start\n", gs(a, "file"));
	}
	if (json_is_string(get(a, "error")))
		fprintf(f, "  admin state error: %s\n", gs(a, "error"));
	if (json_is_string(get(a, "save_error")))
		fprintf(f, "  admin state save error: %s\n", gs(a, "save_error"));
}

int mrc_ctl_render_status(FILE *f, const json_t *res)
{
	if (!json_is_object(res))
		return -EINVAL;
	const json_t *h = get(res, "host"), *ev = get(res, "ev_states"), *tot = get(res, "totals");
	fprintf(f, "mrcd %s on %s: host %s (index %lld, %s), %s mode, %s datapath\n",
		gs(res, "version"), gs(res, "hostname"), gs(h, "name"), gi(h, "index"),
		gs(h, "address"), gs(res, "mode"), gs(res, "datapath"));
	fprintf(f, "  up %.0f s since %s\n", json_number_value(get(res, "uptime_s")), gs(res, "started"));
	fprintf(f, "  planes %lld (%lld up", gi(res, "planes"), gi(res, "planes_up"));
	if (json_array_size(get(res, "planes_admin_disabled"))) {
		char *s = json_dumps(get(res, "planes_admin_disabled"), JSON_COMPACT);
		fprintf(f, ", admin-disabled %s", s ? s : "");
		free(s);
	}
	fprintf(f, "), peers %lld, qps %lld\n", gi(res, "peers"), gi(res, "qps"));
	fprintf(f, "  paths: %lld GOOD, %lld ASSUMED_BAD, %lld DENIED\n", gi(ev, "GOOD"),
		gi(ev, "ASSUMED_BAD"), gi(ev, "DENIED"));
	const json_t *rg = get(res, "rings");
	if (json_is_object(rg))
		fprintf(f, "  polled rings: %lld active, %lld parked (poll interval %lld us), "
			"%lld parks, %lld notify wake-ups\n", gi(rg, "polled_active"),
			gi(rg, "polled_parked"), gi(rg, "poll_interval_us"), gi(rg, "parks"),
			gi(rg, "notify_wakeups"));
	render_admin_state(f, get(res, "admin_state"));
	fprintf(f, "  totals:\n");
	kv(f, "    ", tot);
	return 0;
}

int mrc_ctl_render_topology(FILE *f, const json_t *res)
{
	if (!json_is_object(res))
		return -EINVAL;
	fprintf(f, "%s fabric", gs(res, "mode"));
	if (json_is_string(get(res, "file")))
		fprintf(f, " %s, block %s", gs(res, "file"), gs(res, "block"));
	fprintf(f, ": %lld planes, %lld EVs, self %s\n", gi(res, "planes"), gi(res, "evs"), gs(res, "self"));
	size_t i;
	json_t *p;
	json_array_foreach(get(res, "plane_list"), i, p) {
		char *l = json_dumps(get(p, "leaves"), JSON_COMPACT), *s = json_dumps(get(p, "spines"), JSON_COMPACT);
		fprintf(f, "  plane %lld nic %s: leaves %s spines %s\n", gi(p, "plane"), gs(p, "nic"),
			l ? l : "", s ? s : "");
		free(l);
		free(s);
	}
	static const char *h[] = { "HOST", "INDEX", "USID", "ADDRESS", NULL };
	static const char *k[] = { "name", "index", "usid", "address", NULL };
	return simple(f, get(res, "hosts"), h, k, NULL);
}

void mrc_ctl_render_event(FILE *out, const json_t *ev)
{
	fprintf(out, "%s  %-6s %s\n", gs(ev, "time"), gs(ev, "kind"), gs(ev, "text"));
}

int mrc_ctl_render_events(FILE *f, const json_t *res)
{
	const json_t *a = get(res, "events");
	if (!json_is_array(a))
		return -EINVAL;
	size_t i;
	json_t *e;
	json_array_foreach(a, i, e)
		mrc_ctl_render_event(f, e);
	return 0;
}

int mrc_ctl_render_version(FILE *f, const json_t *res)
{
	if (!json_is_string(get(res, "version")))
		return -EINVAL;
	fprintf(f, "mrcd %s (operator protocol %lld)\n", gs(res, "version"), gi(res, "protocol"));
	return 0;
}

int mrc_ctl_render_plane(FILE *f, const json_t *res)
{
	if (!json_is_integer(get(res, "plane")))
		return -EINVAL;
	fprintf(f, "plane %lld %s%s: %lld paths of %lld peers\n", gi(res, "plane"),
		gs(res, "admin"), json_is_true(get(res, "changed")) ? "" : " (unchanged)",
		gi(res, "evs"), gi(res, "peers"));
	return 0;
}

int mrc_ctl_render_path(FILE *f, const json_t *res)
{
	if (!json_is_integer(get(res, "ev")))
		return -EINVAL;
	fprintf(f, "path %s ev %lld %s%s: now %s\n", gs(res, "peer"), gi(res, "ev"),
		gs(res, "admin"), json_is_true(get(res, "changed")) ? "" : " (unchanged)",
		gs(res, "state"));
	return 0;
}

int mrc_ctl_render_object(FILE *f, const json_t *res)
{
	if (!json_is_object(res))
		return -EINVAL;
	kv(f, "", res);
	return 0;
}

/* `mrcctl fabric`: the links health/ holds not OK (docs/health.md). */
int mrc_ctl_render_fabric(FILE *f, const json_t *res)
{
	if (!json_is_object(res))
		return -EINVAL;
	if (!json_is_true(get(res, "enabled"))) {
		fprintf(f, "no topology (loopback mode): no fabric links to judge\n");
		return 0;
	}
	fprintf(f, "fabric links not OK: %zu (state changes since start: %lld)\n",
		json_array_size(get(res, "links")), gi(res, "changes"));
	static const char *h[] = { "LINK", "PLANE", "STATE", "FAILED_PATHS", "HOSTS",
				   "WORKING_PATHS", "ECN+TRIMS", "SINCE", NULL };
	static const char *k[] = { "link", "plane", "state", "fail_paths", "fail_hosts",
				   "good_paths", "cong", "changed", NULL };
	int rc = simple(f, get(res, "links"), h, k, NULL);
	const json_t *c = get(res, "convictions");
	if (rc || !json_is_array(c))
		return rc;
	/* Every conviction the daemon made (the newest kept), healed or not. */
	fprintf(f, "\nconvictions: located %lld, denied %lld since start; the last %zu:\n",
		gi(res, "located"), gi(res, "denied"), json_array_size(c));
	static const char *ch[] = { "SEQ", "LINK", "STATE", "LOCATED", "DENIED", "CLEARED",
				    "FAILED_PATHS", "HOSTS", "WORKING_PATHS", NULL };
	static const char *ck[] = { "seq", "link", "state", "located", "denied", "cleared",
				    "fail_paths", "fail_hosts", "good_paths", NULL };
	if ((rc = simple(f, c, ch, ck, NULL)))
		return rc;
	size_t i, j;
	json_t *e, *p;
	json_array_foreach(c, i, e) {
		fprintf(f, "  %lld %s evidence:", gi(e, "seq"), gs(e, "link"));
		json_array_foreach(get(e, "evidence"), j, p)
			fprintf(f, " %s->%s/ev%lld", gs(p, "src"), gs(p, "dst"), gi(p, "ev"));
		fprintf(f, "\n");
	}
	return 0;
}

/* `mrcctl stragglers`: the records clients filed (docs/coll.md
 * "Stragglers"); network columns are "-" for a compute verdict. */
int mrc_ctl_render_stragglers(FILE *f, const json_t *res)
{
	if (!json_is_object(res))
		return -EINVAL;
	fprintf(f, "straggler records: %zu (filed %lld, dropped %lld as rings filled, "
		"refused %lld by rate, %lld by users; %lld per uid kept)\n",
		json_array_size(get(res, "records")), gi(res, "filed"), gi(res, "dropped"),
		gi(res, "rate_refused"), gi(res, "users_refused"), gi(res, "ring"));
	static const char *h[] = { "TIME", "UID", "PID", "COMM", "CALL", "VERDICT", "RANK", "HOST",
				   "PEER", "PLANE", "QPN", "LATE_US", "CALL_US", NULL };
	static const char *k[] = { "time", "uid", "pid", "comm", "call", "verdict", "rank", "host",
				   "peer_rank", "plane", "qpn", "late_us", "call_us", NULL };
	return simple(f, get(res, "records"), h, k, NULL);
}
