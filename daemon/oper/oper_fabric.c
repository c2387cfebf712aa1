/* `mrcctl fabric` and the per-link metrics: the fabric links health/
 * holds not OK (suspect, located, denied), from the core's read-only view
 * (mrcd_fabric_next; docs/health.md). */
#include <jansson.h>
#include <stdio.h>

#include "common/isotime.h"
#include "daemon/oper/oper.h"

static json_t *link_json(struct oper *o, const struct mrcd_fabric_view *v, uint64_t now)
{
	char name[2 * 16 + 2], t[48];
	snprintf(name, sizeof(name), "%s-%s", v->lower, v->upper);
	mrc__iso_time((uint64_t)((int64_t)v->changed_ns + o->real_off_ns), 3, t, sizeof(t));
	int st = v->denied ? 3 : v->state[0] == 'l' ? 2 : 1;
	return json_pack("{s:s, s:i, s:i, s:s, s:i, s:i, s:i, s:I, s:I, s:I, s:I, s:s, s:f}",
		"link", name, "id", (int)v->link, "plane", (int)v->plane, "state", v->state,
		"suspect", 1, "located", st >= 2, "denied", st == 3,
		"fail_paths", (json_int_t)v->fail_paths, "fail_hosts", (json_int_t)v->fail_hosts,
		"good_paths", (json_int_t)v->good_paths, "cong", (json_int_t)v->cong,
		"changed", t, "changed_age_s",
		now > v->changed_ns ? (double)(now - v->changed_ns) / 1e9 : 0.0);
}

json_t *mrcd_oper_fabric_links(struct oper *o)
{
	json_t *a = json_array();
	struct mrcd_fabric_view v;
	uint64_t now = mrcd_now();
	for (uint32_t it = 0; mrcd_fabric_next(o->d, &it, &v);)
		json_array_append_new(a, link_json(o, &v, now));
	return a;
}

static json_t *when(struct oper *o, uint64_t ns)
{
	char t[48];
	if (!ns)
		return json_null();
	mrc__iso_time((uint64_t)((int64_t)ns + o->real_off_ns), 3, t, sizeof(t));
	return json_string(t);
}

/* A conviction (health/record.h): kept after the link healed, so brief
 * ones between two polls are seen. */
static json_t *conv_json(struct oper *o, const struct mrcd_fabric_conv *v)
{
	char name[2 * 16 + 2];
	snprintf(name, sizeof(name), "%s-%s", v->lower, v->upper);
	json_t *ev = json_array();
	for (uint32_t k = 0; k < v->n_evidence && k < MRCD_FABRIC_EVIDENCE; k++)
		json_array_append_new(ev, json_pack("{s:s, s:s, s:i, s:o}", "src", v->evidence[k].src,
			"dst", v->evidence[k].dst, "ev", (int)v->evidence[k].ev,
			"failed", when(o, v->evidence[k].ts_ns)));
	return json_pack("{s:I, s:s, s:i, s:i, s:s, s:o, s:o, s:o, s:I, s:I, s:I, s:o, s:o}",
		"seq", (json_int_t)v->seq, "link", name, "id", (int)v->link, "plane", (int)v->plane,
		"state", v->state, "located", when(o, v->located_ns), "denied", when(o, v->denied_ns),
		"cleared", when(o, v->cleared_ns), "fail_paths", (json_int_t)v->fail_paths,
		"fail_hosts", (json_int_t)v->fail_hosts, "good_paths", (json_int_t)v->good_paths,
		"newest_working", when(o, v->good_ns), "evidence", ev);
}

json_t *mrcd_oper_fabric(struct oper *o)
{
	struct mrcd_stats st;
	mrcd_stats_get(o->d, &st);
	json_t *c = json_array();
	struct mrcd_fabric_conv v;
	for (uint32_t i = 0; mrcd_fabric_conviction(o->d, i, &v); i++)
		json_array_append_new(c, conv_json(o, &v));
	return json_pack("{s:b, s:I, s:I, s:I, s:o, s:o}", "enabled", mrcd_topology(o->d) != NULL,
			 "changes", (json_int_t)st.health_changes,
			 "located", (json_int_t)st.health_located,
			 "denied", (json_int_t)st.health_denied, "links", mrcd_oper_fabric_links(o),
			 "convictions", c);
}
