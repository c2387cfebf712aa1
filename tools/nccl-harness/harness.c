/* mrc-nccl-harness: drives libnccl-net-mrc.so as NCCL's proxy thread does,
 * across N processes (no MPI, no GPU).
 *
 *   mrc-nccl-harness -r RANK -n NRANKS -R RDV_SOCKET [-c COMMS] [-k ROUNDS]
 *                    [-s MAXSIZE] [-S SEED] [-p PLUGIN] [-P]
 *   mrc-nccl-harness -r RANK -n 2 -R RDV_SOCKET -b [-d]     (benchmark)
 *
 * Rank 0 binds the rendezvous Unix socket RDV_SOCKET (a path: it reaches
 * across network namespaces) and relays the 128-byte listen handles, as
 * NCCL's bootstrap does.  Then, with mrcd reached through $MRC_SOCKET:
 * load by NCCL's rules, init/devices/getProperties, COMMS send and recv
 * comms to every peer by non-blocking connect/accept loops, an unsupported
 * pointer type refused, an isend before its receive is posted (a NULL
 * request, retried, or an eager send at once), iflush, ROUNDS verified rounds of grouped tagged
 * receives larger than their sends (drive.h), receives until irecv returns
 * NULL, closes with operations in flight, then fresh comms and one more
 * verified round, finalize.  -P prints "progress N" after each round (the
 * root test injects faults on it).  Exit 0 only if everything held.
 *
 * -b: rank 0 -> rank 1 latency (round trip) and throughput per message
 * size through the plugin (any v11 plugin: -p NAME or a path); -z SIZE:
 * only that size (one of 8, 4096, 65536, 1 MiB, 4 MiB); -d: the same transfers through libmrc directly
 * (WRITE_IMM between registered regions, no copies), the baseline.
 * -T: the same transfers over a loopback TCP connection (TCP_NODELAY),
 * what NCCL's socket transport would use between the two ranks.
 * -m (with -b): the plugin's buffers come from a memfd, which its send
 * side registers in place (mrc_reg_mem) and sends from without a copy.
 * -M (alone): the cost of one bounce copy per message size (memcpy between
 * two host buffers, as the plugin does on each side). */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <mrc/mrc.h>

#include "common/trace.h"
#include "tools/nccl-harness/drive.h"

#define MAXR 16
#define MAXC 16

static int rank, nranks = 2, ncomms = 2, rounds = 20, progress, bench, direct, copycost, tcp;
static int memfd_bufs;                 /* -m: bench buffers from a memfd */
static size_t maxsize = 1 << 20, onesize, bench_max = SIZE_MAX;
static uint64_t seed;
static const char *rdv, *plugin = "mrc";
static int rfd[MAXR];                  /* rank 0: to each rank; others: rfd[0] */

static void die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "rank %d: FAIL: ", rank);
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, " (seed %llu)\n", (unsigned long long)seed);
	va_end(ap);
	exit(1);
}

static void logger(ncclDebugLogLevel lvl, unsigned long flags, const char *file, int line,
		   const char *fmt, ...)
{
	(void)flags;
	if (lvl > NCCL_LOG_WARN && !getenv("MRC_NCCL_DEBUG"))
		return;
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "rank %d %s:%d ", rank, file, line);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

/* ---- rendezvous ---------------------------------------------------------- */
static void xfer(int fd, void *buf, size_t len, int wr)
{
	uint8_t *p = buf;
	while (len) {
		ssize_t n = wr ? send(fd, p, len, MSG_NOSIGNAL) : recv(fd, p, len, 0);
		if (n <= 0)
			die("rendezvous %s: %s", wr ? "send" : "recv", n ? strerror(errno) : "closed");
		p += n;
		len -= (size_t)n;
	}
}

static void rdv_init(void)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", rdv);
	if (rank == 0) {
		int l = socket(AF_UNIX, SOCK_STREAM, 0);
		unlink(rdv);
		if (l < 0 || bind(l, (void *)&a, sizeof(a)) || listen(l, MAXR))
			die("rendezvous %s: %s", rdv, strerror(errno));
		for (int i = 1; i < nranks; i++) {
			struct pollfd p = { .fd = l, .events = POLLIN };
			if (poll(&p, 1, 60000) != 1)
				die("rendezvous: only %d of %d ranks came", i, nranks);
			int fd = accept(l, NULL, NULL), r = -1;
			if (fd < 0)
				die("accept: %s", strerror(errno));
			xfer(fd, &r, sizeof(r), 0);
			if (r <= 0 || r >= nranks || rfd[r])
				die("rendezvous: bad rank %d", r);
			rfd[r] = fd;
		}
		close(l);
		unlink(rdv);
		return;
	}
	int64_t end = ndrv_now_us() + 60 * 1000000ll;
	for (;;) {
		int fd = socket(AF_UNIX, SOCK_STREAM, 0);
		if (fd >= 0 && connect(fd, (void *)&a, sizeof(a)) == 0) {
			rfd[0] = fd;
			break;
		}
		close(fd);
		if (ndrv_now_us() > end)
			die("rendezvous %s: rank 0 not there", rdv);
		poll(NULL, 0, 20);      /* retry until rank 0 has bound */
	}
	xfer(rfd[0], &rank, sizeof(rank), 1);
}

/* all[r * len ...] = rank r's mine. */
static void allgather(const void *mine, void *all, size_t len)
{
	memcpy((uint8_t *)all + (size_t)rank * len, mine, len);
	if (rank) {
		xfer(rfd[0], (void *)mine, len, 1);
		xfer(rfd[0], all, len * (size_t)nranks, 0);
		return;
	}
	for (int r = 1; r < nranks; r++)
		xfer(rfd[r], (uint8_t *)all + (size_t)r * len, len, 0);
	for (int r = 1; r < nranks; r++)
		xfer(rfd[r], all, len * (size_t)nranks, 1);
}

static void barrier(void)
{
	uint8_t x = 1, all[MAXR];
	allgather(&x, all, 1);
}

/* ---- comms --------------------------------------------------------------- */
static struct ndrv drv;
static const ncclNet_v11_t *net;
static void *nctx;
static void *lcomm[MAXR][MAXC], *scomm[MAXR][MAXC], *rcomm[MAXR][MAXC];
static struct ndrv_stats st;
static uint64_t connect_null, accept_null;

#define NC(call) do { ncclResult_t r_ = (call); if (r_ != ncclSuccess) die("%s: %d", #call, r_); } while (0)

static void make_comms(int nc)
{
	static uint8_t mine[MAXR][MAXC][NCCL_NET_HANDLE_MAXSIZE];
	static uint8_t all[MAXR][MAXR][MAXC][NCCL_NET_HANDLE_MAXSIZE];
	memset(mine, 0, sizeof(mine));
	for (int p = 0; p < nranks; p++)
		for (int k = 0; k < nc && p != rank; k++)
			NC(net->listen(nctx, 0, mine[p][k], &lcomm[p][k]));
	allgather(mine, all, sizeof(mine));
	int64_t end = ndrv_now_us() + 60 * 1000000ll;
	int left = 2 * (nranks - 1) * nc;
	while (left) {
		if (ndrv_now_us() > end)
			die("connect/accept: %d not done after 60 s", left);
		for (int p = 0; p < nranks; p++)
			for (int k = 0; k < nc && p != rank; k++) {
				ncclNetDeviceHandle_t *dev = NULL;
				if (!scomm[p][k]) {
					NC(net->connect(nctx, 0, all[p][rank][k], &scomm[p][k], &dev));
					if (scomm[p][k])
						left--;
					else
						connect_null++;
				}
				if (!rcomm[p][k]) {
					NC(net->accept(lcomm[p][k], &rcomm[p][k], &dev));
					if (rcomm[p][k])
						left--;
					else
						accept_null++;
				}
			}
	}
}

static void close_comms(int nc)
{
	for (int p = 0; p < nranks; p++)
		for (int k = 0; k < nc && p != rank; k++) {
			NC(net->closeSend(scomm[p][k]));
			NC(net->closeRecv(rcomm[p][k]));
			NC(net->closeListen(lcomm[p][k]));
			scomm[p][k] = rcomm[p][k] = lcomm[p][k] = NULL;
		}
}

static int links(struct ndrv_link *s, struct ndrv_link *r, int nc)
{
	int n = 0;
	for (int p = 0; p < nranks; p++)
		for (int k = 0; k < nc && p != rank; k++, n++) {
			s[n] = (struct ndrv_link){ rank, p, k, scomm[p][k] };
			r[n] = (struct ndrv_link){ p, rank, k, rcomm[p][k] };
		}
	return n;
}

/* Waits for one request (deadline 30 s). */
static void wait_req(void *req, int *sizes, const char *what)
{
	int64_t end = ndrv_now_us() + 30 * 1000000ll;
	for (int done = 0; !done;) {
		NC(net->test(req, &done, sizes));
		if (!done && ndrv_now_us() > end)
			die("%s: not done after 30 s", what);
	}
}

/* ---- the checks ---------------------------------------------------------- */
static int ptr_cuda;                    /* the plugin said NCCL_PTR_CUDA */

static void check_props(void)
{
	int ndev = 0;
	NC(net->devices(&ndev));
	if (ndev != 1 && !(bench && ndev > 1))
		die("devices: %d", ndev);
	ncclNetProperties_v11_t p;
	NC(net->getProperties(0, &p));
	if (bench) {
		/* Another plugin (the benchmark drives any): device 0, host
		 * memory, the sizes it takes; mrc's own properties are the
		 * checks' business. */
		if (!(p.ptrSupport & NCCL_PTR_HOST))
			die("properties: %s takes no host memory", p.name ? p.name : "?");
		if (rank == 0)
			printf("properties: %s (%d devices) speed %d Mbit/s maxRecvs %d "
			       "maxP2pBytes %zu\n", p.name ? p.name : "?", ndev, p.speed, p.maxRecvs,
			       p.maxP2pBytes);
		if (p.maxP2pBytes)
			bench_max = p.maxP2pBytes;
		return;
	}
	/* host always; CUDA too where the plugin found a device (docs/nccl.md) */
	ptr_cuda = (p.ptrSupport & NCCL_PTR_CUDA) != 0;
	if (!(p.ptrSupport & NCCL_PTR_HOST) || (p.ptrSupport & ~(NCCL_PTR_HOST | NCCL_PTR_CUDA)) ||
	    p.maxRecvs < 1 || p.speed <= 0 || p.maxComms < 1 ||
	    !p.maxP2pBytes || p.maxMultiRequestSize < 1 || !p.name)
		die("properties: ptrSupport %d maxRecvs %d speed %d maxComms %d", p.ptrSupport,
		    p.maxRecvs, p.speed, p.maxComms);
	if (maxsize > p.maxP2pBytes)
		maxsize = p.maxP2pBytes;
	if (rank == 0)
		printf("properties: %s speed %d Mbit/s maxComms %d maxRecvs %d maxP2pBytes %zu "
		       "pointers %s\n", p.name, p.speed, p.maxComms, p.maxRecvs, p.maxP2pBytes,
		       ptr_cuda ? "host+cuda" : "host");
}

static void check_refusals(void)
{
	static char buf[4096];
	void *mh = NULL;
	int p = (rank + 1) % nranks;
	/* (with a CUDA device the plugin takes CUDA pointers: not a refusal) */
	if (!ptr_cuda && net->regMr(scomm[p][0], buf, sizeof(buf), NCCL_PTR_CUDA, &mh) == ncclSuccess)
		die("regMr accepted NCCL_PTR_CUDA without a CUDA device");
	if (net->regMr(scomm[p][0], buf, sizeof(buf), 0x40, &mh) == ncclSuccess)
		die("regMr accepted pointer type 0x40");
	if (net->regMrDmaBuf(rcomm[p][0], buf, sizeof(buf), NCCL_PTR_CUDA, 0, 3, &mh) == ncclSuccess)
		die("regMrDmaBuf accepted a CUDA dma-buf");
}

/* An isend before the peer posted its receive gets a NULL request, or
 * (a small message, with the receiver's eager ring advertised) a request
 * at once; once posted, a retried isend goes through; iflush on host
 * memory. */
static void check_early_send(void)
{
	int next = (rank + 1) % nranks, prev = (rank + nranks - 1) % nranks;
	static uint8_t sbuf[1000], rbuf[2000];
	for (size_t i = 0; i < sizeof(sbuf); i++)
		sbuf[i] = (uint8_t)(i * 7 + (unsigned)rank);
	void *smh, *rmh, *sreq = NULL, *rreq = NULL, *freq = (void *)1;
	NC(net->regMr(scomm[next][0], sbuf, sizeof(sbuf), NCCL_PTR_HOST, &smh));
	NC(net->regMr(rcomm[prev][0], rbuf, sizeof(rbuf), NCCL_PTR_HOST, &rmh));
	NC(net->isend(scomm[next][0], sbuf, sizeof(sbuf), 424242, smh, NULL, &sreq));
	if (!sreq)
		st.isend_null++;
	barrier();
	void *data[1] = { rbuf };
	size_t sizes[1] = { sizeof(rbuf) };
	int tags[1] = { 424242 };
	int64_t end = ndrv_now_us() + 30 * 1000000ll;
	while (!rreq) {
		NC(net->irecv(rcomm[prev][0], 1, data, sizes, tags, &rmh, NULL, &rreq));
		if (ndrv_now_us() > end)
			die("irecv stays NULL");
	}
	while (!sreq) {
		NC(net->isend(scomm[next][0], sbuf, sizeof(sbuf), 424242, smh, NULL, &sreq));
		if (!sreq)
			st.isend_null++;
		if (ndrv_now_us() > end)
			die("isend stays NULL after the receive was posted");
	}
	int ssz = -1, rsz = -1;
	wait_req(sreq, &ssz, "early send");
	wait_req(rreq, &rsz, "receive of the early send");
	if (ssz != (int)sizeof(sbuf) || rsz != (int)sizeof(sbuf))
		die("sizes: sent %d received %d, want %zu", ssz, rsz, sizeof(sbuf));
	for (size_t i = 0; i < sizeof(sbuf); i++)
		if (rbuf[i] != (uint8_t)(i * 7 + (unsigned)prev))
			die("early send: byte %zu differs", i);
	int fsz[1] = { rsz };
	NC(net->iflush(rcomm[prev][0], 1, data, fsz, &rmh, &freq));
	if (freq)
		die("iflush on host memory returned a request");
	NC(net->deregMr(scomm[next][0], smh));
	NC(net->deregMr(rcomm[prev][0], rmh));
}

/* Receives are posted until irecv returns NULL; the peer sends half of
 * them; everything is closed with the rest still in flight. */
static void check_close_in_flight(void)
{
	int next = (rank + 1) % nranks, prev = (rank + nranks - 1) % nranks;
	static uint8_t rb[256][64], sb[64];
	void *rmh, *smh, *req;
	NC(net->regMr(rcomm[prev][0], rb, sizeof(rb), NCCL_PTR_HOST, &rmh));
	NC(net->regMr(scomm[next][0], sb, sizeof(sb), NCCL_PTR_HOST, &smh));
	int m = 0;
	for (; m < 256; m++) {
		void *data[1] = { rb[m] };
		size_t sizes[1] = { 64 };
		int tags[1] = { 7000 + m };
		NC(net->irecv(rcomm[prev][0], 1, data, sizes, tags, &rmh, NULL, &req));
		if (!req)
			break;
	}
	if (m == 256)
		die("irecv never returned NULL (256 receives posted)");
	st.irecv_null++;
	int counts[MAXR];
	allgather(&m, counts, sizeof(int));
	int sent = 0, want = counts[next] / 2;
	int64_t end = ndrv_now_us() + 30 * 1000000ll;
	while (sent < want) {
		NC(net->isend(scomm[next][0], sb, sizeof(sb), 7000 + sent, smh, NULL, &req));
		sent += req != NULL;
		if (ndrv_now_us() > end)
			die("in-flight sends: %d of %d posted", sent, want);
	}
	barrier();
	close_comms(ncomms);
	NC(net->deregMr(NULL, rmh));
	NC(net->deregMr(NULL, smh));
	if (rank == 0)
		printf("closed with operations in flight: %d receives posted before irecv returned NULL\n",
		       m);
}

static void run_checks(void)
{
	check_props();
	int64_t t0 = ndrv_now_us();
	make_comms(ncomms);
	if (rank == 0)
		printf("connected %d comms each way per peer in %.1f ms (connect NULL %llu, accept NULL %llu)\n",
		       ncomms, (ndrv_now_us() - t0) / 1e3, (unsigned long long)connect_null,
		       (unsigned long long)accept_null);
	check_refusals();
	check_early_send();
	struct ndrv_link s[MAXR * MAXC], r[MAXR * MAXC];
	int n = links(s, r, ncomms);
	char err[256];
	for (int k = 0; k < rounds; k++) {
		if (ndrv_round(net, s, n, r, n, seed, (uint64_t)k, maxsize, 8, 120000, &st, err,
			       sizeof(err)))
			die("%s", err);
		if (progress) {
			printf("progress %d\n", (k + 1) * 100 / rounds);
			fflush(stdout);
		}
	}
	barrier();
	check_close_in_flight();
	make_comms(1);
	n = links(s, r, 1);
	if (ndrv_round(net, s, n, r, n, seed, 1000, maxsize, 8, 60000, &st, err, sizeof(err)))
		die("after the closes: %s", err);
	barrier();
	close_comms(1);
	if (!st.grouped || !st.larger_recvs || !st.isend_null || !st.irecv_null)
		die("a behaviour was not exercised: grouped %llu larger %llu isend NULL %llu",
		    (unsigned long long)st.grouped, (unsigned long long)st.larger_recvs,
		    (unsigned long long)st.isend_null);
	printf("rank %d ok: %llu messages, %llu bytes verified; grouped receives %llu, larger receives %llu, "
	       "zero-byte %llu; NULL requests retried: isend %llu irecv %llu\n",
	       rank, (unsigned long long)st.msgs, (unsigned long long)st.bytes,
	       (unsigned long long)st.grouped, (unsigned long long)st.larger_recvs,
	       (unsigned long long)st.zero_msgs, (unsigned long long)st.isend_null,
	       (unsigned long long)st.irecv_null);
}

/* ---- benchmark ----------------------------------------------------------- */
static const size_t bsizes[] = { 8, 4096, 65536, 1 << 20, 4 << 20 };
#define NBS (sizeof(bsizes) / sizeof(bsizes[0]))
#define WIN 8

static int cmpd(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static unsigned lat_iters(size_t sz)
{
	return sz <= 65536 ? 200 : 40;
}
static uint64_t tput_msgs(size_t sz)
{
	uint64_t n = (256u << 20) / sz;
	return n > 2000 ? 2000 : n;
}

/* Transport abstraction of the benchmark: the plugin or libmrc. */
struct bt {
	int (*post_send)(size_t sz, int slot);  /* 1 posted, 0 retry */
	int (*post_recv)(size_t sz, int slot);
	int (*poll)(int *sends, int *recvs);    /* completions since last call */
};

/* plugin transport: requests kept in posting order and tested oldest
 * first, as NCCL's proxy tests its steps */
static uint8_t *pbuf_s, *pbuf_r;
static void *pmh_s, *pmh_r, *preq_s[WIN], *preq_r[WIN];
static unsigned ps_head, ps_tail, pr_head, pr_tail;
static int ppeer;
static int p_send(size_t sz, int slot)
{
	(void)slot;
	if (ps_tail - ps_head == WIN)
		return 0;
	void **req = &preq_s[ps_tail % WIN];
	NC(net->isend(scomm[ppeer][0], pbuf_s + (size_t)(ps_tail % WIN) * (4 << 20), sz, 1, pmh_s,
		      NULL, req));
	ps_tail += *req != NULL;
	return *req != NULL;
}
static int p_recv(size_t sz, int slot)
{
	(void)slot;
	if (pr_tail - pr_head == WIN)
		return 0;
	void *data[1] = { pbuf_r + (size_t)(pr_tail % WIN) * (4 << 20) };
	size_t sizes[1] = { sz };
	int tags[1] = { 1 };
	void **req = &preq_r[pr_tail % WIN];
	NC(net->irecv(rcomm[ppeer][0], 1, data, sizes, tags, &pmh_r, NULL, req));
	pr_tail += *req != NULL;
	return *req != NULL;
}
static int p_poll(int *sends, int *recvs)
{
	*sends = *recvs = 0;
	int done = 1, sz[1];
	while (ps_head != ps_tail && done) {
		NC(net->test(preq_s[ps_head % WIN], &done, sz));
		if (done)
			ps_head++, (*sends)++;
	}
	done = 1;
	while (pr_head != pr_tail && done) {
		NC(net->test(preq_r[pr_head % WIN], &done, sz));
		if (done)
			pr_head++, (*recvs)++;
	}
	if (!*sends && !*recvs)
		sched_yield();
	return 0;
}

/* libmrc transport: WRITE_IMM from a registered region into the peer's */
static struct mrc_ctx *dctx;
static struct mrc_qp *dqp;
static struct mrc_mr *dmr;
static uint32_t drkey;
static int d_send(size_t sz, int slot)
{
	int r = mrc_post_write_imm(dqp, (uint64_t)slot, mrc_mr_key(dmr), (uint64_t)slot * (4 << 20),
				   sz, drkey, (uint64_t)(WIN + slot) * (4 << 20), (uint32_t)slot);
	if (r == -ENOSPC)
		return 0;
	if (r)
		die("mrc_post_write_imm: %s", mrc_strerror(r));
	return 1;
}
static int d_recv(size_t sz, int slot)
{
	(void)sz;
	(void)slot;
	return 1;               /* WRITE_IMM needs no posted receive */
}
static int d_poll(int *sends, int *recvs)
{
	struct mrc_completion c[32];
	*sends = *recvs = 0;
	int n = mrc_poll_cq(dqp, c, 32);
	if (n < 0)
		die("mrc_poll_cq: %s", mrc_strerror(n));
	for (int i = 0; i < n; i++) {
		if (c[i].status)
			die("%s: %s", mrc_cqe_op_name(c[i].op), mrc_strerror(c[i].status));
		if (c[i].op == MRC_CQE_RECV_WRITE_IMM)
			(*recvs)++;
		else
			(*sends)++;
	}
	if (!n)
		sched_yield();
	return 0;
}

/* Waits for want_s send and want_r receive completions.  A completion
 * that comes early (the peer's next message before our send's completion)
 * is kept for the next wait, not lost. */
static int have_s, have_r;
static void bt_wait(const struct bt *t, int want_s, int want_r)
{
	int64_t end = ndrv_now_us() + 60 * 1000000ll;
	while (have_s < want_s || have_r < want_r) {
		int s, r;
		t->poll(&s, &r);
		have_s += s;
		have_r += r;
		if (ndrv_now_us() > end)
			die("benchmark: completions missing after 60 s");
	}
	have_s -= want_s;
	have_r -= want_r;
}

static void run_bench(const struct bt *t, const char *name)
{
	if (rank == 0)
		printf("| transport | size | rtt median us | rtt p99 us | Gbit/s |\n|---|---|---|---|---|\n");
	for (size_t b = 0; b < NBS; b++) {
		size_t sz = bsizes[b];
		if ((onesize && sz != onesize) || sz > bench_max)
			continue;
		unsigned it = lat_iters(sz);
		double *rtt = calloc(it, sizeof(double));
		barrier();
		for (unsigned i = 0; i < it + 10; i++) {
			int64_t t0 = ndrv_now_us();
			if (rank == 0) {
				while (!t->post_recv(sz, 1))
					;
				while (!t->post_send(sz, 0))
					;
				bt_wait(t, 1, 1);
			} else {
				while (!t->post_recv(sz, 0))
					;
				bt_wait(t, 0, 1);
				while (!t->post_send(sz, 1))
					;
				bt_wait(t, 1, 0);
			}
			if (i >= 10)
				rtt[i - 10] = (double)(ndrv_now_us() - t0);
			/* the timed window, for bench/trace.py --marks */
			if (i == 9)
				MRC_TRACE(MRC_TR_MARK, 0, sz, 1);
		}
		MRC_TRACE(MRC_TR_MARK, 0, sz, 2);
		qsort(rtt, it, sizeof(double), cmpd);
		double med = rtt[it / 2], p99 = rtt[it * 99 / 100];
		free(rtt);
		/* throughput: WIN messages in flight */
		uint64_t msgs = tput_msgs(sz);
		barrier();
		int64_t t0 = ndrv_now_us();
		uint64_t posted = 0, done = 0;
		if (rank == 0) {
			int inflight = 0;
			while (done < msgs) {
				while (posted < msgs && inflight < WIN &&
				       t->post_send(sz, (int)(posted % WIN)))
					posted++, inflight++;
				int s, r;
				t->poll(&s, &r);
				have_r += r;    /* the ack may come first */
				done += (uint64_t)s;
				inflight -= s;
			}
			while (!t->post_recv(8, 0))
				;
			bt_wait(t, 0, 1);       /* the receiver's ack */
		} else {
			int inflight = 0;
			while (done < msgs) {
				while (posted < msgs && inflight < WIN &&
				       t->post_recv(sz, (int)(posted % WIN)))
					posted++, inflight++;
				int s, r;
				t->poll(&s, &r);
				have_s += s;
				done += (uint64_t)r;
				inflight -= r;
			}
			while (!t->post_send(8, 0))
				;
			bt_wait(t, 1, 0);
		}
		double sec = (double)(ndrv_now_us() - t0) / 1e6;
		if (rank == 0)
			printf("| %s | %zu | %.1f | %.1f | %.3f |\n", name, sz, med, p99,
			       (double)(msgs * sz) * 8 / sec / 1e9);
		fflush(stdout);
	}
}

static void bench_plugin(void)
{
	check_props();
	ncomms = 1;
	make_comms(1);
	ppeer = 1 - rank;
	size_t len = (size_t)WIN * (4 << 20);
	if (memfd_bufs) {
		/* host buffers mrcd can map: the plugin sends from them in
		 * place (mrc_reg_mem), without the bounce copy */
		int fd = memfd_create("harness-bufs", MFD_CLOEXEC | MFD_ALLOW_SEALING);
		if (fd < 0 || ftruncate(fd, (off_t)(2 * len)) < 0)
			die("memfd: %s", strerror(errno));
		uint8_t *m = mmap(NULL, 2 * len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (m == MAP_FAILED)
			die("mmap: %s", strerror(errno));
		pbuf_s = m;
		pbuf_r = m + len;   /* fd stays open: regMr finds the file by it */
	} else {
		pbuf_s = malloc(len);
		pbuf_r = malloc(len);
	}
	memset(pbuf_s, 1, len);
	memset(pbuf_r, 0, len);
	NC(net->regMr(scomm[ppeer][0], pbuf_s, len, NCCL_PTR_HOST, &pmh_s));
	NC(net->regMr(rcomm[ppeer][0], pbuf_r, len, NCCL_PTR_HOST, &pmh_r));
	struct bt t = { p_send, p_recv, p_poll };
	run_bench(&t, "plugin");
	barrier();
	close_comms(1);
}

static void bench_direct(void)
{
	int r = mrc_open(NULL, &dctx);
	if (r)
		die("mrc_open: %s", mrc_strerror(r));
	r = mrc_alloc_mr(dctx, (uint64_t)2 * WIN * (4 << 20), MRC_MR_ALL, &dmr);
	if (!r)
		r = mrc_create_qp(dctx, NULL, &dqp);
	if (r)
		die("setup: %s (%s)", mrc_strerror(r), mrc_last_error(dctx));
	struct mrc_ctx_info info;
	mrc_ctx_info(dctx, &info);
	uint32_t sid = 0x4d000000u + (uint32_t)getpid() % 100000, all[2 * MAXR];
	uint32_t mine[2] = { info.host, sid };
	allgather(mine, all, sizeof(mine));
	struct mrc_qp_addr peer;
	if (rank == 1) {
		if ((r = mrc_listen(dctx, sid, 1)))
			die("mrc_listen: %s", mrc_strerror(r));
		barrier();
		r = mrc_accept(dqp, sid, mrc_mr_key(dmr), 30000, &peer);
	} else {
		barrier();
		r = mrc_connect(dqp, all[2], all[3], mrc_mr_key(dmr), &peer);
	}
	if (r)
		die("connect: %s (%s)", mrc_strerror(r), mrc_last_error(dctx));
	drkey = peer.priv;
	struct bt t = { d_send, d_recv, d_poll };
	run_bench(&t, "libmrc");
	barrier();
	mrc_close(dctx);
}

/* TCP transport: one loopback connection with TCP_NODELAY, what NCCL's
 * socket transport uses on one host; a send completes once written (as
 * there), a receive once all its bytes were read. */
static int tfd = -1;
static uint8_t *tbuf;
static size_t tq[2 * WIN], tgot;        /* posted receive sizes, bytes of the head */
static unsigned tq_head, tq_tail, tsent;
static int t_send(size_t sz, int slot)
{
	(void)slot;
	static uint8_t *src;
	if (!src && !(src = calloc(1, 4 << 20)))
		die("out of memory");
	for (size_t off = 0; off < sz;) {
		ssize_t n = send(tfd, src + off, sz - off, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			die("tcp send: %s", strerror(errno));
		off += (size_t)n;
	}
	tsent++;
	return 1;
}
static int t_recv(size_t sz, int slot)
{
	(void)slot;
	if (tq_tail - tq_head == 2 * WIN)
		return 0;
	tq[tq_tail++ % (2 * WIN)] = sz;
	return 1;
}
static int t_poll(int *sends, int *recvs)
{
	*sends = (int)tsent;
	tsent = 0;
	*recvs = 0;
	while (tq_head != tq_tail) {
		size_t want = tq[tq_head % (2 * WIN)];
		if (tgot < want) {
			ssize_t n = recv(tfd, tbuf, want - tgot, MSG_DONTWAIT);
			if (n < 0 && (errno == EAGAIN || errno == EINTR))
				break;
			if (n <= 0)
				die("tcp recv: %s", n ? strerror(errno) : "closed");
			tgot += (size_t)n;
		}
		if (tgot < want)
			break;
		tgot = 0;
		tq_head++;
		(*recvs)++;
	}
	if (!*sends && !*recvs)
		sched_yield();
	return 0;
}

static void bench_tcp(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof(a);
	uint16_t port = 0, ports[MAXR];
	int l = -1;
	if (!(tbuf = malloc(4 << 20)))
		die("out of memory");
	if (rank == 1) {
		l = socket(AF_INET, SOCK_STREAM, 0);
		if (l < 0 || bind(l, (void *)&a, sizeof(a)) || listen(l, 1) ||
		    getsockname(l, (void *)&a, &al))
			die("tcp listen: %s", strerror(errno));
		port = a.sin_port;
	}
	allgather(&port, ports, sizeof(port));
	if (rank == 1) {
		tfd = accept(l, NULL, NULL);
		close(l);
	} else {
		a.sin_port = ports[1];
		tfd = socket(AF_INET, SOCK_STREAM, 0);
		if (tfd >= 0 && connect(tfd, (void *)&a, sizeof(a)))
			die("tcp connect: %s", strerror(errno));
	}
	int one = 1;
	if (tfd < 0 || setsockopt(tfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)))
		die("tcp: %s", strerror(errno));
	struct bt t = { t_send, t_recv, t_poll };
	run_bench(&t, "tcp");
	barrier();
	close(tfd);
}

/* One bounce copy (the plugin makes one on each side of a message), with
 * the source and target of the size NCCL's buffers have. */
static void copy_cost(void)
{
	printf("| size | one copy us | copy GB/s |\n|---|---|---|\n");
	for (size_t b = 0; b < NBS; b++) {
		size_t sz = bsizes[b];
		uint8_t *src = malloc(sz * WIN), *dst = malloc(sz * WIN);
		memset(src, 1, sz * WIN);
		memset(dst, 0, sz * WIN);
		uint64_t n = (512u << 20) / sz;
		if (n > 200000)
			n = 200000;
		double t[5];
		for (int rep = 0; rep < 5; rep++) {
			int64_t t0 = ndrv_now_us();
			for (uint64_t i = 0; i < n; i++)
				memcpy(dst + (i % WIN) * sz, src + (i % WIN) * sz, sz);
			t[rep] = (double)(ndrv_now_us() - t0) / (double)n;
		}
		qsort(t, 5, sizeof(double), cmpd);
		printf("| %zu | %.3f | %.2f |\n", sz, t[2], (double)sz / t[2] / 1e3);
		if (dst[sz - 1] != 1)
			die("copy");
		free(src);
		free(dst);
	}
}

int main(int argc, char **argv)
{
	int c;
	setvbuf(stdout, NULL, _IOLBF, 0);
	seed = (uint64_t)ndrv_now_us();
	if (getenv("MRC_TEST_SEED"))
		seed = strtoull(getenv("MRC_TEST_SEED"), NULL, 0);
	if (getenv("NCCL_NET_PLUGIN"))
		plugin = getenv("NCCL_NET_PLUGIN");
	while ((c = getopt(argc, argv, "r:n:R:c:k:s:S:p:PbdMz:Tm")) != -1)
		switch (c) {
		case 'r': rank = atoi(optarg); break;
		case 'n': nranks = atoi(optarg); break;
		case 'R': rdv = optarg; break;
		case 'c': ncomms = atoi(optarg); break;
		case 'k': rounds = atoi(optarg); break;
		case 's': maxsize = strtoull(optarg, NULL, 0); break;
		case 'S': seed = strtoull(optarg, NULL, 0); break;
		case 'p': plugin = optarg; break;
		case 'P': progress = 1; break;
		case 'b': bench = 1; break;
		case 'd': direct = 1; break;
		case 'M': copycost = 1; break;
		case 'm': memfd_bufs = 1; break;
		case 'T': tcp = 1; break;
		case 'z': onesize = strtoull(optarg, NULL, 0); break;
		default:
			fprintf(stderr, "usage: see the header of tools/nccl-harness/harness.c\n");
			return 2;
		}
	if (copycost) {
		copy_cost();
		return 0;
	}
	if (!rdv || nranks < 2 || nranks > MAXR || rank < 0 || rank >= nranks || ncomms < 1 ||
	    ncomms > MAXC || rounds < 1 || ((bench || direct || tcp) && nranks != 2))
		die("bad arguments");
	rdv_init();
	/* every rank uses rank 0's seed */
	uint64_t seeds[MAXR];
	allgather(&seed, seeds, sizeof(seed));
	seed = seeds[0];
	if (rank == 0)
		printf("mrc-nccl-harness: %d ranks, seed %llu\n", nranks, (unsigned long long)seed);
	if (direct) {
		bench_direct();
		return 0;
	}
	if (tcp) {
		bench_tcp();
		return 0;
	}
	char err[512];
	if (ndrv_load(&drv, plugin, err, sizeof(err)))
		die("%s", err);
	net = drv.net;
	/* The benchmark drives any v11 plugin; the checks know mrc's. */
	if (!bench && strcmp(net->name, "mrc"))
		die("plugin name %s", net->name);
	if (rank == 0)
		printf("loaded %s: ncclNetPlugin_v11 \"%s\"%s%s%s\n", drv.path, net->name,
		       drv.v10 ? ", _v10" : "", drv.v9 ? ", _v9" : "", drv.v8 ? ", _v8" : "");
	ncclNetCommConfig_t cfg = { .trafficClass = -1 };
	NC(net->init(&nctx, 0x6d7263ull, &cfg, logger, NULL));
	if (bench)
		bench_plugin();
	else
		run_checks();
	barrier();
	NC(net->finalize(nctx));
	ndrv_unload(&drv);
	return 0;
}
