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

json_t *mrcd_oper_fabric(struct oper *o)
{
	struct mrcd_stats st;
	mrcd_stats_get(o->d, &st);
	return json_pack("{s:b, s:I, s:o}", "enabled", mrcd_topology(o->d) != NULL,
			 "changes", (json_int_t)st.health_changes, "links", mrcd_oper_fabric_links(o));
}
