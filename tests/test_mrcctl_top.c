/* `mrcctl top`'s frame (ctl/top.c) from two synthetic stats snapshots:
 * counter rates are the difference over the interval, the first frame
 * shows "-" where a rate needs two snapshots, peers come busiest first,
 * a counter that went back (a restarted mrcd) shows "-", and a reply
 * without the sections top needs is refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <string.h>
#include <cmocka.h>
#include <jansson.h>

#include "ctl/top.h"

static json_t *snap(long long k)
{
	/* k scales every counter: two snapshots k=1 and k=3 one second
	 * apart give rates of 2x the k=1 values. */
	json_t *s = json_pack("{s:{s:I, s:I, s:{s:I}}, s:{s:i, s:i, s:i, s:i}, s:[{s:i, s:s, s:s, s:s, "
			      "s:i, s:i, s:I, s:I, s:i, s:{s:i, s:i, s:i}}], s:[{s:s, s:i, s:I, s:I, s:I, s:I, "
			      "s:f, s:{s:i, s:i, s:i}}, {s:s, s:i, s:I, s:I, s:I, s:I, s:f, s:{s:i, s:i, s:i}}]}",
			      "engine", "tx_retx", 5 * k, "ev_changes", k, "nack_rx", "trimmed", 7 * k,
			      "datapath", "tx_pps", 1000, "rx_pps", 900, "tx_bytes_per_s", 12500000,
			      "rx_bytes_per_s", 1250000,
			      "planes", "plane", 0, "nic", "p0l0", "link", "up", "admin", "enabled", "tx_pps", 812,
			      "lost_pps", 3, "trims", 40 * k, "ecn", 0 * k, "peers_reporting_down", 0, "evs", "GOOD", 3,
			      "ASSUMED_BAD", 1, "DENIED", 2,
			      "peers", "peer", "h1", "qps", 1, "tx_pkts", 100 * k, "lost", 0 * k, "trims", 0 * k, "ecn",
			      0 * k, "srtt_us_avg", 12.5, "evs", "GOOD", 4, "ASSUMED_BAD", 0, "DENIED", 0,
			      "peer", "h7", "qps", 2, "tx_pkts", 3000 * k, "lost", 11 * k, "trims", 0 * k, "ecn", 0 * k,
			      "srtt_us_avg", 48.0, "evs", "GOOD", 3, "ASSUMED_BAD", 1, "DENIED", 0);
	assert_non_null(s);
	return s;
}

static char *frame(const json_t *cur, const json_t *prev, double dt, int *rc)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	assert_non_null(f);
	*rc = mrc_ctl_top_frame(f, "T", cur, prev, dt);
	fclose(f);
	return buf;
}

/* The row of a table that starts with key, as its whitespace-split words. */
static int row(const char *text, const char *key, char words[][32], int max)
{
	for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		size_t n = strlen(key);
		if (strncmp(l, key, n) || (l[n] != ' '))
			continue;
		int k = 0;
		const char *p = l;
		while (*p && *p != '\n' && k < max) {
			while (*p == ' ')
				p++;
			int w = 0;
			while (*p && *p != ' ' && *p != '\n' && w < 31)
				words[k][w++] = *p++;
			words[k][w] = 0;
			if (w)
				k++;
		}
		return k;
	}
	return 0;
}

static void test_rates_and_order(void **state)
{
	(void)state;
	json_t *a = snap(1), *b = snap(3);
	int rc;
	char *t = frame(b, a, 2.0, &rc);
	assert_int_equal(rc, 0);
	char w[16][32];
	/* h7: (9000 - 3000) / 2 s = 3000 pkt/s, lost (33 - 11) / 2 = 11/s */
	assert_int_equal(row(t, "h7", w, 16), 10);
	assert_string_equal(w[2], "3000");
	assert_string_equal(w[3], "11");
	assert_string_equal(w[6], "48.0");
	assert_string_equal(w[8], "1");         /* ASSUMED_BAD */
	/* h1: (300 - 100) / 2 = 100 pkt/s; listed after h7 (busier first) */
	assert_int_equal(row(t, "h1", w, 16), 10);
	assert_string_equal(w[2], "100");
	assert_true(strstr(t, "\nh7 ") < strstr(t, "\nh1 "));
	/* plane 0: rates from mrcd (812, 3), trims (120 - 40) / 2 = 40/s */
	assert_int_equal(row(t, "0", w, 16), 12);
	assert_string_equal(w[1], "p0l0");
	assert_string_equal(w[4], "812");
	assert_string_equal(w[5], "3");
	assert_string_equal(w[6], "40");
	/* engine: retx (15 - 5) / 2 = 5/s, NACKs (21 - 7) / 2 = 7/s */
	assert_non_null(strstr(t, "tx 1000 pkt/s 100.0 Mbit/s"));
	assert_non_null(strstr(t, "retx 5/s"));
	assert_non_null(strstr(t, "NACKs 7/s"));
	free(t);

	/* the first frame: counter rates need two snapshots */
	t = frame(a, NULL, 0, &rc);
	assert_int_equal(rc, 0);
	assert_int_equal(row(t, "h7", w, 16), 10);
	assert_string_equal(w[2], "-");
	free(t);
	/* counters that went back (mrcd restarted): "-", never negative */
	t = frame(a, b, 1.0, &rc);
	assert_int_equal(row(t, "h7", w, 16), 10);
	assert_string_equal(w[2], "-");
	assert_null(strstr(t, " -"  "1"));
	free(t);

	json_object_del(b, "planes");
	t = frame(b, a, 1.0, &rc);
	assert_int_equal(rc, -EINVAL);
	free(t);
	json_decref(a);
	json_decref(b);
}

int main(void)
{
	const struct CMUnitTest t[] = {
		cmocka_unit_test(test_rates_and_order),
	};
	return cmocka_run_group_tests(t, NULL, NULL);
}
