/* mrcctl's verb table (ctl/verbs.c, generated from codec/operverbs.def):
 * every row parses a sample command line into the request it names, the
 * usage text lists every verb once in the right section and is the text
 * mrcctl printed before the table was generated, rows sharing a word are
 * adjacent and agree, admin rows are exactly the protocol's admin verbs,
 * and every protocol verb is sent by exactly one row. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ctl/verbs.h"

/* Splits line at spaces into argv (at most 15 words; line is modified). */
static int split(char *line, char **argv)
{
	int n = 0;
	for (char *t = strtok(line, " "); t && n < 15; t = strtok(NULL, " "))
		argv[n++] = t;
	argv[n] = NULL;
	return n;
}

/* Parses a command line; the usage error text (if any) into *msg. */
static int parse(const char *cmdline, struct mrc_ctl_cmd *c, char **msg)
{
	char line[256], *argv[16];
	snprintf(line, sizeof(line), "%s", cmdline);
	int argc = split(line, argv);
	size_t len = 0;
	FILE *err = open_memstream(msg, &len);
	assert_non_null(err);
	int r = mrc_ctl_parse(argc, argv, c, err);
	fclose(err);
	return r;
}

static const struct sample {
	const char *line;
	enum mrc_oper_verb verb;
	const char *peer;
	int plane, spine, ev, last, timeout_ms, follow, prom;
	long long qp;
} samples[] = {
	/* line, verb, peer, plane, spine, ev, last, timeout_ms, follow, prom, qp */
	{ "status", MRC_OPER_STATUS, "", -1, -1, -1, -1, -1, 0, 0, -1 },
	{ "planes", MRC_OPER_PLANES, "", -1, -1, -1, -1, -1, 0, 0, -1 },
	{ "peers", MRC_OPER_PEERS, "", -1, -1, -1, -1, -1, 0, 0, -1 },
	{ "paths h7", MRC_OPER_PATHS, "h7", -1, -1, -1, -1, -1, 0, 0, -1 },
	{ "qps 0x10", MRC_OPER_QPS, "", -1, -1, -1, -1, -1, 0, 0, 16 },
	{ "stats --prom", MRC_OPER_STATS, "", -1, -1, -1, -1, -1, 0, 1, -1 },
	{ "top -d 0.5 -n 3", MRC_OPER_STATS, "", -1, -1, -1, -1, -1, 0, 0, -1 },
	{ "events -f --last 5", MRC_OPER_EVENTS, "", -1, -1, -1, 5, -1, 1, 0, -1 },
	{ "probe 3 --timeout 500 --spine 2 --plane 1", MRC_OPER_PROBE, "3", 1, 2, -1, -1, 500, 0, 0, -1 },
	{ "topology", MRC_OPER_TOPOLOGY, "", -1, -1, -1, -1, -1, 0, 0, -1 },
	{ "fabric", MRC_OPER_FABRIC, "", -1, -1, -1, -1, -1, 0, 0, -1 },
	{ "stragglers", MRC_OPER_STRAGGLERS, "", -1, -1, -1, -1, -1, 0, 0, -1 },
	{ "version", MRC_OPER_VERSION_VERB, "", -1, -1, -1, -1, -1, 0, 0, -1 },
	{ "help", MRC_OPER_NONE, "", -1, -1, -1, -1, -1, 0, 0, -1 },
	{ "plane disable 15", MRC_OPER_PLANE_DISABLE, "", 15, -1, -1, -1, -1, 0, 0, -1 },
	{ "plane enable 0", MRC_OPER_PLANE_ENABLE, "", 0, -1, -1, -1, -1, 0, 0, -1 },
	{ "path deny h1 4095", MRC_OPER_PATH_DENY, "h1", -1, -1, 4095, -1, -1, 0, 0, -1 },
	{ "path allow h1 0", MRC_OPER_PATH_ALLOW, "h1", -1, -1, 0, -1, -1, 0, 0, -1 },
};
#define NSAMPLES (sizeof(samples) / sizeof(samples[0]))

static void test_every_row_parses(void **state)
{
	(void)state;
	for (size_t k = 0; k < mrc_ctl_n_verbs; k++) {
		const struct mrc_ctl_verb *v = &mrc_ctl_verbs[k];
		int covered = 0;
		for (size_t s = 0; s < NSAMPLES; s++) {
			const struct sample *x = &samples[s];
			char word[32], act[32];
			int nw = sscanf(x->line, "%31s %31s", word, act);
			if (strcmp(word, v->name) || (v->act && (nw < 2 || strcmp(act, v->act))))
				continue;
			struct mrc_ctl_cmd c;
			char *msg = NULL;
			int r = parse(x->line, &c, &msg);
			if (r)
				fail_msg("'%s' refused: %s", x->line, msg);
			assert_string_equal(msg, "");
			free(msg);
			assert_ptr_equal(c.verb, v);
			assert_int_equal(c.req.verb, x->verb);
			assert_string_equal(c.req.peer, x->peer);
			assert_int_equal(c.req.plane, x->plane);
			assert_int_equal(c.req.spine, x->spine);
			assert_int_equal(c.req.ev, x->ev);
			assert_int_equal(c.req.last, x->last);
			assert_int_equal(c.req.timeout_ms, x->timeout_ms);
			assert_int_equal(c.req.follow, x->follow);
			assert_int_equal(c.prom, x->prom);
			assert_int_equal(c.req.qp, x->qp);
			covered++;
		}
		if (!covered)
			fail_msg("verb '%s%s%s' has no sample command line in this test", v->name,
				 v->act ? " " : "", v->act ? v->act : "");
	}
}

static void test_top_flags(void **state)
{
	(void)state;
	struct mrc_ctl_cmd c;
	char *msg = NULL;
	assert_int_equal(parse("top -d 0.5 -n 3", &c, &msg), 0);
	free(msg);
	assert_int_equal(c.top, 1);
	assert_int_equal(c.interval_ms, 500);
	assert_int_equal(c.count, 3);
	assert_int_equal(parse("top", &c, &msg), 0);
	free(msg);
	assert_int_equal(c.interval_ms, 1000);
	assert_int_equal(c.count, 0);
	assert_int_equal(parse("stats", &c, &msg), 0);
	free(msg);
	assert_int_equal(c.top, 0);
	static const char *bad[][2] = { { "top -d 0", "bad delay '0'" }, { "top -d x", "bad delay 'x'" },
					{ "top -d 1e9", "bad delay" }, { "top -n -1", "bad count '-1'" },
					{ "top -q", "unexpected argument '-q'" } };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(parse(bad[i][0], &c, &msg), -EINVAL);
		if (!strstr(msg, bad[i][1]))
			fail_msg("'%s': wanted '%s' in '%s'", bad[i][0], bad[i][1], msg);
		free(msg);
	}
}

static void expect_refused(const char *line, const char *want)
{
	struct mrc_ctl_cmd c;
	char *msg = NULL;
	assert_int_equal(parse(line, &c, &msg), -EINVAL);
	if (!strstr(msg, want))
		fail_msg("'%s': wanted '%s' in '%s'", line, want, msg);
	assert_non_null(strstr(msg, "(mrcctl help for usage)"));
	free(msg);
}

static void test_refusals(void **state)
{
	(void)state;
	expect_refused("frobnicate", "mrcctl: unknown verb 'frobnicate'");
	/* protocol names of admin verbs are not command-line verbs */
	expect_refused("plane-disable 0", "unknown verb 'plane-disable'");
	expect_refused("plane", "'plane' needs an action");
	expect_refused("path deny", "'path' needs a PEER");
	expect_refused("plane deny 0", "unknown action 'deny' (plane disable|enable P)\n");
	expect_refused("path disable h1 0", "unknown action 'disable' (path deny|allow PEER EV)\n");
	expect_refused("plane enable", "missing plane number");
	expect_refused("plane enable 16", "bad plane '16' (0..15)");
	expect_refused("path allow h1", "missing EV number");
	expect_refused("path allow h1 4096", "bad EV '4096' (0..4095)");
	expect_refused("paths", "'paths' needs a PEER");
	expect_refused("paths aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
		       "is too long");
	expect_refused("qps -1", "bad QP number '-1'");
	expect_refused("qps 0x100000000", "bad QP number");
	expect_refused("status extra", "unexpected argument 'extra'");
	expect_refused("stats -f", "unexpected argument '-f'");
	expect_refused("events -n", "unexpected argument '-n'");
	expect_refused("events -n 100001", "bad count '100001'");
	expect_refused("probe h7 --plane 16", "bad plane '16'");
	expect_refused("probe h7 --spine 256", "bad spine '256'");
	expect_refused("probe h7 --timeout 60001", "bad timeout '60001'");
	expect_refused("probe h7 --prom", "unexpected argument '--prom'");
}

static void test_usage_lists_every_verb(void **state)
{
	(void)state;
	char *u = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&u, &len);
	assert_non_null(f);
	mrc_ctl_usage(f);
	fclose(f);
	const char *admin = strstr(u, "verbs (admin");
	assert_non_null(strstr(u, "verbs (read-only):\n"));
	assert_non_null(admin);
	assert_non_null(strstr(u, "exit status:"));
	for (size_t k = 0; k < mrc_ctl_n_verbs; k++) {
		const struct mrc_ctl_verb *v = &mrc_ctl_verbs[k];
		char line[128];
		snprintf(line, sizeof(line), "\n  %s%s%s", v->name, v->args ? " " : "",
			 v->args ? v->args : "");
		const char *at = strstr(u, line);
		if (!at)
			fail_msg("usage lacks '%s'", line + 1);
		/* once, also for a word several rows share (plane disable|enable) */
		size_t times = 0;
		for (size_t off = 0; off < len; off++)
			times += !strncmp(u + off, line, strlen(line));
		if (times != 1)
			fail_msg("usage lists '%s' %zu times", line + 1, times);
		assert_non_null(strstr(at, v->help));
		/* admin verbs under the admin heading, the others above it */
		assert_int_equal(at > admin, v->needs_admin != 0);
	}
	free(u);
}

static void test_rows_agree_with_protocol(void **state)
{
	(void)state;
	for (size_t k = 0; k < mrc_ctl_n_verbs; k++) {
		const struct mrc_ctl_verb *v = &mrc_ctl_verbs[k];
		const struct mrc_ctl_verb *first = mrc_ctl_verb_find(v->name);
		assert_non_null(v->parse);
		assert_non_null(v->help);
		assert_non_null(first);
		if (!v->act) {
			assert_ptr_equal(first, v);                /* names unique */
		} else {
			/* A shared word: adjacent rows that differ only in the
			 * action word and the request (usage prints the first). */
			for (const struct mrc_ctl_verb *o = first; o < v; o++) {
				assert_string_equal(o->name, v->name);
				assert_non_null(o->act);
				if (!strcmp(o->act, v->act))
					fail_msg("'%s %s' twice", v->name, v->act);
				assert_string_equal(o->help, v->help);
				assert_true(o->args == v->args || !strcmp(o->args, v->args));
				assert_int_equal(o->needs_admin, v->needs_admin);
				assert_ptr_equal(o->parse, v->parse);
				assert_ptr_equal(o->render, v->render);
			}
		}
		if (v->view) {              /* top: a view over stats' replies */
			assert_null(v->render);
			assert_non_null(mrc_ctl_verb_of(v->verb));
			assert_ptr_not_equal(mrc_ctl_verb_of(v->verb), v);
			continue;
		}
		if (v->verb == MRC_OPER_NONE) {                    /* help: local */
			assert_null(v->render);
			continue;
		}
		assert_non_null(v->render);
		assert_int_equal(mrc_oper_verb_is_admin(v->verb), v->needs_admin);
		assert_ptr_equal(mrc_ctl_verb_of(v->verb), v);
	}
	/* every request verb of the protocol has its row */
	for (int pv = MRC_OPER_NONE + 1; pv < MRC_OPER__COUNT; pv++)
		if (!mrc_ctl_verb_of((enum mrc_oper_verb)pv))
			fail_msg("protocol verb '%s' has no mrcctl verb",
				 mrc_oper_verb_name((enum mrc_oper_verb)pv));
}

/* The whole usage text, as mrcctl printed it before the table came from
 * codec/operverbs.def: generating it must not change it. */
static void test_usage_text(void **state)
{
	(void)state;
	static const char want[] =
		"usage: mrcctl [-j | -p] [-s SOCKET] [-t SECONDS] VERB [ARGS]\n"
		"\n"
		"verbs (read-only):\n"
		"  status                          version, uptime, host, planes, QPs, totals\n"
		"  planes                          per plane: NIC, link, admin state, rates, loss, EV states\n"
		"  peers                           hosts this node has paths to\n"
		"  paths PEER                      every EV to PEER: plane, spine, uSID address, state, RTT, loss\n"
		"  qps [QPN]                       queue pairs (QPN decimal or 0x hex)\n"
		"  stats [--prom]                  every counter (--prom: Prometheus text)\n"
		"  top [-d SECS] [-n N]            live per-plane and per-peer rates, losses, EV states (q quits; -n N frames)\n"
		"  events [-f] [-n N]              recent events (-f: keep following; -n: last N)\n"
		"  probe PEER [--plane P] [--spine S] [--timeout MS]\n"
		"                                  probe paths to PEER, print RTT or loss per path\n"
		"  topology                        the fabric as mrcd sees it\n"
		"  fabric                          fabric links suspect, located or denied: evidence, since when\n"
		"  stragglers                      straggler records libmrc-coll filed: who, uid, pid, verdict, where\n"
		"  version                         mrcctl's and mrcd's versions\n"
		"  help                            this text\n"
		"verbs (admin: root or mrcd's admin_group):\n"
		"  plane disable|enable P          deny/allow every path of plane P, for every peer\n"
		"  path deny|allow PEER EV         deny/allow one path\n"
		"\n"
		"options:\n"
		"  -j, --json           compact JSON (one object; the contract in docs/ctl.md)\n"
		"  -p, --pretty         indented JSON\n"
		"  -s, --socket PATH    operator socket (default $MRCCTL_SOCKET or /run/mrcd/mrcctl.sock)\n"
		"  -t, --timeout SECS   reply timeout (default 10)\n"
		"\n"
		"exit status: 0 ok, 1 mrcd reported an error, 2 usage error, 3 cannot connect to\n"
		"mrcd, 4 permission denied, 5 no such peer/QP/plane/path, 6 protocol error,\n"
		"7 no reply in time.\n";
	char *u = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&u, &len);
	assert_non_null(f);
	mrc_ctl_usage(f);
	fclose(f);
	assert_string_equal(u, want);
	free(u);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_row_parses),
		cmocka_unit_test(test_top_flags),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_usage_lists_every_verb),
		cmocka_unit_test(test_rows_agree_with_protocol),
		cmocka_unit_test(test_usage_text),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
