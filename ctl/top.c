/* `mrcctl top`: one frame from two `stats` snapshots.  Planes carry the
 * daemon's own per-second rates (tx_pps, lost_pps); everything else is a
 * counter, turned into a rate here from the difference of the two
 * snapshots over their interval.  Pure: the loop, the socket and the
 * terminal are mrcctl.c's. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ctl/table.h"
#include "ctl/top.h"

#define TOP_PEERS 20     /* peer rows shown, busiest first */

/* The rate of counter k of objects a (now) and b (before) over dt, as a
 * cell; "-" without a previous snapshot or when the counter went back
 * (a restarted daemon). */
static char *rate(const json_t *a, const json_t *b, const char *k, double dt)
{
	if (!b || dt <= 0)
		return strdup("-");
	long long d = gi(a, k) - gi(b, k);
	if (d < 0)
		return strdup("-");
	return cellf("%.0f", (double)d / dt);
}

static double drate(const json_t *a, const json_t *b, const char *k, double dt)
{
	if (!b || dt <= 0)
		return 0;
	long long d = gi(a, k) - gi(b, k);
	return d > 0 ? (double)d / dt : 0;
}

/* The sum of an object of counters (nack_rx by reason). */
static long long sum(const json_t *o)
{
	long long n = 0;
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)o, k, v)
		n += (long long)json_integer_value(v);
	return n;
}

static const json_t *by_key(const json_t *arr, const char *k, const json_t *v)
{
	size_t i;
	json_t *e;
	json_array_foreach(arr, i, e)
		if (json_equal(json_object_get(e, k), (json_t *)v))
			return e;
	return NULL;
}

/* EV states as three cells: GOOD, ASSUMED_BAD, DENIED. */
static void evs(char **r, const json_t *e)
{
	const json_t *s = get(e, "evs");
	r[0] = cell(get(s, "GOOD"));
	r[1] = cell(get(s, "ASSUMED_BAD"));
	r[2] = cell(get(s, "DENIED"));
}

struct peer_row {
	const json_t *cur, *prev;
	double tx;
};

static int by_tx(const void *a, const void *b)
{
	double x = ((const struct peer_row *)a)->tx, y = ((const struct peer_row *)b)->tx;
	return x < y ? 1 : x > y ? -1 : 0;
}

int mrc_ctl_top_frame(FILE *f, const char *title, const json_t *cur, const json_t *prev, double dt)
{
	const json_t *planes = get(cur, "planes"), *peers = get(cur, "peers");
	const json_t *dp = get(cur, "datapath"), *en = get(cur, "engine");
	if (!json_is_array(planes) || !json_is_array(peers) || !json_is_object(dp) || !json_is_object(en))
		return -EINVAL;
	const json_t *pen = prev ? get(prev, "engine") : NULL;
	long long nacks = pen ? sum(get(en, "nack_rx")) - sum(get(pen, "nack_rx")) : 0;
	fprintf(f, "%s\n", title);
	fprintf(f, "datapath: tx %lld pkt/s %.1f Mbit/s, rx %lld pkt/s %.1f Mbit/s; "
		"retx %.0f/s, RTO %.0f/s, NACKs %.0f/s, path changes %.0f/s\n\n",
		gi(dp, "tx_pps"), (double)gi(dp, "tx_bytes_per_s") * 8 / 1e6, gi(dp, "rx_pps"),
		(double)gi(dp, "rx_bytes_per_s") * 8 / 1e6, drate(en, pen, "tx_retx", dt),
		drate(en, pen, "rto_fires", dt),
		nacks > 0 && dt > 0 ? (double)nacks / dt : 0,
		drate(en, pen, "ev_changes", dt));

	static const char *ph[] = { "PLANE", "NIC", "LINK", "ADMIN", "TX_PPS", "LOST_PPS", "TRIMS/S",
				    "ECN/S", "GOOD", "BAD", "DENIED", "PEERS_DOWN", NULL };
	struct table t;
	t_init(&t, ph);
	size_t i;
	json_t *e;
	json_array_foreach(planes, i, e) {
		char **r = t_row(&t);
		if (!r)
			break;
		const json_t *pe = prev ? by_key(get(prev, "planes"), "plane", get(e, "plane")) : NULL;
		r[0] = cell(get(e, "plane"));
		r[1] = cell(get(e, "nic"));
		r[2] = cell(get(e, "link"));
		r[3] = cell(get(e, "admin"));
		r[4] = cell(get(e, "tx_pps"));
		r[5] = cell(get(e, "lost_pps"));
		r[6] = rate(e, pe, "trims", dt);
		r[7] = rate(e, pe, "ecn", dt);
		evs(r + 8, e);
		r[11] = cell(get(e, "peers_reporting_down"));
	}
	t_print(f, &t);

	size_t np = json_array_size(peers);
	fprintf(f, "\n");
	if (!np) {
		fprintf(f, "no peers yet\n");
		return 0;
	}
	struct peer_row *pr = calloc(np, sizeof(*pr));
	if (!pr)
		return -ENOMEM;
	json_array_foreach(peers, i, e) {
		pr[i].cur = e;
		pr[i].prev = prev ? by_key(get(prev, "peers"), "peer", get(e, "peer")) : NULL;
		pr[i].tx = drate(e, pr[i].prev, "tx_pkts", dt);
	}
	qsort(pr, np, sizeof(*pr), by_tx);
	static const char *eh[] = { "PEER", "QPS", "TX_PPS", "LOST/S", "TRIMS/S", "ECN/S", "SRTT_US",
				    "GOOD", "BAD", "DENIED", NULL };
	t_init(&t, eh);
	for (i = 0; i < np && i < TOP_PEERS; i++) {
		char **r = t_row(&t);
		if (!r)
			break;
		e = (json_t *)pr[i].cur;
		r[0] = cell(get(e, "peer"));
		r[1] = cell(get(e, "qps"));
		r[2] = rate(e, pr[i].prev, "tx_pkts", dt);
		r[3] = rate(e, pr[i].prev, "lost", dt);
		r[4] = rate(e, pr[i].prev, "trims", dt);
		r[5] = rate(e, pr[i].prev, "ecn", dt);
		r[6] = cell(get(e, "srtt_us_avg"));
		evs(r + 7, e);
	}
	t_print(f, &t);
	if (np > TOP_PEERS)
		fprintf(f, "(%zu more peers; mrcctl peers lists all)\n", np - TOP_PEERS);
	free(pr);
	return 0;
}
