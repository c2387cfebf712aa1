/* `mrcctl stragglers`: the straggler records clients filed (kept per uid
 * by daemon/clients/strag.c, each with the uid and pid mrcd read from the
 * sender's socket; docs/coll.md "Stragglers"). */
#include <jansson.h>
#include <stdio.h>

#include "common/isotime.h"
#include "daemon/clients/clients.h"
#include "daemon/oper/oper.h"

static json_t *rec_json(const struct mrcd_strag_view *v)
{
	const struct mrc_cli_straggler *s = &v->s;
	char t[48], comm[20];
	mrc__iso_time(v->time_ns, 3, t, sizeof(t));
	snprintf(comm, sizeof(comm), "%016llx", (unsigned long long)s->comm);
	int net = s->cause == MRC_CLI_STRAG_NETWORK;
	json_t *o = json_pack("{s:s, s:I, s:I, s:s, s:I, s:s, s:i, s:i, s:I, s:I}",
		"time", t, "uid", (json_int_t)v->uid, "pid", (json_int_t)v->pid, "comm", comm,
		"call", (json_int_t)s->call, "verdict", net ? "network" : "compute",
		"rank", (int)s->rank, "host", (int)s->host,
		"call_us", (json_int_t)s->call_us, "late_us", (json_int_t)s->late_us);
	if (o && net)
		json_object_update_new(o, json_pack("{s:i, s:i, s:b, s:i, s:I, s:I}",
			"peer_rank", (int)s->peer_rank, "peer_host", (int)s->peer_host,
			"rank_sends", s->rank_sends, "plane", (int)s->plane,
			"qpn", (json_int_t)s->qpn, "typical_us", (json_int_t)s->typical_us));
	return o;
}

json_t *mrcd_oper_stragglers(struct oper *o)
{
	(void)o;
	json_t *a = json_array();
	struct mrcd_strag_view v;
	for (uint32_t it = 0; mrcd_strag_next(&it, &v);)
		json_array_append_new(a, rec_json(&v));
	struct mrcd_strag_counters k;
	mrcd_strag_counters(&k);
	return json_pack("{s:I, s:I, s:I, s:I, s:i, s:i, s:o}", "filed", (json_int_t)k.filed,
			 "dropped", (json_int_t)k.dropped, "rate_refused", (json_int_t)k.rate_refused,
			 "users_refused", (json_int_t)k.users_refused, "users", (int)k.users,
			 "ring", (int)k.ring, "records", a);
}
