/* Submission ring alone: post-to-pickup latency and throughput of the
 * ring ABI (include/mrc/ring.h), client to daemon on one machine.
 *
 * Part 1, the ABI alone: a producer thread and a consumer thread on one
 * SQ ring in ordinary memory, exactly the protocol of ring.h (release
 * publication of seq, acquire of tail, the sleeping word and an eventfd
 * doorbell with Dekker fences).  The consumer either busy-polls or sleeps
 * on the eventfd as soon as it finds the ring empty.  Threads are pinned
 * to different CPUs so that a busy poller never shares a core with the
 * thread it waits for.
 *   latency:    one descriptor at a time, a pause of GAP us between posts
 *               (long enough for a sleeping consumer to be in read());
 *               the producer stores its clock in wr_id just before the
 *               seq store, the consumer reads its clock right after the
 *               acquire: post-to-pickup in ns.
 *   throughput: the producer posts as fast as the ring lets it; descriptors
 *               per second from the first post to the last pickup, and how
 *               many doorbells that took.
 *
 * Part 2, through libmrc and a real mrcd on loopback (started here, see
 * bench_mrcd.h): one QP, unconnected, so every WRITE descriptor is picked
 * up, refused by the engine and completed with an error: the ring path
 * without network.  Pickup is seen as the daemon's release store of the
 * SQ tail (read through libmrc's internal ring state: a benchmark-only
 * peek), completion as the CQE.
 *   asleep:     a pause of GAP us before each post, so the daemon has
 *               armed its doorbells and sleeps in epoll: post, eventfd
 *               write, wake-up, poll.
 *   back to back: the next post right after the previous completion, so
 *               the daemon is still in its polling loop (classified by the
 *               sleeping word at post time).
 *   POLLED QP:  the same with MRC_QP_POLLED (no doorbell; the daemon
 *               parks the idle SQ and is woken through the notify page:
 *               bench_poll measures that path in detail).
 *   throughput: up to 256 descriptors outstanding, CQ drained as it goes.
 *
 * Prints markdown: medians over MRC_BENCH_RUNS runs (default 5) with
 * (min..max) across runs.  MRC_BENCH_RING_N: descriptors per latency run
 * (default 20000); throughput runs post 50x that. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <sys/eventfd.h>

#include "bench/bench_mrcd.h"
#include "lib/internal.h"
#include "mrc/mrc.h"
#include "mrc/ring.h"

#define ENTRIES 256u   /* libmrc's default SQ size */
#define GAP_US  50u
#define MAXRUNS 64

static unsigned runs = 5, nlat = 20000;

static void pin(int cpu)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	if (n < 2)
		return;
	cpu_set_t s;
	CPU_ZERO(&s);
	CPU_SET(cpu % n, &s);
	pthread_setaffinity_np(pthread_self(), sizeof(s), &s);
}

/* ---- part 1: the ABI alone -------------------------------------------- */

struct ring1 {
	struct mrc_ring_hdr *h;
	struct mrc_sqe *d;
	int efd;
	int sleepy;                 /* consumer sleeps on the doorbell */
	uint64_t n;                 /* descriptors this run */
	uint64_t *lat;              /* latency mode: pickup - post, per index */
	uint64_t t_last;            /* pickup time of the last one */
	uint64_t sleeps;            /* times the consumer blocked */
};

static void *consumer(void *arg)
{
	struct ring1 *r = arg;
	pin(1);
	uint64_t tail = 0, mask = ENTRIES - 1;
	while (tail < r->n) {
		struct mrc_sqe *s = &r->d[tail & mask];
		if (mrc_ring_seq_load(&s->seq) == (uint32_t)(tail + 1)) {
			uint64_t t = bm_now_ns();
			struct mrc_sqe c;
			memcpy(&c, s, sizeof(c));   /* the daemon's private copy */
			if (r->lat)
				r->lat[tail] = t - c.wr_id;
			tail++;
			mrc_ring_tail_store(r->h, tail);
			r->t_last = t;
			continue;
		}
		if (!r->sleepy) {
			bm_cpu_relax();
			continue;
		}
		if (mrc_ring_prepare_sleep(r->h, &s->seq, tail))
			continue;
		uint64_t v;
		r->sleeps++;
		if (read(r->efd, &v, sizeof(v)) < 0 && errno != EINTR)
			break;
		mrc_ring_wake_done(r->h);
	}
	return NULL;
}

/* One run; returns the descriptors/s (throughput) or 0. */
static double run1(int sleepy, int lat_mode, uint64_t n, uint64_t *lat, uint64_t *wakes,
		   uint64_t *sleeps)
{
	size_t bytes = mrc_ring_bytes(ENTRIES, sizeof(struct mrc_sqe));
	struct mrc_ring_hdr *h = aligned_alloc(64, bytes);
	memset(h, 0, bytes);
	mrc_ring_layout(h, MRC_RING_SQ, ENTRIES, sizeof(struct mrc_sqe), 0, 0, 0, 0);
	struct ring1 r = { .h = h, .d = (struct mrc_sqe *)(h + 1), .sleepy = sleepy, .n = n,
			   .lat = lat_mode ? lat : NULL };
	r.efd = eventfd(0, EFD_CLOEXEC);
	pthread_t th;
	pthread_create(&th, NULL, consumer, &r);
	pin(0);
	uint64_t limit = ENTRIES, t0 = 0;
	*wakes = 0;
	bm_pause_us(1000);   /* the consumer is running (and asleep, if sleepy) */
	for (uint64_t i = 0; i < n; i++) {
		if (lat_mode) {
			while (mrc_ring_tail_load(h) < i)
				bm_cpu_relax();
			bm_pause_us(GAP_US);
		}
		while (i >= limit) {
			limit = mrc_ring_tail_load(h) + ENTRIES;
			if (i >= limit)
				bm_cpu_relax();
		}
		struct mrc_sqe *s = &r.d[i & (ENTRIES - 1)];
		s->op = MRC_SQE_WRITE;
		s->lkey = 1;
		s->len = 64;
		s->loff = i * 64 % 4096;
		s->wr_id = bm_now_ns();
		if (i == 0)
			t0 = s->wr_id;
		mrc_ring_seq_publish(&s->seq, i);
		h->head = i + 1;
		if (mrc_ring_need_wake(h)) {
			uint64_t one = 1;
			(*wakes)++;
			if (write(r.efd, &one, sizeof(one)) < 0)
				break;
		}
	}
	pthread_join(th, NULL);
	*sleeps = r.sleeps;
	close(r.efd);
	free(h);
	return lat_mode ? 0 : (double)n / ((double)(r.t_last - t0) * 1e-9);
}

static void part1(void)
{
	uint64_t *lat = calloc(nlat, sizeof(*lat));
	printf("### 1. The ring ABI alone (two threads, pinned to CPUs 0 and 1)\n\n");
	printf("%u-entry SQ ring of 64-byte descriptors in ordinary memory; latency: %u "
	       "descriptors per run, one at a time with a %u us pause before each post; "
	       "throughput: %u descriptors per run, posted as fast as the ring allows.\n\n",
	       ENTRIES, nlat, GAP_US, nlat * 50);
	printf("| consumer | post-to-pickup p50 ns | p99 ns | p99.9 ns | descriptors/s "
	       "| doorbells per descriptor (throughput) |\n");
	printf("|---|--:|--:|--:|--:|--:|\n");
	for (int sleepy = 0; sleepy <= 1; sleepy++) {
		double p50[MAXRUNS], p99[MAXRUNS], p999[MAXRUNS], tput[MAXRUNS], db[MAXRUNS];
		for (unsigned k = 0; k < runs; k++) {
			uint64_t wakes, sleeps;
			run1(sleepy, 1, nlat, lat, &wakes, &sleeps);
			qsort(lat, nlat, sizeof(*lat), bm_cmp_u64);
			p50[k] = (double)bm_quantile(lat, nlat, 0.5, 1);
			p99[k] = (double)bm_quantile(lat, nlat, 0.99, 1);
			p999[k] = (double)bm_quantile(lat, nlat, 0.999, 1);
			uint64_t nt = (uint64_t)nlat * 50;
			tput[k] = run1(sleepy, 0, nt, NULL, &wakes, &sleeps);
			db[k] = (double)wakes / (double)nt;
		}
		char a[96], b[96], c[96], d[96], e[96];
		printf("| %s | %s | %s | %s | %s | %s |\n",
		       sleepy ? "sleeps on the eventfd when empty" : "busy-polls",
		       bm_spread(a, sizeof(a), p50, (int)runs, "%.0f"),
		       bm_spread(b, sizeof(b), p99, (int)runs, "%.0f"),
		       bm_spread(c, sizeof(c), p999, (int)runs, "%.0f"),
		       bm_spread(d, sizeof(d), tput, (int)runs, "%.3g"),
		       bm_spread(e, sizeof(e), db, (int)runs, "%.3f"));
		fflush(stdout);
	}
	printf("\n");
	free(lat);
}

/* ---- part 2: through libmrc and mrcd ---------------------------------- */

struct lat2 {
	uint64_t *pick, *comp;
	unsigned n, asleep;        /* samples; posts that found sleeping == 1 */
};

static int die2(const char *what, int r, struct mrc_ctx *ctx)
{
	fprintf(stderr, "bench_ring: %s: %s%s%s\n", what, mrc_strerror(r), ctx ? ": " : "",
		ctx ? mrc_last_error(ctx) : "");
	return r;
}

/* Waits for one completion (busy poll, bounded). */
static int get_cqe(struct mrc_qp *qp, uint64_t *t)
{
	struct mrc_completion c;
	uint64_t end = bm_now_ns() + 5000000000ull;
	for (;;) {
		int n = mrc_poll_cq(qp, &c, 1);
		if (n < 0)
			return n;
		if (n == 1) {
			*t = bm_now_ns();
			return 0;
		}
		if (bm_now_ns() > end)
			return -ETIMEDOUT;
		bm_cpu_relax();
	}
}

/* n round trips post -> pickup -> error completion; gap_us before each. */
static int lat_run(struct mrc_qp *qp, uint32_t lkey, unsigned gap_us, struct lat2 *L)
{
	struct mrc_ring_hdr *sqh = qp->sq.hdr;
	L->asleep = 0;
	for (unsigned i = 0; i < L->n; i++) {
		if (gap_us)
			bm_pause_us(gap_us);
		uint64_t idx = qp->sq.idx;
		L->asleep += __atomic_load_n(&sqh->sleeping, __ATOMIC_RELAXED) != 0;
		uint64_t t0 = bm_now_ns();
		int r = mrc_post_write(qp, i, lkey, 0, 64, 1, 0);
		if (r)
			return r;
		uint64_t end = t0 + 5000000000ull, t;
		while (mrc_ring_tail_load(sqh) <= idx) {
			bm_cpu_relax();
			if (bm_now_ns() > end)
				return -ETIMEDOUT;
		}
		L->pick[i] = bm_now_ns() - t0;
		if ((r = get_cqe(qp, &t)))
			return r;
		L->comp[i] = t - t0;
	}
	return 0;
}

/* Throughput: descriptors picked up (and completed) per second; *bells:
 * the share of posts that found the daemon asleep (each one an eventfd
 * write by libmrc and a wake-up of the daemon). */
static double tput_run(struct mrc_qp *qp, uint32_t lkey, uint64_t n, double *bells)
{
	struct mrc_completion c[64];
	struct mrc_ring_hdr *sqh = qp->sq.hdr;
	uint64_t posted = 0, done = 0, asleep = 0, t0 = bm_now_ns(), end = t0 + 30000000000ull;
	while (done < n) {
		while (posted < n && posted - done < ENTRIES) {
			int zz = __atomic_load_n(&sqh->sleeping, __ATOMIC_RELAXED) != 0;
			if (mrc_post_write(qp, posted, lkey, 0, 64, 1, 0))
				break;
			asleep += zz;
			posted++;
		}
		int k = mrc_poll_cq(qp, c, 64);
		if (k < 0)
			return -1;
		done += (uint64_t)k;
		if (bm_now_ns() > end)
			return -1;
	}
	*bells = (double)asleep / (double)n;
	return (double)n / ((double)(bm_now_ns() - t0) * 1e-9);
}

static void row2(const char *name, double *p50, double *p99, double *c50, double *c99,
		 double *asl, double *tput, double *bells)
{
	char a[96], b[96], c[96], d[96], e[96], f[240] = "", g[96];
	if (tput)
		snprintf(f, sizeof(f), "%s; asleep at post %s",
			 bm_spread(g, sizeof(g), tput, (int)runs, "%.3g"),
			 bm_spread(e, sizeof(e), bells, (int)runs, "%.2f"));
	printf("| %s | %s | %s | %s | %s | %s | %s |\n", name,
	       bm_spread(a, sizeof(a), p50, (int)runs, "%.1f"),
	       bm_spread(b, sizeof(b), p99, (int)runs, "%.1f"),
	       bm_spread(c, sizeof(c), c50, (int)runs, "%.1f"),
	       bm_spread(d, sizeof(d), c99, (int)runs, "%.1f"),
	       bm_spread(e, sizeof(e), asl, (int)runs, "%.2f"), f);
	fflush(stdout);
}

/* MRC_QP_POLLED: a producer that cannot ring (a GPU kernel) must be
 * served: the daemon parks the idle SQ and the post wakes it through the
 * notify page (ring.h "Polled rings").
 * Post with the daemon idle and see whether and when it picks up. */
static void polled(struct mrc_qp *qp, uint32_t lkey)
{
	const unsigned tries = 5;
	const uint64_t limit = 2000000000ull;
	unsigned got = 0;
	uint64_t worst = 0;
	struct mrc_ring_hdr *sqh = qp->sq.hdr;
	for (unsigned i = 0; i < tries; i++) {
		bm_pause_us(20000);   /* the daemon is certainly asleep */
		uint64_t idx = qp->sq.idx, t0 = bm_now_ns(), t = t0;
		if (mrc_post_write(qp, i, lkey, 0, 64, 1, 0))
			break;
		while (mrc_ring_tail_load(sqh) <= idx && (t = bm_now_ns()) - t0 < limit)
			bm_pause_us(10);
		if (mrc_ring_tail_load(sqh) > idx) {
			got++;
			worst = t - t0 > worst ? t - t0 : worst;
		}
		/* Whatever is still in the ring, let a doorbell-driven QP's
		 * activity or the end of the run take it; drain the CQ. */
		struct mrc_completion c[8];
		while (mrc_poll_cq(qp, c, 8) > 0)
			;
	}
	printf("MRC_QP_POLLED QP, one WRITE posted with the daemon idle, %u times: picked up "
	       "within %.1f s in %u of %u tries", tries, (double)limit / 1e9, got, tries);
	if (got)
		printf(" (slowest %.1f us)", (double)worst / 1e3);
	printf(".%s\n\n", got < tries ? "  **A post to a parked POLLED SQ was not picked up**: "
	       "the notify-page wake-up (ring.h \"Polled rings\", daemon/clients/clients.c "
	       "notify_scan) failed." : "");
	fflush(stdout);
}

static int part2(void)
{
	struct bm_mrcd d;
	if (bm_mrcd_start(&d, NULL)) {
		printf("### 2. Through libmrc and mrcd\n\nskipped: mrcd did not start\n\n");
		return 0;
	}
	struct mrc_ctx *ctx;
	struct mrc_mr *mr;
	struct mrc_qp *qp[2];
	int r;
	if ((r = mrc_open(d.sock, &ctx)))
		return bm_mrcd_stop(&d), die2("mrc_open", r, NULL);
	if ((r = mrc_alloc_mr(ctx, 4096, MRC_MR_LOCAL_READ, &mr)))
		return bm_mrcd_stop(&d), die2("mrc_alloc_mr", r, ctx);
	/* The POLLED QP is created only for its own test: while one is
	 * active the daemon polls without sleeping, and while it is parked
	 * a timer wakes the daemon, either of which on a shared 2-core
	 * machine would disturb the other measurements. */
	struct mrc_qp_cfg cfg0 = { .sq_entries = ENTRIES, .cq_entries = 2 * ENTRIES };
	if ((r = mrc_create_qp(ctx, &cfg0, &qp[0])))
		return bm_mrcd_stop(&d), die2("mrc_create_qp", r, ctx);
	uint32_t lkey = mrc_mr_key(mr);
	unsigned n = nlat / 4 ? nlat / 4 : 1;
	struct lat2 L = { .pick = calloc(n, 8), .comp = calloc(n, 8), .n = n };
	printf("### 2. Through libmrc and a real mrcd on loopback\n\n");
	printf("One unconnected QP (%u-entry SQ, %u-entry CQ): each 64-byte WRITE is picked up "
	       "by the daemon, refused by the engine (not connected) and completed with an "
	       "error, so this is the ring path and the daemon's loop without any network.  "
	       "Pickup = the daemon's store of the SQ tail seen by the client; completion = "
	       "the error CQE seen by the client (busy-polling).  %u round trips per run; "
	       "\"asleep at post\" is the share of posts that found the SQ's sleeping word "
	       "set (so libmrc wrote the eventfd).  Daemon pid %d.\n\n",
	       ENTRIES, 2 * ENTRIES, n, (int)d.pid);
	printf("| mode | post-to-pickup p50 us | p99 us | post-to-completion p50 us | p99 us "
	       "| asleep at post | descriptors/s (256 outstanding) |\n");
	printf("|---|--:|--:|--:|--:|--:|--:|\n");
	static const struct { const char *name; int polled; unsigned gap; } modes[] = {
		{ "daemon asleep (50 us pause before each post: eventfd doorbell)", 0, GAP_US },
		{ "back to back (next post right after the completion)", 0, 0 },
	};
	for (unsigned m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
		double p50[MAXRUNS], p99[MAXRUNS], c50[MAXRUNS], c99[MAXRUNS], asl[MAXRUNS],
			tp[MAXRUNS], bl[MAXRUNS];
		struct mrc_qp *q = qp[modes[m].polled];
		for (unsigned k = 0; k < runs; k++) {
			if ((r = lat_run(q, lkey, modes[m].gap, &L))) {
				printf("| %s | failed: %s | | | | | |\n", modes[m].name, mrc_strerror(r));
				goto out;
			}
			p50[k] = (double)bm_quantile(L.pick, n, 0.5, 0) / 1e3;
			p99[k] = (double)bm_quantile(L.pick, n, 0.99, 1) / 1e3;
			c50[k] = (double)bm_quantile(L.comp, n, 0.5, 0) / 1e3;
			c99[k] = (double)bm_quantile(L.comp, n, 0.99, 1) / 1e3;
			asl[k] = (double)L.asleep / n;
			tp[k] = m == 1 ? tput_run(q, lkey, (uint64_t)nlat * 10, &bl[k]) : 0;
		}
		row2(modes[m].name, p50, p99, c50, c99, asl, m == 1 ? tp : NULL, bl);
	}
	printf("\n");
	struct mrc_qp_cfg cfg1 = { .sq_entries = ENTRIES, .cq_entries = 2 * ENTRIES,
				   .flags = MRC_QP_POLLED };
	if ((r = mrc_create_qp(ctx, &cfg1, &qp[1])))
		return bm_mrcd_stop(&d), die2("mrc_create_qp", r, ctx);
	polled(qp[1], lkey);
out:
	mrc_close(ctx);
	bm_mrcd_stop(&d);
	free(L.pick);
	free(L.comp);
	return 0;
}


/* ---- part 3: real WRITEs through mrcd vs the kernel's UDP alone ------- */

/* What the datapath alone can do here: 64-byte UDP datagrams on loopback,
 * sendmmsg batches of 32 from this thread to a receiving thread
 * (recvmmsg), delivered datagrams per second.  mrcd's udp datapath is
 * these same syscalls, so this is the ceiling a daemon on this machine
 * can approach (it also has to receive its own ACKs). */
#include <netinet/in.h>
#include <sys/socket.h>

#define UDP_BATCH 32

struct udp_rx {
	int fd;
	uint64_t want, got, t_last;
	uint64_t cpu_ns;            /* the receiving thread's CPU time */
};

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* A process's user + system CPU time in ns (/proc/PID/stat). */
static uint64_t proc_cpu_ns(pid_t pid)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	char *p = strrchr(buf, ')');
	unsigned long long ut = 0, st = 0;
	/* after the name: state, then fields 4..13, then utime stime */
	if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
			 &ut, &st) != 2)
		return 0;
	return (ut + st) * (1000000000ull / (uint64_t)sysconf(_SC_CLK_TCK));
}

static void *udp_rx_thread(void *arg)
{
	struct udp_rx *u = arg;
	pin(1);
	uint64_t c0 = thread_cpu_ns();
	char buf[UDP_BATCH][64];
	struct iovec iov[UDP_BATCH];
	struct mmsghdr m[UDP_BATCH];
	for (int i = 0; i < UDP_BATCH; i++) {
		iov[i] = (struct iovec){ buf[i], sizeof(buf[i]) };
		m[i] = (struct mmsghdr){ .msg_hdr = { .msg_iov = &iov[i], .msg_iovlen = 1 } };
	}
	while (u->got < u->want) {
		int k = recvmmsg(u->fd, m, UDP_BATCH, 0, NULL);
		if (k < 0) {
			if (errno == EINTR)
				continue;
			break;   /* timeout: losses; the rate is what arrived */
		}
		u->got += (uint64_t)k;
		u->t_last = bm_now_ns();
	}
	u->cpu_ns = thread_cpu_ns() - c0;
	return NULL;
}

/* *cpu: send and receive CPU ns per delivered datagram. */
static double udp_rate(uint64_t n, double *cpu)
{
	/* As mrcd's udp datapath sends: IPv6, one unconnected socket, the
	 * destination in each message. */
	int rx = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	int tx = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in6 a = { .sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT };
	socklen_t al = sizeof(a);
	int big = 4 << 20;
	struct timeval tv = { .tv_sec = 0, .tv_usec = 200000 };
	setsockopt(rx, SOL_SOCKET, SO_RCVBUF, &big, sizeof(big));
	setsockopt(rx, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (rx < 0 || tx < 0 || bind(rx, (struct sockaddr *)&a, sizeof(a)) ||
	    getsockname(rx, (struct sockaddr *)&a, &al)) {
		close(rx), close(tx);
		return 0;
	}
	struct udp_rx u = { .fd = rx, .want = n };
	pthread_t th;
	pthread_create(&th, NULL, udp_rx_thread, &u);
	pin(0);
	char buf[64] = { 0 };
	struct iovec iov = { buf, sizeof(buf) };
	struct mmsghdr m[UDP_BATCH];
	for (int i = 0; i < UDP_BATCH; i++)
		m[i] = (struct mmsghdr){ .msg_hdr = { .msg_name = &a, .msg_namelen = sizeof(a),
						      .msg_iov = &iov, .msg_iovlen = 1 } };
	uint64_t t0 = bm_now_ns(), c0 = thread_cpu_ns();
	for (uint64_t sent = 0; sent < n;) {
		int k = sendmmsg(tx, m, UDP_BATCH, 0);
		if (k > 0)
			sent += (uint64_t)k;
		else if (k < 0 && errno != EAGAIN && errno != ENOBUFS && errno != EINTR)
			break;
	}
	uint64_t ctx_ns = thread_cpu_ns() - c0;
	pthread_join(th, NULL);
	close(rx), close(tx);
	*cpu = u.got ? (double)(ctx_ns + u.cpu_ns) / (double)u.got : 0;
	return u.got ? (double)u.got / ((double)(u.t_last - t0) * 1e-9) : 0;
}

/* WRITEs of 64 bytes from QP a to QP b, both on this client and this
 * mrcd (loopback: each one a data datagram out and in, and the ACKs):
 * up to 256 outstanding, send completions counted. */
/* *cpu: the daemon's CPU ns per WRITE. */
static double write_rate(struct mrc_qp *a, uint32_t lkey, uint32_t rkey, uint64_t n,
			 double *bells, pid_t daemon, double *cpu)
{
	uint64_t c0 = proc_cpu_ns(daemon);
	*cpu = 0;
	struct mrc_completion c[64];
	struct mrc_ring_hdr *sqh = a->sq.hdr;
	uint64_t posted = 0, done = 0, asleep = 0, t0 = bm_now_ns(), end = t0 + 30000000000ull;
	while (done < n) {
		while (posted < n && posted - done < ENTRIES) {
			int zz = __atomic_load_n(&sqh->sleeping, __ATOMIC_RELAXED) != 0;
			if (mrc_post_write(a, posted, lkey, posted * 64 % 4096, 64, rkey,
					   posted * 64 % 4096))
				break;
			asleep += zz;
			posted++;
		}
		int k = mrc_poll_cq(a, c, 64);
		if (k < 0)
			return -1;
		for (int i = 0; i < k; i++)
			if (c[i].status)
				return -1;
		done += (uint64_t)k;
		if (bm_now_ns() > end)
			return -1;
	}
	*bells = (double)asleep / (double)n;
	double r = (double)n / ((double)(bm_now_ns() - t0) * 1e-9);
	*cpu = (double)(proc_cpu_ns(daemon) - c0) / (double)n;
	return r;
}

struct wside {
	struct bm_mrcd d;
	struct mrc_ctx *ctx;
	struct mrc_mr *mr;
	struct mrc_qp *a, *b;
	int up;
};

/* A loopback pair of QPs on a fresh mrcd started with extra options. */
static int wside_open(struct wside *w, const char *const *extra)
{
	struct mrc_qp_addr la, lb;
	int r;
	if (bm_mrcd_start(&w->d, extra))
		return -ENOENT;
	struct mrc_qp_cfg cfg = { .sq_entries = ENTRIES, .cq_entries = 2 * ENTRIES };
	if ((r = mrc_open(w->d.sock, &w->ctx)))
		return bm_mrcd_stop(&w->d), die2("mrc_open", r, NULL);
	if ((r = mrc_alloc_mr(w->ctx, 4096, MRC_MR_LOCAL_READ | MRC_MR_REMOTE_WRITE, &w->mr)) ||
	    (r = mrc_create_qp(w->ctx, &cfg, &w->a)) || (r = mrc_create_qp(w->ctx, &cfg, &w->b)) ||
	    (r = mrc_qp_info_get(w->a, &la)) || (r = mrc_qp_info_get(w->b, &lb)) ||
	    (r = mrc_connect_oob(w->a, &lb)) || (r = mrc_connect_oob(w->b, &la))) {
		die2("setup", r, w->ctx);
		mrc_close(w->ctx);
		bm_mrcd_stop(&w->d);
		return r;
	}
	w->up = 1;
	return 0;
}

static void wside_close(struct wside *w)
{
	if (!w->up)
		return;
	mrc_close(w->ctx);
	bm_mrcd_stop(&w->d);
}

static int part3(void)
{
	printf("### 3. 64-byte WRITEs through mrcd vs 64-byte UDP datagrams alone\n\n");
	/* Both daemons up at once, so that the runs alternate. */
	/* bm_mrcd_start's port is per process: the second daemon another. */
	char port[32];
	snprintf(port, sizeof(port), "--port=%u", 40000 + (unsigned)((getpid() + 7919) % 20000));
	const char *const gso_on[] = { "--datapath_args=gso=on", port, NULL };
	struct wside w[2] = { 0 };
	if (wside_open(&w[0], NULL) || wside_open(&w[1], gso_on)) {
		printf("skipped: mrcd did not start\n\n");
		wside_close(&w[0]);
		return 0;
	}
	uint64_t n = (uint64_t)nlat * 10;
	double u[MAXRUNS], uc[MAXRUNS], wr[2][MAXRUNS], bl[2][MAXRUNS], ratio[2][MAXRUNS],
		wc[2][MAXRUNS];
	for (unsigned k = 0; k < runs; k++) {
		u[k] = udp_rate(n, &uc[k]);
		for (int j = 0; j < 2; j++) {
			uint32_t key = mrc_mr_key(w[j].mr);
			wr[j][k] = write_rate(w[j].a, key, key, n, &bl[j][k], w[j].d.pid, &wc[j][k]);
			ratio[j][k] = u[k] > 0 ? wr[j][k] / u[k] : 0;
		}
	}
	char x[96], y[96], z[96], q[96], cc[96];
	printf("%llu descriptors or datagrams per run, alternated; UDP: IPv6, sendmmsg batches "
	       "of %d to a receiving thread (recvmmsg), one datagram per message as mrcd's udp "
	       "datapath sends by default, datagrams delivered per second; mrcd: QP a WRITEs 64 "
	       "bytes to QP b on the same daemon (each a data datagram out and in, and the "
	       "ACKs), up to %u outstanding, send completions per second.  CPU: the "
	       "UDP sender's and receiver's thread CPU time per datagram delivered; the "
	       "daemon's user + system time (/proc, 10 ms ticks) per WRITE.  Daemons: pid %d "
	       "(defaults), pid %d (datapath_args gso=on).\n\n",
	       (unsigned long long)n, UDP_BATCH, ENTRIES, (int)w[0].d.pid, (int)w[1].d.pid);
	printf("| path | per second | ratio to UDP | CPU us per datagram or WRITE | asleep at post |\n"
	       "|---|--:|--:|--:|--:|\n");
	for (unsigned k = 0; k < runs; k++)
		uc[k] /= 1e3, wc[0][k] /= 1e3, wc[1][k] /= 1e3;
	printf("| 64-byte UDP datagrams | %s | 1 | %s | |\n", bm_spread(x, sizeof(x), u, (int)runs, "%.3g"),
	       bm_spread(cc, sizeof(cc), uc, (int)runs, "%.2f"));
	static const char *names[] = { "64-byte WRITEs through mrcd", "64-byte WRITEs through mrcd, gso=on" };
	for (int j = 0; j < 2; j++)
		printf("| %s | %s | %s | %s | %s |\n", names[j],
		       bm_spread(y, sizeof(y), wr[j], (int)runs, "%.3g"),
		       bm_spread(z, sizeof(z), ratio[j], (int)runs, "%.2f"),
		       bm_spread(cc, sizeof(cc), wc[j], (int)runs, "%.2f"),
		       bm_spread(q, sizeof(q), bl[j], (int)runs, "%.2f"));
	printf("\n");
	fflush(stdout);
	wside_close(&w[1]);
	wside_close(&w[0]);
	return 0;
}

int main(void)
{
	const char *e;
	if ((e = getenv("MRC_BENCH_RUNS")) && atoi(e) > 0)
		runs = (unsigned)atoi(e) < MAXRUNS ? (unsigned)atoi(e) : MAXRUNS;
	if ((e = getenv("MRC_BENCH_RING_N")) && atoi(e) > 0)
		nlat = (unsigned)atoi(e);
	char mach[256];
	bm_machine(mach, sizeof(mach));
	printf("## bench_ring: submission ring, client to daemon\n\n");
	printf("Machine: %s.  %u runs per row: median (min..max) across runs.\n\n", mach, runs);
	/* MRC_BENCH_RING_PART=1, 2 or 3 runs one part only (profiling). */
	const char *part = getenv("MRC_BENCH_RING_PART");
	if (!part || *part == '1')
		part1();
	if (!part || *part == '2')
		part2();
	if (!part || *part == '3')
		part3();
	return 0;
}
