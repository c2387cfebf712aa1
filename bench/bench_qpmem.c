/* mrcd's memory per idle QP: one client creates N QPs through libmrc
 * against a fresh mrcd on loopback (started here, bench_mrcd.h) and the
 * daemon's /proc/PID/status is read before and after.  VmRSS is what the
 * QPs really cost in resident pages; RssAnon (heap) and RssShmem (ring
 * pages in the memfds shared with the client) split it; VmSize is the
 * address space they reserve (calloc'd arrays the kernel has not backed
 * yet).  Compared with mrce_qp_bytes (the engine's own arrays at the
 * daemon's default config).
 *
 * Also, with the N QPs idle: the round trip of one descriptor through the
 * daemon on one more QP (post -> pickup -> error completion, the QP being
 * unconnected), against the same with no idle QPs in the same run, and
 * their ratio (issue 16: within 1.1 at 10,000 idle QPs; the daemon polls
 * only its active QPs and each client has one doorbell, so idle QPs cost
 * neither a visit per round nor an fd); and the time to create the QPs.
 *
 * Rings: "small" = 8-entry SQ and CQ (the least the ABI allows), "default"
 * = libmrc's 256/512.  MRC_BENCH_RUNS runs (default 3) per row: median
 * (min..max).  MRC_BENCH_QPMEM_NS="1000 10000" picks N.
 *
 * MRC_BENCH_QPMEM_BASE=PATH names a baseline mrcd (an older build): then a
 * second table puts its round trips beside this build's, the two daemons
 * taking turns run by run, so both see the same load. */
#include "bench/bench_mrcd.h"
#include "lib/internal.h"
#include "mrc/mrc.h"
#include "tests/support/qpbytes.h"

#define MAXRUNS 16

struct res {
	double rss, anon, shmem, vmsize, fds, create_us, rtt0, rtt, rtt99_0, rtt99, client_rss,
		after_close;
};

static double rtt_us(struct mrc_qp *qp, uint32_t lkey, unsigned n, double *p99)
{
	uint64_t *v = calloc(n, sizeof(*v));
	for (unsigned i = 0; i < n; i++) {
		uint64_t t0 = bm_now_ns(), end = t0 + 5000000000ull;
		if (mrc_post_write(qp, i, lkey, 0, 64, 1, 0))
			break;
		struct mrc_completion c;
		int k;
		while ((k = mrc_poll_cq(qp, &c, 1)) == 0 && bm_now_ns() < end)
			;
		v[i] = bm_now_ns() - t0;
	}
	double med = (double)bm_quantile(v, n, 0.5, 0) / 1e3;
	*p99 = (double)bm_quantile(v, n, 0.99, 1) / 1e3;
	free(v);
	return med;
}

static char fail_why[512];

static int one(unsigned nqp, uint32_t sq, uint32_t cq, struct res *r)
{
	char maxq[48];
	char maxu[48];
	snprintf(maxq, sizeof(maxq), "--client_max_qps=%u", nqp + 8);
	snprintf(maxu, sizeof(maxu), "--uid_max_qps=%u", nqp + 8);
	const char *extra[] = { maxq, maxu, NULL };
	struct bm_mrcd d;
	if (bm_mrcd_start(&d, extra))
		return -1;
	struct mrc_ctx *ctx;
	struct mrc_mr *mr;
	struct mrc_qp *probe, **qps = calloc(nqp, sizeof(*qps));
	struct mrc_qp_cfg cfg = { .sq_entries = sq, .cq_entries = cq };
	int rc = -1, e;
	if ((e = mrc_open(d.sock, &ctx)) || (e = mrc_alloc_mr(ctx, 4096, MRC_MR_LOCAL_READ, &mr)) ||
	    (e = mrc_create_qp(ctx, &cfg, &probe))) {
		fprintf(stderr, "bench_qpmem: setup: %s\n", mrc_strerror(e));
		goto out;
	}
	uint32_t lkey = mrc_mr_key(mr);
	usleep(200000);
	r->rtt0 = rtt_us(probe, lkey, 2000, &r->rtt99_0);
	long rss0 = bm_status_kb(d.pid, "VmRSS"), anon0 = bm_status_kb(d.pid, "RssAnon"),
	     sh0 = bm_status_kb(d.pid, "RssShmem"), vm0 = bm_status_kb(d.pid, "VmSize");
	long fd0 = bm_nfds(d.pid), crss0 = bm_status_kb(getpid(), "VmRSS");
	uint64_t t0 = bm_now_ns();
	for (unsigned i = 0; i < nqp; i++)
		if ((e = mrc_create_qp(ctx, &cfg, &qps[i]))) {
			snprintf(fail_why, sizeof(fail_why), "QP %u of %u: %s (%s); daemon has %ld fds open",
				 i + 1, nqp, mrc_strerror(e), mrc_last_error(ctx), bm_nfds(d.pid));
			fprintf(stderr, "bench_qpmem: %s\n", fail_why);
			goto out;
		}
	r->create_us = (double)(bm_now_ns() - t0) / 1e3 / nqp;
	usleep(300000);    /* the daemon has armed every ring and sleeps */
	r->rss = (double)(bm_status_kb(d.pid, "VmRSS") - rss0) * 1024 / nqp;
	r->anon = (double)(bm_status_kb(d.pid, "RssAnon") - anon0) * 1024 / nqp;
	r->shmem = (double)(bm_status_kb(d.pid, "RssShmem") - sh0) * 1024 / nqp;
	r->vmsize = (double)(bm_status_kb(d.pid, "VmSize") - vm0) * 1024 / nqp;
	r->fds = (double)(bm_nfds(d.pid) - fd0) / nqp;
	r->client_rss = (double)(bm_status_kb(getpid(), "VmRSS") - crss0) * 1024 / nqp;
	r->rtt = rtt_us(probe, lkey, 2000, &r->rtt99);
	long before_close = bm_status_kb(d.pid, "VmRSS");
	mrc_close(ctx);
	ctx = NULL;
	usleep(500000);
	r->after_close = (double)(before_close - bm_status_kb(d.pid, "VmRSS")) * 1024 / nqp;
	rc = 0;
out:
	if (ctx)
		mrc_close(ctx);
	bm_mrcd_stop(&d);
	free(qps);
	return rc;
}

/* The baseline mrcd and this one in turns: round trip p50 with no idle QP
 * and with N, and their ratio. */
static void side_by_side(const char *base, const unsigned *ns, unsigned nn, unsigned runs)
{
	const char *self = getenv("MRCD_BIN");
	char keep[PATH_MAX] = "";
	if (self)
		snprintf(keep, sizeof(keep), "%s", self);
	printf("\n### Idle QPs: baseline mrcd (%s) and this build, taking turns\n\n"
	       "Same runs as above for each side, alternating baseline / this build, %u runs each: "
	       "median (min..max) of the 1-descriptor round trip p50 with no idle QP, with N, "
	       "and of the per-run ratio (goal: at most 1.10).\n\n", base, runs);
	printf("| N idle QPs | rings (SQ/CQ) | baseline p50 us, 0 -> N | baseline ratio "
	       "| this build p50 us, 0 -> N | this build ratio |\n|--:|---|--:|--:|--:|--:|\n");
	static const struct { const char *name; uint32_t sq, cq; } rings[] = {
		{ "8/8", 8, 8 }, { "256/512", 256, 512 },
	};
	for (unsigned i = 0; i < nn; i++)
		for (unsigned k = 0; k < 2; k++) {
			double v[2][3][MAXRUNS];
			unsigned ok[2] = { 0, 0 };
			for (unsigned j = 0; j < runs; j++)
				for (int side = 0; side < 2; side++) {
					if (side == 0)
						setenv("MRCD_BIN", base, 1);
					else if (keep[0])
						setenv("MRCD_BIN", keep, 1);
					else
						unsetenv("MRCD_BIN");
					struct res r;
					if (one(ns[i], rings[k].sq, rings[k].cq, &r))
						continue;
					v[side][0][ok[side]] = r.rtt0;
					v[side][1][ok[side]] = r.rtt;
					v[side][2][ok[side]++] = r.rtt0 > 0 ? r.rtt / r.rtt0 : 0;
				}
			char b[2][3][96];
			for (int side = 0; side < 2; side++)
				for (int m = 0; m < 3; m++)
					if (ok[side])
						bm_spread(b[side][m], sizeof(b[side][m]), v[side][m],
							  (int)ok[side], m == 2 ? "%.2f" : "%.1f");
					else
						snprintf(b[side][m], sizeof(b[side][m]), "failed");
			printf("| %u | %s | %s -> %s | %s | %s -> %s | %s |\n", ns[i], rings[k].name,
			       b[0][0], b[0][1], b[0][2], b[1][0], b[1][1], b[1][2]);
			fflush(stdout);
		}
	if (keep[0])
		setenv("MRCD_BIN", keep, 1);
	else
		unsetenv("MRCD_BIN");
}

int main(void)
{
	unsigned runs = 3, ns[8] = { 1000, 10000 }, nn = 2;
	const char *e;
	if ((e = getenv("MRC_BENCH_RUNS")) && atoi(e) > 0)
		runs = (unsigned)atoi(e) < MAXRUNS ? (unsigned)atoi(e) : MAXRUNS;
	if ((e = getenv("MRC_BENCH_QPMEM_NS"))) {
		nn = 0;
		for (char *p = (char *)e; *p && nn < 8;) {
			char *end;
			unsigned long v = strtoul(p, &end, 10);
			if (end == p)
				break;
			ns[nn++] = (unsigned)v;
			p = end;
		}
	}
	unsigned maxn = 0;
	for (unsigned i = 0; i < nn; i++)
		maxn = ns[i] > maxn ? ns[i] : maxn;
	/* Client protocol 4: three fds per client, none per QP, so the
	 * default limit is enough (printed, not raised). */
	struct rlimit rl;
	long lim = getrlimit(RLIMIT_NOFILE, &rl) ? -1 : (long)rl.rlim_cur;
	(void)maxn;

	/* The figure the docs quote, from the function tests/test_docs.c
	 * checks them against (the engine's defaults, as mrcd runs it). */
	size_t eng_bytes = mrc__qp_bytes_default();
	char mach[256];
	bm_machine(mach, sizeof(mach));
	printf("## bench_qpmem: mrcd memory per idle QP\n\n");
	printf("Machine: %s.  %u runs per row: median (min..max).  One client creates N QPs "
	       "on a fresh mrcd (loopback, default config but client_max_qps and uid_max_qps); deltas of the "
	       "daemon's /proc/PID/status after the QPs are created and idle, divided by N.  "
	       "RLIMIT_NOFILE %ld for the client and the daemon (not raised).  "
	       "Memory per QP: %zu bytes in the engine at its defaults "
	       "(mrce_qp_bytes, tests/support/qpbytes.c: the figure README.md and "
	       "docs/design.md quote, checked by tests/test_docs.c); the rest of VmRSS below "
	       "is mrcd's client side and the rings.\n\n", mach, runs, lim, eng_bytes);
	printf("| N idle QPs | rings (SQ/CQ) | VmRSS bytes/QP | of it RssAnon | of it RssShmem (rings) "
	       "| VmSize bytes/QP | daemon fds/QP | client VmRSS bytes/QP | freed on client exit, bytes/QP "
	       "| create us/QP | 1-descriptor round trip p50 us, 0 -> N idle QPs | p50 ratio | p99 us |\n");
	printf("|--:|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n");
	static const struct { const char *name; uint32_t sq, cq; } rings[] = {
		{ "8/8", 8, 8 }, { "256/512", 256, 512 },
	};
	for (unsigned i = 0; i < nn; i++)
		for (unsigned k = 0; k < 2; k++) {
			unsigned n = ns[i];
			double v[13][MAXRUNS];
			unsigned ok = 0;
			for (unsigned j = 0; j < runs; j++) {
				struct res r;
				if (one(n, rings[k].sq, rings[k].cq, &r))
					continue;
				double *f = &r.rss;
				for (int m = 0; m < 12; m++)
					v[m][ok] = f[m];
				v[12][ok] = r.rtt0 > 0 ? r.rtt / r.rtt0 : 0;
				ok++;
			}
			if (!ok) {
				printf("| %u | %s | failed: %s |\n", n, rings[k].name, fail_why);
				continue;
			}
			char b[13][96];
			for (int m = 0; m < 13; m++)
				bm_spread(b[m], sizeof(b[m]), v[m], (int)ok,
					  m == 12 ? "%.2f" : m >= 4 && m <= 9 ? "%.1f" : "%.0f");
			/* fields: rss anon shmem vmsize fds create rtt0 rtt rtt99_0 rtt99 client after */
			printf("| %u | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s -> %s | %s | %s -> %s |\n",
			       n, rings[k].name, b[0], b[1], b[2], b[3], b[4], b[10], b[11], b[5],
			       b[6], b[7], b[12], b[8], b[9]);
			fflush(stdout);
		}
	if ((e = getenv("MRC_BENCH_QPMEM_BASE")) && *e)
		side_by_side(e, ns, nn, runs);
	return 0;
}
