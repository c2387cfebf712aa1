/* Posting through mrc/gpu.h from host threads vs libmrc's mrc_post_write,
 * into a real mrcd on loopback (started here, bench_mrcd.h).
 *
 * Every post is a 64-byte WRITE on a connected loopback QP (a polled QP
 * for both producers, so the daemon picks both up the same way; libmrc
 * also on a doorbell QP, its usual mode).  Completions are consumed as
 * they come (gpu.h: inside post/flush; libmrc: mrc_poll_cq).
 *   posts/s:  T producer threads (1 and 4), each on its own QP, post N
 *             WRITEs each as fast as back-pressure allows; total posts /
 *             time until the last completion.
 *   pickup:   one producer, one post at a time: time from just before the
 *             post until the daemon's release store of the SQ tail passes
 *             the post's index (read from the ring header), then the
 *             completion is awaited before the next post.  "idle daemon":
 *             a 50 us pause before each post; "busy daemon": another
 *             thread keeps a second QP saturated meanwhile.
 * Medians over MRC_BENCH_RUNS runs (default 5) with (min..max), and the
 * ratio gpu.h / libmrc (posts/s: > 1 is faster; latency: < 1 is faster).
 * The daemon's own CPU cost and parked pickup are bench_ring's. */
#include <pthread.h>
#include <sched.h>

#include "bench/bench_mrcd.h"
#include "mrc/gpu.h"
#include "mrc/mrc.h"

#define MAXRUNS 32
#define NT_MAX 4
#define LEN 64u
#define GAP_US 50u

static unsigned runs = 5, nposts = 50000, nlat = 2000;
static struct mrc_ctx *ctx;
static struct mrc_mr *mr;
static uint32_t key;

enum prod { P_GPU, P_LIB_POLLED, P_LIB_BELL, P_N };
static const char *const pname[P_N] = {
	"mrc/gpu.h producer, polled QP",
	"libmrc mrc_post_write, polled QP",
	"libmrc mrc_post_write, doorbell QP",
};

struct qp {
	struct mrc_qp *a, *b;
	struct mrc_gpu_chan ch;
	struct mrc_ring_hdr *sqh;
	enum prod p;
	uint64_t lib_out;          /* libmrc: posted - completed */
};

static int die(const char *what, int r)
{
	fprintf(stderr, "bench_gpu_post: %s: %s (%s)\n", what, mrc_strerror(r),
		ctx ? mrc_last_error(ctx) : "");
	exit(1);
}

static void qp_open(struct qp *q, enum prod p)
{
	memset(q, 0, sizeof(*q));
	q->p = p;
	struct mrc_qp_cfg cfg = { .sq_entries = 256, .cq_entries = 512,
				  .flags = p == P_LIB_BELL ? 0 : MRC_QP_POLLED };
	int r;
	if ((r = mrc_create_qp(ctx, &cfg, &q->a)) || (r = mrc_create_qp(ctx, NULL, &q->b)))
		die("mrc_create_qp", r);
	struct mrc_qp_addr la, lb;
	mrc_qp_info_get(q->a, &la);
	mrc_qp_info_get(q->b, &lb);
	if ((r = mrc_connect_oob(q->a, &lb)) || (r = mrc_connect_oob(q->b, &la)))
		die("mrc_connect_oob", r);
	struct mrc_qp_rings rg;
	mrc_qp_rings(q->a, &rg);
	q->sqh = rg.sq;
	if (p == P_GPU && (r = mrc_gpu_chan_init(q->a, 0, 0, &q->ch)))
		die("mrc_gpu_chan_init", r);
}

static void qp_close(struct qp *q)
{
	mrc_destroy_qp(q->a);
	mrc_destroy_qp(q->b);
}

/* libmrc: consume what completed; die on an error completion. */
static void lib_reap(struct qp *q)
{
	struct mrc_completion c[64];
	int n = mrc_poll_cq(q->a, c, 64);
	if (n < 0)
		die("mrc_poll_cq", n);
	for (int i = 0; i < n; i++)
		if (c[i].status)
			die("completion", c[i].status);
	q->lib_out -= (uint64_t)n;
}

/* One WRITE; spins (consuming completions) while the ring is full. */
static void post1(struct qp *q, uint64_t i)
{
	uint64_t off = (i % 64) * LEN;
	if (q->p == P_GPU) {
		int r = mrc_gpu_put(&q->ch, key, 4096 + off, key, off, LEN);
		if (r)
			die("mrc_gpu_put", r);
		return;
	}
	for (;;) {
		int r = mrc_post_write(q->a, i, key, off, LEN, key, 4096 + off);
		if (r == 0)
			break;
		if (r != -ENOSPC)
			die("mrc_post_write", r);
		lib_reap(q);
		sched_yield();
	}
	q->lib_out++;
	if (q->lib_out >= 256)
		lib_reap(q);
}

static void drain(struct qp *q)
{
	if (q->p == P_GPU) {
		int r = mrc_gpu_flush(&q->ch);
		if (r)
			die("mrc_gpu_flush", r);
		return;
	}
	while (q->lib_out) {
		lib_reap(q);
		if (q->lib_out)
			sched_yield();
	}
}

/* ---- posts/s ------------------------------------------------------------ */
struct tp_arg {
	struct qp *q;
	uint64_t n;
	pthread_barrier_t *go;
};

static void *tp_thread(void *arg)
{
	struct tp_arg *a = arg;
	pthread_barrier_wait(a->go);
	for (uint64_t i = 0; i < a->n; i++)
		post1(a->q, i);
	drain(a->q);
	return NULL;
}

static double tp_run(struct qp *qs, int nt)
{
	pthread_barrier_t go;
	pthread_barrier_init(&go, NULL, (unsigned)nt + 1);
	pthread_t th[NT_MAX];
	struct tp_arg a[NT_MAX];
	for (int t = 0; t < nt; t++) {
		a[t] = (struct tp_arg){ &qs[t], nposts, &go };
		pthread_create(&th[t], NULL, tp_thread, &a[t]);
	}
	pthread_barrier_wait(&go);
	uint64_t t0 = bm_now_ns();
	for (int t = 0; t < nt; t++)
		pthread_join(th[t], NULL);
	double s = (double)(bm_now_ns() - t0) / 1e9;
	pthread_barrier_destroy(&go);
	return (double)nposts * nt / s;
}

/* ---- pickup latency ------------------------------------------------------ */
static volatile int load_stop;

static void *loader(void *arg)
{
	struct qp *q = arg;
	for (uint64_t i = 0; !__atomic_load_n(&load_stop, __ATOMIC_RELAXED); i++)
		post1(q, i);
	drain(q);
	return NULL;
}

static void pause_us(unsigned us)
{
	uint64_t end = bm_now_ns() + us * 1000ull;
	while (bm_now_ns() < end)
		sched_yield();
}

/* p50 and p99 of post-to-pickup in us over nlat posts. */
static void lat_run(struct qp *q, int busy, double *p50, double *p99)
{
	static uint64_t v[100000];
	unsigned n = nlat < 100000 ? nlat : 100000;
	struct qp bg;
	pthread_t th;
	if (busy) {
		qp_open(&bg, q->p);
		load_stop = 0;
		pthread_create(&th, NULL, loader, &bg);
	}
	for (unsigned i = 0; i < n; i++) {
		if (!busy)
			pause_us(GAP_US);
		/* The index this post takes: the producer's next one. */
		uint64_t idx = q->p == P_GPU ? q->ch.sq_head : __atomic_load_n(&q->sqh->head, __ATOMIC_RELAXED);
		uint64_t t0 = bm_now_ns();
		post1(q, i);
		/* Spin, offering the CPU now and then (2-CPU machines). */
		for (unsigned k = 1; (int64_t)(mrc_ring_tail_load(q->sqh) - (idx + 1)) < 0; k++)
			if (!(k & 255))
				sched_yield();
		v[i] = bm_now_ns() - t0;
		drain(q);
	}
	if (busy) {
		__atomic_store_n(&load_stop, 1, __ATOMIC_RELAXED);
		pthread_join(th, NULL);
		qp_close(&bg);
	}
	*p50 = (double)bm_quantile(v, n, 0.5, 0) / 1e3;
	*p99 = (double)bm_quantile(v, n, 0.99, 1) / 1e3;
}

static double median(const double *v, unsigned n)
{
	double s[MAXRUNS];
	memcpy(s, v, n * sizeof(double));
	qsort(s, n, sizeof(double), bm_cmp_dbl);
	return s[n / 2];
}

int main(void)
{
	const char *e;
	if ((e = getenv("MRC_BENCH_RUNS")) && atoi(e) > 0)
		runs = (unsigned)atoi(e) < MAXRUNS ? (unsigned)atoi(e) : MAXRUNS;
	if ((e = getenv("MRC_BENCH_GPU_N")) && atoi(e) > 0)
		nposts = (unsigned)atoi(e);
	char mach[256], buf[3][96];
	bm_machine(mach, sizeof(mach));
	printf("## bench_gpu_post: posting from mrc/gpu.h host threads vs libmrc\n\n");
	printf("Machine: %s.  %u runs per row: median (min..max) across runs.  Each post is a "
	       "64-byte WRITE on a connected loopback QP (256-entry SQ, 512-entry CQ) of a "
	       "private mrcd; completions consumed as they come.\n\n", mach, runs);
	struct bm_mrcd d;
	if (bm_mrcd_start(&d, NULL)) {
		printf("skipped: mrcd did not start\n");
		return 0;
	}
	int r;
	if ((r = mrc_open(d.sock, &ctx)))
		die("mrc_open", r);
	if ((r = mrc_alloc_mr(ctx, 8192, MRC_MR_ALL, &mr)))
		die("mrc_alloc_mr", r);
	key = mrc_mr_key(mr);

	static const int nts[2] = { 1, NT_MAX };
	double tp[2][P_N][MAXRUNS];
	printf("### Posts per second (%u posts per thread per run)\n\n", nposts);
	printf("| threads x QPs | producer | posts/s | gpu.h / this |\n|--:|---|--:|--:|\n");
	for (int k = 0; k < 2; k++) {
		for (int p = 0; p < P_N; p++) {
			struct qp qs[NT_MAX];
			for (int t = 0; t < nts[k]; t++)
				qp_open(&qs[t], (enum prod)p);
			for (unsigned i = 0; i < runs; i++)
				tp[k][p][i] = tp_run(qs, nts[k]);
			for (int t = 0; t < nts[k]; t++)
				qp_close(&qs[t]);
		}
		for (int p = 0; p < P_N; p++) {
			double ratio[MAXRUNS];
			for (unsigned i = 0; i < runs; i++)
				ratio[i] = tp[k][P_GPU][i] / tp[k][p][i];
			printf("| %d | %s | %s | %s |\n", nts[k], pname[p],
			       bm_spread(buf[0], sizeof(buf[0]), tp[k][p], (int)runs, "%.3g"),
			       p == P_GPU ? "1" : bm_spread(buf[1], sizeof(buf[1]), ratio, (int)runs, "%.2f"));
		}
	}
	printf("\n### Post-to-pickup latency (%u posts per run, one at a time)\n\n", nlat);
	printf("Pickup: the daemon's SQ tail passes the post's index.  Idle daemon: %u us pause "
	       "before each post.  Busy daemon: a second QP of the same kind kept saturated by "
	       "another thread.\n\n", GAP_US);
	printf("| daemon | producer | p50 us | p99 us | p50 gpu.h / this |\n|---|---|--:|--:|--:|\n");
	for (int busy = 0; busy < 2; busy++) {
		double p50[P_N][MAXRUNS], p99[P_N][MAXRUNS];
		for (int p = 0; p < P_N; p++) {
			struct qp q;
			qp_open(&q, (enum prod)p);
			for (unsigned i = 0; i < runs; i++)
				lat_run(&q, busy, &p50[p][i], &p99[p][i]);
			qp_close(&q);
		}
		for (int p = 0; p < P_N; p++) {
			double ratio[MAXRUNS];
			for (unsigned i = 0; i < runs; i++)
				ratio[i] = p50[P_GPU][i] / p50[p][i];
			printf("| %s | %s | %s | %s | %s |\n", busy ? "busy" : "idle", pname[p],
			       bm_spread(buf[0], sizeof(buf[0]), p50[p], (int)runs, "%.2f"),
			       bm_spread(buf[1], sizeof(buf[1]), p99[p], (int)runs, "%.2f"),
			       p == P_GPU ? "1" : bm_spread(buf[2], sizeof(buf[2]), ratio, (int)runs, "%.2f"));
		}
	}
	printf("\nMedians: gpu.h vs libmrc (polled QP) posts/s ratio, 1 thread %.2f, %d threads "
	       "%.2f.\n", median(tp[0][P_GPU], runs) / median(tp[0][P_LIB_POLLED], runs), NT_MAX,
	       median(tp[1][P_GPU], runs) / median(tp[1][P_LIB_POLLED], runs));
	mrc_close(ctx);
	bm_mrcd_stop(&d);
	return 0;
}
