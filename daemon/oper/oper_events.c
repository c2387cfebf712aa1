/* The event stream: every engine event and core note lands in a bounded
 * ring (for `mrcctl events`) with monotonic and wall-clock time, goes to
 * followers (`events -f`), and path/plane changes are logged through a
 * token bucket so a flapping link cannot flood the journal. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/isotime.h"
#include "daemon/oper/oper.h"
#include "mrc/error.h"

#define LOG_RATE 5.0      /* state-change lines per second, sustained */
#define LOG_BURST 50.0
#define FLOOR_EVERY_NS 1000000000ull   /* ev_floor notes: at most 1/s */

int mrcd_oper_events_init(struct oper *o)
{
	o->ring = calloc(OPER_RING, sizeof(*o->ring));
	if (!o->ring)
		return -ENOMEM;
	struct timespec rt;
	clock_gettime(CLOCK_REALTIME, &rt);
	uint64_t mono = mrcd_now();
	o->real_off_ns = (int64_t)((uint64_t)rt.tv_sec * 1000000000ull + (uint64_t)rt.tv_nsec) -
			 (int64_t)mono;
	o->bucket = (struct oper_bucket){ .tokens = LOG_BURST, .rate = LOG_RATE,
					  .burst = LOG_BURST, .last_ns = mono };
	return 0;
}

void mrcd_oper_events_fini(struct oper *o)
{
	free(o->ring);
	o->ring = NULL;
}

json_t *mrcd_oper_event_json(struct oper *o, const struct oper_event *e)
{
	char t[48], name[64];
	mrc__iso_time(e->real_ns, 6, t, sizeof(t));
	json_t *j = json_pack("{s:I, s:s, s:I, s:s, s:s}", "seq", (json_int_t)e->seq, "time", t,
			      "mono_ns", (json_int_t)e->mono_ns, "kind", e->kind, "text", e->text);
	if (!j || !e->typed)
		return j;
	json_object_set_new(j, "peer", json_string(mrcd_oper_host_name(o->d, e->host, name, sizeof(name))));
	json_object_set_new(j, "host", json_integer(e->host));
	if (!strcmp(e->kind, "qp")) {
		json_object_set_new(j, "qpn", json_integer(e->qpn));
		if (e->err)
			json_object_set_new(j, "error", json_string(mrc_strerror(e->err)));
		return j;
	}
	int pl, sp;
	mrcd_oper_ev_where(o->d, e->ev, &pl, &sp);
	json_object_set_new(j, "ev", json_integer(e->ev));
	json_object_set_new(j, "plane", json_integer(pl));
	json_object_set_new(j, "spine", json_integer(sp));
	if (!strcmp(e->kind, "probe")) {
		if (e->rtt_ns != UINT64_MAX)
			json_object_set_new(j, "rtt_us", json_real((double)e->rtt_ns / 1e3));
		return j;
	}
	json_object_set_new(j, "old", json_string(mrce_ev_state_name(e->old_state)));
	json_object_set_new(j, "new", json_string(mrce_ev_state_name(e->new_state)));
	json_object_set_new(j, "reason", json_string(mrce_ev_reason_name(e->reason)));
	return j;
}

json_t *mrcd_oper_events_recent(struct oper *o, int last)
{
	json_t *a = json_array();
	uint64_t n = o->seq < OPER_RING ? o->seq : OPER_RING;
	if (last >= 0 && (uint64_t)last < n)
		n = (uint64_t)last;
	for (uint64_t s = o->seq - n; s < o->seq; s++)
		json_array_append_new(a, mrcd_oper_event_json(o, &o->ring[s % OPER_RING]));
	return a;
}

void mrcd_oper_record(struct oper *o, const struct oper_event *e)
{
	struct oper_event *r = &o->ring[o->seq % OPER_RING];
	*r = *e;
	r->seq = o->seq++;
	if (!r->mono_ns)
		r->mono_ns = mrcd_now();
	r->real_ns = (uint64_t)((int64_t)r->mono_ns + o->real_off_ns);
	mrcd_oper_send_event(o, r);
}

static int bucket_take(struct oper_bucket *b, uint64_t now)
{
	b->tokens += (double)(now - b->last_ns) / 1e9 * b->rate;
	if (b->tokens > b->burst)
		b->tokens = b->burst;
	b->last_ns = now;
	if (b->tokens < 1.0)
		return 0;
	b->tokens -= 1.0;
	return 1;
}

int mrcd_oper_ratelog_kv(struct oper *o, int level, const char *const *kv, int nkv,
			 const char *fmt, ...)
{
	if (level > mrcd_log_level)
		return 0;
	if (!bucket_take(&o->bucket, mrcd_now())) {
		o->bucket.suppressed++;
		o->bucket.suppressed_total++;
		return 0;
	}
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	mrcd_log_kv(level, kv, nkv, "%s", msg);
	return 1;
}

void mrcd_oper_ratelog_flush(struct oper *o)
{
	/* The summary takes no token (a sustained flood would starve it) but
	 * comes at most once a second. */
	static uint64_t last;
	uint64_t now = mrcd_now();
	if (!o->bucket.suppressed || (last && now - last < 1000000000ull))
		return;
	last = now;
	mrcd_log(MRCD_LOG_NOTICE,
		 "%llu path/plane state messages suppressed (rate limit %.0f/s, burst %.0f); `mrcctl events` has every one",
		 (unsigned long long)o->bucket.suppressed, o->bucket.rate, o->bucket.burst);
	o->bucket.suppressed = 0;
}

/* The log line is whole; the event text is cut at its 200 bytes. */
static void admin_notev(struct oper *o, int level, const char *fmt, va_list ap)
{
	char text[1024];
	vsnprintf(text, sizeof(text), fmt, ap);
	static const char *const kv[] = { "MESSAGE_ID=" MRCD_MSGID_ADMIN, "MRC_KIND=admin" };
	mrcd_log_kv(level, kv, 2, "%s", text);
	struct oper_event e = { .kind = "admin" };
	size_t n = strnlen(text, sizeof(e.text) - 1);
	memcpy(e.text, text, n);
	e.text[n] = 0;
	mrcd_oper_record(o, &e);
}

void mrcd_oper_admin_note(struct oper *o, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	admin_notev(o, MRCD_LOG_NOTICE, fmt, ap);
	va_end(ap);
}

void mrcd_oper_admin_note_at(struct oper *o, int level, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	admin_notev(o, level, fmt, ap);
	va_end(ap);
}

void mrcd_oper_on_event(void *arg, const struct mrce_event *ev)
{
	struct oper *o = arg;
	struct mrcd *d = o->d;
	struct mrcd_peer_view pe;
	uint32_t host = mrcd_peer_get(d, ev->peer, &pe) ? UINT32_MAX : pe.host;
	struct oper_event e = { .typed = 1, .old_state = ev->old_state, .new_state = ev->new_state,
		.reason = ev->reason, .host = host, .ev = ev->ev, .qpn = ev->qpn, .err = ev->err,
		.rtt_ns = ev->rtt_ns, .mono_ns = ev->time_ns };
	char name[64];
	mrcd_oper_host_name(d, host, name, sizeof(name));
	int pl, sp;
	mrcd_oper_ev_where(d, ev->ev, &pl, &sp);
	char where[32];
	if (sp < 0)
		snprintf(where, sizeof(where), "plane %d direct", pl);
	else
		snprintf(where, sizeof(where), "plane %d spine %d", pl, sp);
	static uint64_t last_floor;
	switch (ev->type) {
	case MRCE_EVT_EV_STATE:
		snprintf(e.kind, sizeof(e.kind), "path");
		snprintf(e.text, sizeof(e.text), "path %s ev %u (%s): %s -> %s (%s)",
			 name, ev->ev, where, mrce_ev_state_name(ev->old_state),
			 mrce_ev_state_name(ev->new_state), mrce_ev_reason_name(ev->reason));
		{
			/* journalctl MESSAGE_ID=... (every path change) or MRC_PEER=h7 */
			char f[8][80];
			const char *kv[9] = { "MESSAGE_ID=" MRCD_MSGID_PATH_STATE };
			snprintf(f[0], sizeof(f[0]), "MRC_PEER=%s", name);
			snprintf(f[1], sizeof(f[1]), "MRC_EV=%u", ev->ev);
			snprintf(f[2], sizeof(f[2]), "MRC_PLANE=%d", pl);
			snprintf(f[3], sizeof(f[3]), "MRC_SPINE=%d", sp);
			snprintf(f[4], sizeof(f[4]), "MRC_OLD_STATE=%s", mrce_ev_state_name(ev->old_state));
			snprintf(f[5], sizeof(f[5]), "MRC_NEW_STATE=%s", mrce_ev_state_name(ev->new_state));
			snprintf(f[6], sizeof(f[6]), "MRC_REASON=%s", mrce_ev_reason_name(ev->reason));
			for (int i = 0; i < 7; i++)
				kv[i + 1] = f[i];
			mrcd_oper_ratelog_kv(o, ev->new_state == MRCE_EV_GOOD ? MRCD_LOG_INFO : MRCD_LOG_NOTICE,
					     kv, 8, "%s", e.text);
		}
		break;
	case MRCE_EVT_PROBE_RESULT:
		snprintf(e.kind, sizeof(e.kind), "probe");
		if (ev->rtt_ns == UINT64_MAX)
			snprintf(e.text, sizeof(e.text), "probe %s ev %u: lost", name, ev->ev);
		else
			snprintf(e.text, sizeof(e.text), "probe %s ev %u (%s): rtt %.1f us",
				 name, ev->ev, where, (double)ev->rtt_ns / 1e3);
		mrcd_oper_record(o, &e);
		mrcd_oper_probe_result(o, ev->peer, ev->ev, ev->rtt_ns);
		return;
	case MRCE_EVT_QP_ERROR:
		snprintf(e.kind, sizeof(e.kind), "qp");
		snprintf(e.text, sizeof(e.text), "qp %#x (peer %s) failed: %s", ev->qpn, name,
			 mrc_strerror(ev->err));
		break;
	case MRCE_EVT_QP_NO_PATH:
		snprintf(e.kind, sizeof(e.kind), "qp");
		snprintf(e.text, sizeof(e.text), "qp %#x (peer %s): every path is denied, waiting for one",
			 ev->qpn, name);
		break;
	case MRCE_EVT_QP_PATH_BACK:
		snprintf(e.kind, sizeof(e.kind), "qp");
		snprintf(e.text, sizeof(e.text), "qp %#x (peer %s): a path is back, resumed",
			 ev->qpn, name);
		break;
	case MRCE_EVT_FLOOR:
		/* Every loss on the last usable path says this: keep one a second. */
		if (ev->time_ns - last_floor < FLOOR_EVERY_NS && last_floor)
			return;
		last_floor = ev->time_ns;
		snprintf(e.kind, sizeof(e.kind), "floor");
		snprintf(e.text, sizeof(e.text), "path %s ev %u (%s) kept in use: ev_floor reached (%s)",
			 name, ev->ev, where, mrce_ev_reason_name(ev->reason));
		break;
	default:
		return;
	}
	mrcd_oper_record(o, &e);
}

void mrcd_oper_on_note(void *arg, const char *kind, const char *text)
{
	struct oper *o = arg;
	struct oper_event e = { 0 };
	snprintf(e.kind, sizeof(e.kind), "%s", kind);
	snprintf(e.text, sizeof(e.text), "%s", text);
	mrcd_oper_record(o, &e);
}
