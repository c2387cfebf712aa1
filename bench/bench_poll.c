/* Adaptive polling of GPU-fed (MRC_QP_POLLED) rings in mrcd (ring.h
 * "Polled rings"): what a producer waits for its descriptor to be picked
 * up, and what an idle daemon costs.
 *
 * Part 1, post-to-pickup through libmrc and a real mrcd on loopback
 * (started here, default config: gpu_park_us 1000, gpu_poll_min_us 10,
 * gpu_poll_max_us 200).  Unconnected QPs, so every WRITE is picked up,
 * refused by the engine and completed with an error: the ring path
 * without network (as bench_ring part 2).  Pickup = the daemon's release
 * store of hdr.tail past the descriptor's index, seen by the client.
 *   polled, busy:    the next post right after the previous completion
 *                    (the QP is on the daemon's active list, busy-polled).
 *   polled, parked:  hdr.sleeping = 1 and 5 ms more (the parked-ring timer
 *                    at its longest interval), then a post: libmrc sets
 *                    the notify page, the timer finds it.
 *   doorbell, asleep: a doorbell QP whose SQ doorbell is armed
 *                    (sleeping = 1): libmrc writes its eventfd.
 *   doorbell, busy:  back to back, as polled busy.
 * Part 2, the idle daemon's CPU (utime + stime from /proc/PID/stat) over
 * a fixed interval: no client at all, then one client with one doorbell
 * QP, 1 and 1,000 parked polled QPs; with the default gpu_poll_max_us and
 * with 1000 us (a second daemon), for the latency/CPU trade-off.
 *
 * Prints markdown: medians over MRC_BENCH_RUNS runs (default 5) with
 * (min..max) across runs, and the machine. */

#include "bench/bench_mrcd.h"
#include "lib/internal.h"
#include "mrc/mrc.h"
#include "mrc/ring.h"

#define MAXRUNS 64
#define N_IDLE 1000
#define CPU_INTERVAL_MS 1000

static unsigned runs = 5;

static int wait_sleeping(struct mrc_ring_hdr *h)
{
	uint64_t end = bm_now_ns() + 5000000000ull;
	while (!__atomic_load_n(&h->sleeping, __ATOMIC_ACQUIRE)) {
		if (bm_now_ns() > end)
			return -ETIMEDOUT;
		bm_pause_us(50);
	}
	return 0;
}

/* One post and its pickup (ns); the error completion is drained. */
static int64_t post_pickup(struct mrc_qp *qp, uint32_t lkey, uint64_t wr_id)
{
	struct mrc_ring_hdr *sqh = qp->sq.hdr;
	uint64_t idx = qp->sq.idx, t0 = bm_now_ns(), end = t0 + 5000000000ull, t;
	if (mrc_post_write(qp, wr_id, lkey, 0, 64, 1, 0))
		return -1;
	/* Picked up once tail has moved past idx (unsigned distance). */
	while (mrc_ring_tail_load(sqh) - idx - 1 >= (1ull << 63)) {
		bm_cpu_relax();
		if ((t = bm_now_ns()) > end)
			return -1;
	}
	t = bm_now_ns() - t0;
	struct mrc_completion c;
	for (uint64_t e = bm_now_ns() + 5000000000ull; mrc_poll_cq(qp, &c, 1) != 1;)
		if (bm_now_ns() > e)
			return -1;
	return (int64_t)t;
}

enum { M_POLLED_BUSY, M_POLLED_PARKED, M_DB_ASLEEP, M_DB_BUSY, M_N };
static const char *const mode_name[M_N] = {
	"polled QP, busy (back to back)",
	"polled QP, parked (sleeping = 1 + 5 ms: notify page, timer at gpu_poll_max_us)",
	"doorbell QP, asleep (sleeping = 1: eventfd)",
	"doorbell QP, busy (back to back)",
};

static int lat_run(struct mrc_qp *qp, uint32_t lkey, int mode, unsigned n, uint64_t *v)
{
	for (unsigned i = 0; i < n; i++) {
		if (mode == M_POLLED_PARKED || mode == M_DB_ASLEEP) {
			if (wait_sleeping(qp->sq.hdr))
				return -ETIMEDOUT;
			if (mode == M_POLLED_PARKED)
				bm_pause_us(5000);
		}
		int64_t t = post_pickup(qp, lkey, i);
		if (t < 0)
			return -EIO;
		v[i] = (uint64_t)t;
	}
	return 0;
}

static void part1(struct bm_mrcd *d)
{
	struct mrc_ctx *ctx;
	struct mrc_mr *mr;
	struct mrc_qp *pq, *dq;
	struct mrc_qp_cfg pc = { .sq_entries = 256, .flags = MRC_QP_POLLED };
	if (mrc_open(d->sock, &ctx) || mrc_alloc_mr(ctx, 4096, MRC_MR_LOCAL_READ, &mr) ||
	    mrc_create_qp(ctx, &pc, &pq) || mrc_create_qp(ctx, NULL, &dq)) {
		printf("skipped: mrcd refused the setup\n\n");
		return;
	}
	uint32_t lkey = mrc_mr_key(mr);
	static const unsigned nsamp[M_N] = { 5000, 200, 2000, 5000 };
	printf("### 1. Post-to-pickup latency\n\n");
	printf("| mode | samples/run | p50 us | p99 us |\n|---|--:|--:|--:|\n");
	for (int m = 0; m < M_N; m++) {
		double p50[MAXRUNS], p99[MAXRUNS];
		uint64_t *v = calloc(nsamp[m], sizeof(*v));
		struct mrc_qp *q = m <= M_POLLED_PARKED ? pq : dq;
		for (unsigned k = 0; k < runs; k++) {
			int r = lat_run(q, lkey, m, nsamp[m], v);
			if (r) {
				printf("| %s | failed: %s | | |\n", mode_name[m], mrc_strerror(r));
				free(v);
				goto out;
			}
			p50[k] = (double)bm_quantile(v, nsamp[m], 0.5, 0) / 1e3;
			p99[k] = (double)bm_quantile(v, nsamp[m], 0.99, 1) / 1e3;
		}
		char a[96], b[96];
		printf("| %s | %u | %s | %s |\n", mode_name[m], nsamp[m],
		       bm_spread(a, sizeof(a), p50, (int)runs, "%.1f"),
		       bm_spread(b, sizeof(b), p99, (int)runs, "%.1f"));
		fflush(stdout);
		free(v);
	}
out:
	printf("\n");
	mrc_close(ctx);
}

/* The daemon's CPU share (percent of one core) over CPU_INTERVAL_MS. */
static double idle_cpu(pid_t pid)
{
	double c0 = bm_cpu_s(pid);
	uint64_t t0 = bm_now_ns();
	bm_pause_us(CPU_INTERVAL_MS * 1000);
	double c1 = bm_cpu_s(pid);
	return 100.0 * (c1 - c0) / ((double)(bm_now_ns() - t0) * 1e-9);
}

static int all_parked(struct mrc_qp **q, int n)
{
	for (int i = 0; i < n; i++)
		if (wait_sleeping(q[i]->sq.hdr))
			return -ETIMEDOUT;
	return 0;
}

static void part2(struct bm_mrcd *d, const char *cfg)
{
	static const char *const name[] = { "no client", "1 doorbell QP (armed)",
					    "1 parked polled QP", "1,000 parked polled QPs" };
	double cpu[4][MAXRUNS];
	static struct mrc_qp *idle[N_IDLE];
	struct mrc_ctx *ctx = NULL;
	struct mrc_qp *dq;
	int rows = 4;
	for (unsigned k = 0; k < runs; k++)
		cpu[0][k] = idle_cpu(d->pid);
	struct mrc_qp_cfg pc = { .sq_entries = 8, .cq_entries = 8, .flags = MRC_QP_POLLED };
	if (mrc_open(d->sock, &ctx) || mrc_create_qp(ctx, NULL, &dq)) {
		rows = 1;
		goto print;
	}
	wait_sleeping(dq->sq.hdr);
	for (unsigned k = 0; k < runs; k++)
		cpu[1][k] = idle_cpu(d->pid);
	for (int i = 0; i < N_IDLE; i++) {
		int r = mrc_create_qp(ctx, &pc, &idle[i]);
		if (r) {
			fprintf(stderr, "bench_poll: polled QP %d: %s: %s\n", i, mrc_strerror(r),
				mrc_last_error(ctx));
			rows = i ? 3 : 2;
			goto print;
		}
		if (i == 0) {
			if (all_parked(idle, 1)) {
				rows = 2;
				goto print;
			}
			for (unsigned k = 0; k < runs; k++)
				cpu[2][k] = idle_cpu(d->pid);
		}
	}
	if (all_parked(idle, N_IDLE)) {
		rows = 3;
		goto print;
	}
	for (unsigned k = 0; k < runs; k++)
		cpu[3][k] = idle_cpu(d->pid);
print:
	printf("### 2. Idle daemon CPU, %s\n\n", cfg);
	printf("utime + stime of mrcd from /proc/PID/stat over %d ms, percent of one core.\n\n",
	       CPU_INTERVAL_MS);
	printf("| idle daemon with | CPU %% |\n|---|--:|\n");
	for (int i = 0; i < rows; i++) {
		char a[96];
		printf("| %s | %s |\n", name[i], bm_spread(a, sizeof(a), cpu[i], (int)runs, "%.2f"));
	}
	printf("\n");
	if (ctx)
		mrc_close(ctx);
}

int main(void)
{
	const char *e = getenv("MRC_BENCH_RUNS");
	if (e && atoi(e) > 0)
		runs = (unsigned)atoi(e) < MAXRUNS ? (unsigned)atoi(e) : MAXRUNS;
	char m[512];
	bm_machine(m, sizeof(m));
	printf("## bench_poll: adaptive polling of polled (GPU-fed) rings\n\n");
	printf("Machine: %s.  Medians of %u runs (min..max across runs).\n\n", m, runs);
	bm_raise_nofile(8192);
	struct bm_mrcd d;
	const char *extra[] = { "--client_max_qps=2048", "--uid_max_qps=4096", NULL };
	if (bm_mrcd_start(&d, extra)) {
		printf("skipped: mrcd did not start\n");
		return 0;
	}
	printf("Daemon defaults: gpu_park_us 1000, gpu_poll_min_us 10, gpu_poll_max_us 200.\n\n");
	part1(&d);
	part2(&d, "default gpu_poll_max_us 200");
	bm_mrcd_stop(&d);
	/* The same with a 5x longer bound on pickup latency: the trade-off. */
	const char *extra2[] = { "--client_max_qps=2048", "--uid_max_qps=4096",
				 "--gpu_poll_max_us=1000", NULL };
	if (bm_mrcd_start(&d, extra2)) {
		printf("skipped: mrcd did not start\n");
		return 0;
	}
	part2(&d, "gpu_poll_max_us 1000");
	bm_mrcd_stop(&d);
	return 0;
}
