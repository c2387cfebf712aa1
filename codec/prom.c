/* `stats` JSON -> Prometheus text.  Every integer in the engine, datapath,
 * daemon, oper and rings sections becomes a counter (rates, uptime, the
 * polled QPs now and the poll interval are gauges),
 * nested objects become one labelled family, planes and peers are
 * labelled by plane/peer, and the path RTT snapshot is a histogram. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/prom.h"

static int is_gauge(const char *k)
{
	size_t n = strlen(k);
	return (n > 4 && !strcmp(k + n - 4, "_pps")) || (n > 6 && !strcmp(k + n - 6, "_per_s")) ||
	       !strcmp(k, "uptime_s") || !strncmp(k, "polled_", 7) || !strcmp(k, "poll_interval_us");
}

static void num(FILE *f, const json_t *v)
{
	if (json_is_integer(v))
		fprintf(f, "%lld\n", (long long)json_integer_value(v));
	else if (json_is_real(v))
		fprintf(f, "%.9g\n", json_real_value(v));
	else if (json_is_boolean(v))
		fprintf(f, "%d\n", json_is_true(v));
	else
		fprintf(f, "0\n");
}

/* One section: counters named mrc_<sec>_<key>_total, gauges without the
 * suffix; an object value is one family labelled label="<subkey>". */
static void section(FILE *f, const char *sec, const json_t *o, const char *label)
{
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)o, k, v) {
		if (json_is_object(v)) {
			fprintf(f, "# TYPE mrc_%s_%s_total counter\n", sec, k);
			const char *k2;
			json_t *v2;
			json_object_foreach(v, k2, v2) {
				fprintf(f, "mrc_%s_%s_total{%s=\"%s\"} ", sec, k, label, k2);
				num(f, v2);
			}
			continue;
		}
		if (!json_is_number(v))
			continue;
		if (!strcmp(k, "uptime_s")) {
			fprintf(f, "# TYPE mrc_%s_uptime_seconds gauge\nmrc_%s_uptime_seconds ", sec, sec);
		} else if (is_gauge(k)) {
			fprintf(f, "# TYPE mrc_%s_%s gauge\nmrc_%s_%s ", sec, k, sec, k);
		} else {
			fprintf(f, "# TYPE mrc_%s_%s_total counter\nmrc_%s_%s_total ", sec, k, sec, k);
		}
		num(f, v);
	}
}

/* Arrays of objects (planes, peers): one family per numeric key. */
static void labelled(FILE *f, const char *fam, const json_t *arr, const char *idkey,
		     const char *const *keys, const char *const *types)
{
	for (int i = 0; keys[i]; i++) {
		int counter = !strcmp(types[i], "counter");
		fprintf(f, "# TYPE mrc_%s_%s%s %s\n", fam, keys[i], counter ? "_total" : "", types[i]);
		size_t j;
		json_t *e;
		json_array_foreach(arr, j, e) {
			json_t *id = json_object_get(e, idkey);
			fprintf(f, "mrc_%s_%s%s{%s=\"", fam, keys[i], counter ? "_total" : "", idkey);
			if (json_is_string(id))
				fprintf(f, "%s", json_string_value(id));
			else
				fprintf(f, "%lld", (long long)json_integer_value(id));
			fprintf(f, "\"} ");
			num(f, json_object_get(e, keys[i]));
		}
	}
	/* EV state counts: one gauge family with a state label. */
	fprintf(f, "# TYPE mrc_%s_evs gauge\n", fam);
	size_t j;
	json_t *e;
	json_array_foreach(arr, j, e) {
		json_t *id = json_object_get(e, idkey), *evs = json_object_get(e, "evs");
		const char *st;
		json_t *n;
		json_object_foreach(evs, st, n) {
			if (json_is_string(id))
				fprintf(f, "mrc_%s_evs{%s=\"%s\",state=\"%s\"} ", fam, idkey,
					json_string_value(id), st);
			else
				fprintf(f, "mrc_%s_evs{%s=\"%lld\",state=\"%s\"} ", fam, idkey,
					(long long)json_integer_value(id), st);
			num(f, n);
		}
	}
}

static void histogram(FILE *f, const json_t *h)
{
	const json_t *le = json_object_get(h, "le_us"), *cum = json_object_get(h, "cumulative");
	fprintf(f, "# HELP mrc_path_srtt_seconds smoothed RTT of every path (snapshot)\n"
		   "# TYPE mrc_path_srtt_seconds histogram\n");
	size_t i;
	json_t *b;
	json_array_foreach(le, i, b)
		fprintf(f, "mrc_path_srtt_seconds_bucket{le=\"%g\"} %lld\n", json_number_value(b) / 1e6,
			(long long)json_integer_value(json_array_get(cum, i)));
	fprintf(f, "mrc_path_srtt_seconds_bucket{le=\"+Inf\"} %lld\n",
		(long long)json_integer_value(json_object_get(h, "count")));
	fprintf(f, "mrc_path_srtt_seconds_sum %.9g\n",
		json_number_value(json_object_get(h, "sum_us")) / 1e6);
	fprintf(f, "mrc_path_srtt_seconds_count %lld\n",
		(long long)json_integer_value(json_object_get(h, "count")));
}

char *mrc_oper_prom(const json_t *st)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f)
		return NULL;
	static const char *secs[][2] = { { "engine", "kind" }, { "datapath", "kind" },
					 { "daemon", "kind" }, { "oper", "kind" }, { "rings", "kind" } };
	for (size_t i = 0; i < sizeof(secs) / sizeof(secs[0]); i++) {
		const json_t *s = json_object_get(st, secs[i][0]);
		if (s)
			section(f, secs[i][0], s, !strcmp(secs[i][0], "engine") ? "reason" : secs[i][1]);
	}
	static const char *pk[] = { "tx_pkts", "lost", "trims", "ecn", "probes_sent", "probes_ok",
				    "tx_pps", "lost_pps", "peers_reporting_down", NULL };
	static const char *pt[] = { "counter", "counter", "counter", "counter", "counter", "counter",
				    "gauge", "gauge", "gauge" };
	const json_t *planes = json_object_get(st, "planes");
	labelled(f, "plane", planes, "plane", pk, pt);
	fprintf(f, "# TYPE mrc_plane_link_up gauge\n");
	size_t j;
	json_t *e;
	json_array_foreach(planes, j, e)
		fprintf(f, "mrc_plane_link_up{plane=\"%lld\",nic=\"%s\"} %d\n",
			(long long)json_integer_value(json_object_get(e, "plane")),
			json_string_value(json_object_get(e, "nic")) ?: "",
			!strcmp(json_string_value(json_object_get(e, "link")) ?: "", "up"));
	fprintf(f, "# TYPE mrc_plane_admin_enabled gauge\n");
	json_array_foreach(planes, j, e)
		fprintf(f, "mrc_plane_admin_enabled{plane=\"%lld\"} %d\n",
			(long long)json_integer_value(json_object_get(e, "plane")),
			!strcmp(json_string_value(json_object_get(e, "admin")) ?: "", "enabled"));
	static const char *ek[] = { "tx_pkts", "lost", "trims", "ecn", "qps", "srtt_us_min",
				    "srtt_us_avg", NULL };
	static const char *et[] = { "counter", "counter", "counter", "counter", "gauge", "gauge",
				    "gauge" };
	labelled(f, "peer", json_object_get(st, "peers"), "peer", ek, et);
	/* Fabric links not OK (docs/health.md): a series while it is. */
	static const char *fk[] = { "suspect", "located", "denied", "fail_paths", "fail_hosts",
				    "good_paths", "cong", NULL };
	static const char *ft[] = { "gauge", "gauge", "gauge", "gauge", "gauge", "gauge", "counter" };
	labelled(f, "fabric_link", json_object_get(st, "fabric"), "link", fk, ft);
	const json_t *h = json_object_get(st, "path_srtt_histogram");
	if (h)
		histogram(f, h);
	fclose(f);
	return buf;
}
