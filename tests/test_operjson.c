/* The operator protocol codec (codec/operjson.c), the table renderer and the
 * Prometheus renderer: every request rule (per verb, from
 * codec/operverbs.def), round trips, the verbs and admin verbs of the
 * contract, reply parsing. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "codec/operjson.h"
#include "codec/prom.h"
#include "ctl/render.h"
#include "ctl/verbs.h"

static int parse(const char *s, struct mrc_oper_req *r, char *err)
{
	return mrc_oper_req_parse(s, strlen(s), r, err, 256);
}

static void test_valid_requests(void **state)
{
	(void)state;
	struct mrc_oper_req r;
	char err[256];
	assert_int_equal(parse("{\"v\":1,\"id\":9,\"verb\":\"status\"}", &r, err), 0);
	assert_int_equal(r.verb, MRC_OPER_STATUS);
	assert_int_equal(r.id, 9);
	assert_int_equal(parse("{\"v\":1,\"verb\":\"paths\",\"peer\":\"h7\"}", &r, err), 0);
	assert_string_equal(r.peer, "h7");
	assert_int_equal(parse("{\"v\":1,\"verb\":\"probe\",\"peer\":\"3\",\"plane\":1,\"spine\":0,\"timeout_ms\":500}",
			       &r, err), 0);
	assert_int_equal(r.plane, 1);
	assert_int_equal(r.spine, 0);
	assert_int_equal(r.timeout_ms, 500);
	assert_int_equal(parse("{\"v\":1,\"verb\":\"events\",\"follow\":true,\"last\":5}", &r, err), 0);
	assert_true(r.follow);
	assert_int_equal(r.last, 5);
	assert_int_equal(parse("{\"v\":1,\"verb\":\"qps\",\"qp\":4294967295}", &r, err), 0);
	assert_int_equal(r.qp, 4294967295ll);
	assert_int_equal(parse("{\"v\":1,\"verb\":\"path-deny\",\"peer\":\"h1\",\"ev\":3}", &r, err), 0);
	assert_true(mrc_oper_verb_is_admin(r.verb));
	assert_false(mrc_oper_verb_is_admin(MRC_OPER_PROBE));
}

static void test_refused_requests(void **state)
{
	(void)state;
	static const struct { const char *req, *why; int rc; } bad[] = {
		{ "", "not JSON", -EINVAL },
		{ "[1]", "JSON object", -EINVAL },
		{ "{\"verb\":\"status\"}", "'v'", -EINVAL },
		{ "{\"v\":2,\"verb\":\"status\"}", "version 2", -EPROTONOSUPPORT },
		{ "{\"v\":1}", "'verb'", -EINVAL },
		{ "{\"v\":1,\"verb\":\"reboot\"}", "unknown verb 'reboot'", -EINVAL },
		{ "{\"v\":1,\"verb\":\"status\",\"x\":1}", "unknown field 'x'", -EINVAL },
		{ "{\"v\":1,\"verb\":\"status\",\"peer\":\"h1\"}", "does not apply", -EINVAL },
		{ "{\"v\":1,\"verb\":\"paths\"}", "needs field 'peer'", -EINVAL },
		{ "{\"v\":1,\"verb\":\"paths\",\"peer\":\"\"}", "field 'peer'", -EINVAL },
		{ "{\"v\":1,\"verb\":\"paths\",\"peer\":7}", "field 'peer'", -EINVAL },
		{ "{\"v\":1,\"verb\":\"plane-disable\",\"plane\":16}", "0..15", -EINVAL },
		{ "{\"v\":1,\"verb\":\"plane-disable\",\"plane\":-1}", "0..15", -EINVAL },
		{ "{\"v\":1,\"verb\":\"plane-disable\",\"plane\":\"1\"}", "integer", -EINVAL },
		{ "{\"v\":1,\"verb\":\"plane-enable\"}", "needs field 'plane'", -EINVAL },
		{ "{\"v\":1,\"verb\":\"path-allow\",\"peer\":\"h1\"}", "needs field 'ev'", -EINVAL },
		{ "{\"v\":1,\"verb\":\"events\",\"follow\":1}", "true or false", -EINVAL },
		{ "{\"v\":1,\"id\":-1,\"verb\":\"status\"}", "'id'", -EINVAL },
		{ "{\"v\":1,\"verb\":\"status\",\"verb\":\"planes\"}", "not JSON", -EINVAL },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct mrc_oper_req r;
		char err[256] = "";
		int rc = parse(bad[i].req, &r, err);
		if (rc != bad[i].rc || !strstr(err, bad[i].why))
			fail_msg("request %s: rc %d err '%s', expected %d with '%s'", bad[i].req, rc, err,
				 bad[i].rc, bad[i].why);
	}
	/* Size limit. */
	size_t n = MRC_OPER_REQ_MAX + 1;
	char *big = malloc(n);
	memset(big, ' ', n);
	struct mrc_oper_req r;
	char err[256];
	assert_int_equal(mrc_oper_req_parse(big, n, &r, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "at most"));
	free(big);
}

/* What each verb needs and accepts, from the verbs' one definition: the
 * rule tests below cover a verb added there without being edited. */
static const struct { unsigned need, allow; } rules[MRC_OPER__COUNT] = {
#define MRC_VERB(ID, wire, admin, need, allow, ...) [MRC_OPER_##ID] = { need, allow },
#include "codec/operverbs.def"
};

/* Fills the fields of bits into a (values in range, varying by verb). */
static void fill(struct mrc_oper_req *a, int v, unsigned bits)
{
	if (bits & MRC_OPER_F_PEER)
		snprintf(a->peer, sizeof(a->peer), "h%d", v);
	if (bits & MRC_OPER_F_PLANE)
		a->plane = v % 16;
	if (bits & MRC_OPER_F_SPINE)
		a->spine = v * 7 % 256;
	if (bits & MRC_OPER_F_EV)
		a->ev = v * 3;
	if (bits & MRC_OPER_F_QP)
		a->qp = 0x10000ll + v;
	if (bits & MRC_OPER_F_LAST)
		a->last = v;
	if (bits & MRC_OPER_F_FOLLOW)
		a->follow = 1;
	if (bits & MRC_OPER_F_TIMEOUT)
		a->timeout_ms = 100 + v;
}

static void test_round_trip(void **state)
{
	(void)state;
	for (int v = 1; v < MRC_OPER__COUNT; v++) {
		/* exactly what the verb needs, then everything it accepts */
		for (int all = 0; all < 2; all++) {
			struct mrc_oper_req a, b;
			mrc_oper_req_init(&a);
			a.verb = (enum mrc_oper_verb)v;
			a.id = 1000u + (unsigned)v;
			fill(&a, v, all ? rules[v].allow : rules[v].need);
			char *s = mrc_oper_req_encode(&a);
			assert_non_null(s);
			char err[256] = "";
			if (mrc_oper_req_parse(s, strlen(s), &b, err, sizeof(err)))
				fail_msg("%s: %s", s, err);
			assert_memory_equal(&a, &b, sizeof(a));
			assert_int_equal(mrc_oper_verb_find(mrc_oper_verb_name(a.verb)), a.verb);
			free(s);
		}
	}
}

/* Per verb: a request without one of the fields it needs is refused
 * naming it; one with a field it does not accept is refused too. */
static void test_field_rules(void **state)
{
	(void)state;
	static const struct { unsigned bit; const char *name; } f[] = {
		{ MRC_OPER_F_PEER, "peer" }, { MRC_OPER_F_PLANE, "plane" },
		{ MRC_OPER_F_SPINE, "spine" }, { MRC_OPER_F_EV, "ev" }, { MRC_OPER_F_QP, "qp" },
		{ MRC_OPER_F_LAST, "last" }, { MRC_OPER_F_FOLLOW, "follow" },
		{ MRC_OPER_F_TIMEOUT, "timeout_ms" },
	};
	for (int v = 1; v < MRC_OPER__COUNT; v++)
		for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
			struct mrc_oper_req a, b;
			char want[96], err[256] = "";
			mrc_oper_req_init(&a);
			a.verb = (enum mrc_oper_verb)v;
			if (rules[v].need & f[i].bit) {
				fill(&a, v, rules[v].need & ~f[i].bit);
				snprintf(want, sizeof(want), "verb '%s' needs field '%s'",
					 mrc_oper_verb_name(a.verb), f[i].name);
			} else if (!(rules[v].allow & f[i].bit)) {
				fill(&a, v, rules[v].need | f[i].bit);
				snprintf(want, sizeof(want), "field '%s' does not apply to verb '%s'",
					 f[i].name, mrc_oper_verb_name(a.verb));
			} else {
				continue;
			}
			char *s = mrc_oper_req_encode(&a);
			assert_non_null(s);
			assert_int_equal(mrc_oper_req_parse(s, strlen(s), &b, err, sizeof(err)), -EINVAL);
			if (strcmp(err, want))
				fail_msg("%s: wanted \"%s\", got \"%s\"", s, want, err);
			free(s);
		}
}

/* The verbs on the wire and which are admin verbs: docs/ctl.md's
 * contract, written out here so that no edit of codec/operverbs.def
 * changes it unnoticed. */
static void test_wire_contract(void **state)
{
	(void)state;
	static const struct { const char *name; int admin; } want[] = {
		{ "status", 0 }, { "planes", 0 }, { "peers", 0 }, { "paths", 0 }, { "qps", 0 },
		{ "stats", 0 }, { "events", 0 }, { "probe", 0 }, { "topology", 0 },
		{ "fabric", 0 }, { "stragglers", 0 }, { "version", 0 }, { "plane-disable", 1 }, { "plane-enable", 1 },
		{ "path-deny", 1 }, { "path-allow", 1 },
	};
	assert_int_equal(MRC_OPER__COUNT - 1, sizeof(want) / sizeof(want[0]));
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		enum mrc_oper_verb v = mrc_oper_verb_find(want[i].name);
		if (v == MRC_OPER_NONE)
			fail_msg("verb '%s' is gone", want[i].name);
		assert_string_equal(mrc_oper_verb_name(v), want[i].name);
		if (mrc_oper_verb_is_admin(v) != want[i].admin)
			fail_msg("verb '%s': admin %d, the contract says %d", want[i].name,
				 mrc_oper_verb_is_admin(v), want[i].admin);
	}
	assert_false(mrc_oper_verb_is_admin(MRC_OPER_NONE));
	assert_false(mrc_oper_verb_is_admin(MRC_OPER__COUNT));
	assert_string_equal(mrc_oper_verb_name(MRC_OPER_NONE), "?");
	assert_int_equal(mrc_oper_verb_find(""), MRC_OPER_NONE);
}

static void test_replies(void **state)
{
	(void)state;
	json_t *res = json_pack("{s:i}", "x", 5);
	char *ok = mrc_oper_reply_ok(77, res);
	json_decref(res);
	uint32_t id = 0;
	json_t *got;
	char msg[256];
	assert_int_equal(mrc_oper_reply_parse(ok, strlen(ok), &id, &got, msg, sizeof(msg)), 0);
	assert_int_equal(id, 77);
	assert_int_equal(json_integer_value(json_object_get(got, "x")), 5);
	json_decref(got);
	free(ok);
	char *er = mrc_oper_reply_err(78, -EPERM, "permission denied: admin verb");
	assert_int_equal(mrc_oper_reply_parse(er, strlen(er), &id, &got, msg, sizeof(msg)), -EPERM);
	assert_null(got);
	assert_string_equal(msg, "permission denied: admin verb");
	json_t *j = json_loads(er, 0, NULL);
	assert_string_equal(json_string_value(json_object_get(json_object_get(j, "error"), "code")), "EPERM");
	json_decref(j);
	free(er);
	static const char *bad[] = { "nope", "{\"v\":2,\"ok\":true}", "{\"v\":1}",
				     "{\"v\":1,\"ok\":false,\"error\":{\"errno\":0}}" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(mrc_oper_reply_parse(bad[i], strlen(bad[i]), &id, &got, msg, sizeof(msg)),
				 -EBADMSG);
	assert_string_equal(mrc_oper_errno_name(ENOENT), "ENOENT");
	assert_string_equal(mrc_oper_errno_name(-ENOBUFS), "ENOBUFS");
	assert_string_equal(mrc_oper_errno_name(-EACCES), "EACCES");
}

static char *render(enum mrc_oper_verb v, const char *json, int *rc)
{
	json_t *j = json_loads(json, 0, NULL);
	assert_non_null(j);
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	*rc = mrc_ctl_render(f, v, j);
	fclose(f);
	json_decref(j);
	return buf;
}

static void test_render_tables(void **state)
{
	(void)state;
	int rc;
	char *s = render(MRC_OPER_PATHS,
		"{\"peer\":\"h7\",\"host\":7,\"paths\":["
		"{\"ev\":1,\"plane\":0,\"spine\":1,\"exists\":true,\"address\":\"fcbb:bb00:1000:2001:1003:8007::\","
		"\"state\":\"ASSUMED_BAD\",\"reason\":\"loss\",\"last_change_age_s\":2.5,\"srtt_us\":81.5,"
		"\"tx_pkts\":10,\"lost\":3,\"trims\":0,\"ecn\":0,\"probes_sent\":4,\"probes_ok\":1,\"admin_denied\":false},"
		"{\"ev\":3,\"plane\":0,\"spine\":2,\"exists\":true,\"address\":\"a\",\"state\":\"GOOD\","
		"\"reason\":\"probe\",\"last_change_age_s\":1,\"detour\":true},"
		"{\"ev\":5,\"plane\":1,\"spine\":-1,\"exists\":false}]}", &rc);
	assert_int_equal(rc, 0);
	assert_non_null(strstr(s, "paths to h7 (host 7)"));
	assert_non_null(strstr(s, "EV  PLANE  SPINE"));
	assert_non_null(strstr(s, "ASSUMED_BAD"));
	assert_non_null(strstr(s, "fcbb:bb00:1000:2001:1003:8007::"));
	assert_non_null(strstr(s, "2.5s ago"));
	assert_non_null(strstr(s, "1/4"));
	assert_non_null(strstr(s, "(1 EVs have no path"));
	assert_non_null(strstr(s, "2 (detour)"));
	assert_null(strstr(s, "1 (detour)"));
	free(s);
	s = render(MRC_OPER_PLANES, "{\"planes\":[{\"plane\":0,\"nic\":\"p0l0\",\"link\":\"up\",\"admin\":\"disabled\","
		   "\"tx_pps\":5,\"tx_pkts\":100,\"lost\":1,\"loss_ratio\":0.01,\"trims\":0,\"ecn\":0,"
		   "\"evs\":{\"GOOD\":0,\"ASSUMED_BAD\":0,\"DENIED\":2}}]}", &rc);
	assert_int_equal(rc, 0);
	assert_non_null(strstr(s, "disabled"));
	assert_non_null(strstr(s, "1.00"));
	free(s);
	/* A result without the verb's fields is refused, not printed wrong. */
	s = render(MRC_OPER_PATHS, "{\"nope\":1}", &rc);
	assert_int_equal(rc, -EINVAL);
	free(s);
	s = render(MRC_OPER_EVENTS, "{\"events\":[{\"time\":\"T\",\"kind\":\"path\",\"text\":\"x -> y\"}]}", &rc);
	assert_int_equal(rc, 0);
	assert_string_equal(s, "T  path   x -> y\n");
	free(s);
}

static void test_prom(void **state)
{
	(void)state;
	json_t *st = json_loads(
		"{\"engine\":{\"tx_pkts\":12,\"rx_drop\":{\"truncated\":2}},"
		"\"datapath\":{\"tx_pps\":3,\"rx_bytes\":99},\"daemon\":{\"uptime_s\":1.5},"
		"\"rings\":{\"polled_parked\":4,\"notify_wakeups\":9,\"poll_interval_us\":200},"
		"\"planes\":[{\"plane\":0,\"nic\":\"p0l0\",\"link\":\"up\",\"admin\":\"enabled\",\"tx_pkts\":7,"
		"\"evs\":{\"GOOD\":2,\"ASSUMED_BAD\":1,\"DENIED\":0}}],"
		"\"peers\":[{\"peer\":\"h7\",\"tx_pkts\":7,\"evs\":{\"GOOD\":2}}],"
		"\"path_srtt_histogram\":{\"le_us\":[10,100],\"cumulative\":[1,3],\"count\":4,\"sum_us\":500}}",
		0, NULL);
	assert_non_null(st);
	char *t = mrc_oper_prom(st);
	json_decref(st);
	static const char *want[] = {
		"# TYPE mrc_engine_tx_pkts_total counter\nmrc_engine_tx_pkts_total 12\n",
		"mrc_engine_rx_drop_total{reason=\"truncated\"} 2\n",
		"# TYPE mrc_datapath_tx_pps gauge\nmrc_datapath_tx_pps 3\n",
		"mrc_datapath_rx_bytes_total 99\n",
		"mrc_daemon_uptime_seconds 1.5\n",
		"# TYPE mrc_rings_polled_parked gauge\nmrc_rings_polled_parked 4\n",
		"# TYPE mrc_rings_notify_wakeups_total counter\nmrc_rings_notify_wakeups_total 9\n",
		"# TYPE mrc_rings_poll_interval_us gauge\nmrc_rings_poll_interval_us 200\n",
		"mrc_plane_tx_pkts_total{plane=\"0\"} 7\n",
		"mrc_plane_evs{plane=\"0\",state=\"ASSUMED_BAD\"} 1\n",
		"mrc_plane_link_up{plane=\"0\",nic=\"p0l0\"} 1\n",
		"mrc_plane_admin_enabled{plane=\"0\"} 1\n",
		"mrc_peer_tx_pkts_total{peer=\"h7\"} 7\n",
		"mrc_path_srtt_seconds_bucket{le=\"1e-05\"} 1\n",
		"mrc_path_srtt_seconds_bucket{le=\"0.0001\"} 3\n",
		"mrc_path_srtt_seconds_bucket{le=\"+Inf\"} 4\n",
		"mrc_path_srtt_seconds_sum 0.0005\n",
		"mrc_path_srtt_seconds_count 4\n",
	};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		if (!strstr(t, want[i]))
			fail_msg("missing '%s' in:\n%s", want[i], t);
	free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_valid_requests),
		cmocka_unit_test(test_refused_requests),
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_field_rules),
		cmocka_unit_test(test_wire_contract),
		cmocka_unit_test(test_replies),
		cmocka_unit_test(test_render_tables),
		cmocka_unit_test(test_prom),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
