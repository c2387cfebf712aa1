/* mrcctl's tables (ctl/render.c) from synthetic replies: the planes and
 * peers tables take nested path-state counts ("evs.GOOD") and a loss
 * ratio shown as a percentage, in header order; a reply without the
 * array is refused. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "ctl/render.h"

typedef int (*render_fn)(FILE *, const json_t *);

/* Renders res; the text into a malloc'd string, the return into *rc. */
static char *render(render_fn fn, const json_t *res, int *rc)
{
	char *s = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&s, &n);
	assert_non_null(f);
	*rc = fn(f, res);
	fclose(f);
	return s;
}

/* The words of line `no` (0 = header) of text, space separated. */
static int words(const char *text, int no, char w[][32], int max)
{
	const char *l = text;
	for (int i = 0; i < no && l; i++)
		l = strchr(l, '\n'), l = l ? l + 1 : NULL;
	assert_non_null(l);
	int n = 0;
	while (*l && *l != '\n' && n < max) {
		while (*l == ' ')
			l++;
		int k = 0;
		while (*l && *l != ' ' && *l != '\n' && k < 31)
			w[n][k++] = *l++;
		w[n][k] = 0;
		if (k)
			n++;
	}
	return n;
}

static void planes(void **state)
{
	(void)state;
	json_t *res = json_pack("{s:[{s:i, s:s, s:s, s:s, s:i, s:i, s:i, s:f, s:i, s:i, s:{s:i, s:i, s:i}}]}",
				"planes", "plane", 1, "nic", "p1l0", "link", "up", "admin", "enabled",
				"tx_pps", 812, "tx_pkts", 4000, "lost", 12, "loss_ratio", 0.003, "trims", 40,
				"ecn", 5, "evs", "GOOD", 3, "ASSUMED_BAD", 1, "DENIED", 2);
	int rc;
	char *s = render(mrc_ctl_render_planes, res, &rc);
	assert_int_equal(rc, 0);
	char w[16][32];
	assert_int_equal(words(s, 0, w, 16), 13);
	assert_string_equal(w[7], "LOSS%");
	assert_string_equal(w[10], "GOOD");
	assert_int_equal(words(s, 1, w, 16), 13);
	const char *want[] = { "1", "p1l0", "up", "enabled", "812", "4000", "12", "0.30", "40", "5",
			       "3", "1", "2" };
	for (int i = 0; i < 13; i++)
		assert_string_equal(w[i], want[i]);
	free(s);
	json_decref(res);
}

static void peers(void **state)
{
	(void)state;
	json_t *res = json_pack("{s:[{s:s, s:i, s:s, s:i, s:{s:i, s:i, s:i}, s:i, s:i, s:i, s:i}]}",
				"peers", "peer", "h7", "host", 7, "address", "fd00::7", "paths", 8,
				"evs", "GOOD", 6, "ASSUMED_BAD", 1, "DENIED", 1, "qps", 2, "tx_pkts", 900,
				"lost", 3, "srtt_us_min", 41);
	int rc;
	char *s = render(mrc_ctl_render_peers, res, &rc);
	assert_int_equal(rc, 0);
	char w[16][32];
	assert_int_equal(words(s, 1, w, 16), 11);
	const char *want[] = { "h7", "7", "fd00::7", "8", "6", "1", "1", "2", "900", "3", "41" };
	for (int i = 0; i < 11; i++)
		assert_string_equal(w[i], want[i]);
	free(s);
	json_decref(res);
}

/* stragglers: a summary line, then one row per record; a compute
 * record's network columns are "-". */
static void stragglers(void **state)
{
	(void)state;
	json_t *res = json_pack("{s:i, s:i, s:i, s:i, s:i, s:i, s:["
				"{s:s, s:i, s:i, s:s, s:i, s:s, s:i, s:i, s:i, s:i, s:i, s:i, s:i},"
				"{s:s, s:i, s:i, s:s, s:i, s:s, s:i, s:i, s:i, s:i}]}",
				"filed", 2, "dropped", 0, "rate_refused", 1, "users_refused", 0,
				"users", 1, "ring", 32, "records",
				"time", "T1", "uid", 1000, "pid", 42, "comm", "00ab", "call", 7,
				"verdict", "network", "rank", 3, "host", 5, "peer_rank", 1, "plane", 1,
				"qpn", 17, "late_us", 900, "call_us", 40000,
				"time", "T2", "uid", 1000, "pid", 42, "comm", "00ab", "call", 8,
				"verdict", "compute", "rank", 2, "host", 6, "late_us", 2000, "call_us", 5000);
	int rc;
	char *s = render(mrc_ctl_render_stragglers, res, &rc);
	assert_int_equal(rc, 0);
	assert_non_null(strstr(s, "straggler records: 2 (filed 2, dropped 0"));
	char w[16][32];
	assert_int_equal(words(s, 1, w, 16), 13);
	assert_string_equal(w[1], "UID");
	assert_string_equal(w[5], "VERDICT");
	assert_int_equal(words(s, 2, w, 16), 13);
	const char *net[] = { "T1", "1000", "42", "00ab", "7", "network", "3", "5", "1", "1", "17",
			      "900", "40000" };
	for (int i = 0; i < 13; i++)
		assert_string_equal(w[i], net[i]);
	assert_int_equal(words(s, 3, w, 16), 13);
	const char *cmp[] = { "T2", "1000", "42", "00ab", "8", "compute", "2", "6", "-", "-", "-",
			      "2000", "5000" };
	for (int i = 0; i < 13; i++)
		assert_string_equal(w[i], cmp[i]);
	free(s);
	json_decref(res);
}

static void missing_array(void **state)
{
	(void)state;
	json_t *res = json_pack("{s:i}", "planes", 3);
	int rc;
	free(render(mrc_ctl_render_planes, res, &rc));
	assert_int_equal(rc, -EINVAL);
	free(render(mrc_ctl_render_peers, res, &rc));
	assert_int_equal(rc, -EINVAL);
	json_decref(res);
}

int main(void)
{
	const struct CMUnitTest t[] = {
		cmocka_unit_test(planes),
		cmocka_unit_test(peers),
		cmocka_unit_test(stragglers),
		cmocka_unit_test(missing_array),
	};
	return cmocka_run_group_tests(t, NULL, NULL);
}
