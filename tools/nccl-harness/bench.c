/* mrc-nccl-harness -b: rank 0 -> rank 1 latency (round trip) and
 * throughput per message size, through the plugin or (-d) libmrc
 * directly (harness.h). */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <mrc/mrc.h>

#include "common/trace.h"
#include "tools/nccl-harness/harness.h"

const size_t nh_bsizes[NBS] = { 8, 4096, 65536, 1 << 20, 4 << 20 };

int nh_cmpd(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static unsigned lat_iters(size_t sz)
{
	return sz <= 65536 ? 200 : 40;
}
#define TPUT_MAX 2000

static uint64_t tput_msgs(size_t sz)
{
	uint64_t n = (256u << 20) / sz;
	return n > TPUT_MAX ? TPUT_MAX : n;
}


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
	NC(nh_net->isend(nh_scomm[ppeer][0], pbuf_s + (size_t)(ps_tail % WIN) * (4 << 20), sz, 1, pmh_s,
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
	NC(nh_net->irecv(nh_rcomm[ppeer][0], 1, data, sizes, tags, &pmh_r, NULL, req));
	pr_tail += *req != NULL;
	return *req != NULL;
}
static int p_poll(int *sends, int *recvs)
{
	*sends = *recvs = 0;
	int done = 1, sz[1];
	while (ps_head != ps_tail && done) {
		NC(nh_net->test(preq_s[ps_head % WIN], &done, sz));
		if (done)
			ps_head++, (*sends)++;
	}
	done = 1;
	while (pr_head != pr_tail && done) {
		NC(nh_net->test(preq_r[pr_head % WIN], &done, sz));
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
		nh_die("mrc_post_write_imm: %s", mrc_strerror(r));
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
		nh_die("mrc_poll_cq: %s", mrc_strerror(n));
	for (int i = 0; i < n; i++) {
		if (c[i].status)
			nh_die("%s: %s", mrc_cqe_op_name(c[i].op), mrc_strerror(c[i].status));
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
static void bt_wait(const struct nh_bt *t, int want_s, int want_r)
{
	int64_t end = ndrv_now_us() + 60 * 1000000ll;
	while (have_s < want_s || have_r < want_r) {
		int s, r;
		t->poll(&s, &r);
		have_s += s;
		have_r += r;
		if (ndrv_now_us() > end)
			nh_die("benchmark: completions missing after 60 s");
	}
	have_s -= want_s;
	have_r -= want_r;
}

void nh_run_bench(const struct nh_bt *t, const char *name)
{
	if (nh_rank == 0)
		printf("| transport | size | rtt median us | rtt p99 us | Gbit/s |\n|---|---|---|---|---|\n");
	for (size_t b = 0; b < NBS; b++) {
		size_t sz = nh_bsizes[b];
		if ((nh_onesize && sz != nh_onesize) || sz > nh_bench_max)
			continue;
		unsigned it = lat_iters(sz);
		double *rtt = calloc(it, sizeof(double));
		nh_barrier();
		for (unsigned i = 0; i < it + 10; i++) {
			int64_t t0 = ndrv_now_us();
			if (nh_rank == 0) {
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
		qsort(rtt, it, sizeof(double), nh_cmpd);
		double med = rtt[it / 2], p99 = rtt[it * 99 / 100];
		free(rtt);
		/* throughput: WIN messages in flight */
		uint64_t msgs = tput_msgs(sz);
		nh_barrier();
		int64_t t0 = ndrv_now_us();
		uint64_t posted = 0, done = 0;
		if (nh_rank == 0) {
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
		if (nh_rank == 0)
			printf("| %s | %zu | %.1f | %.1f | %.3f |\n", name, sz, med, p99,
			       (double)(msgs * sz) * 8 / sec / 1e9);
		fflush(stdout);
	}
}

void nh_bench_plugin(void)
{
	nh_check_props();
	nh_ncomms = 1;
	nh_make_comms(1);
	ppeer = 1 - nh_rank;
	size_t len = (size_t)WIN * (4 << 20);
	if (nh_memfd_bufs) {
		/* host buffers mrcd can map: the plugin sends from them in
		 * place (mrc_reg_mem), without the bounce copy */
		int fd = memfd_create("harness-bufs", MFD_CLOEXEC | MFD_ALLOW_SEALING);
		if (fd < 0 || ftruncate(fd, (off_t)(2 * len)) < 0)
			nh_die("memfd: %s", strerror(errno));
		uint8_t *m = mmap(NULL, 2 * len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (m == MAP_FAILED)
			nh_die("mmap: %s", strerror(errno));
		pbuf_s = m;
		pbuf_r = m + len;   /* fd stays open: regMr finds the file by it */
	} else {
		pbuf_s = malloc(len);
		pbuf_r = malloc(len);
	}
	memset(pbuf_s, 1, len);
	memset(pbuf_r, 0, len);
	NC(nh_net->regMr(nh_scomm[ppeer][0], pbuf_s, len, NCCL_PTR_HOST, &pmh_s));
	NC(nh_net->regMr(nh_rcomm[ppeer][0], pbuf_r, len, NCCL_PTR_HOST, &pmh_r));
	struct nh_bt t = { p_send, p_recv, p_poll };
	nh_run_bench(&t, "plugin");
	nh_barrier();
	nh_close_comms(1);
}

void nh_bench_direct(void)
{
	int r = mrc_open(NULL, &dctx);
	if (r)
		nh_die("mrc_open: %s", mrc_strerror(r));
	r = mrc_alloc_mr(dctx, (uint64_t)2 * WIN * (4 << 20), MRC_MR_ALL, &dmr);
	/* The sender's window counts its WRITE_IMMs acked, not polled by the
	 * receiver: a receiver descheduled on a loaded machine got every
	 * message of a size unpolled, past its 512-entry CQ and mrcd's
	 * backlog of as many (-EOVERFLOW, the sender waiting 60 s for the
	 * ack).  The CQ with that backlog (docs/client.md "Flow control")
	 * holds a whole size's messages and the ack; 1024 is mrcd's default
	 * ring_entries limit. */
	struct mrc_qp_cfg qc = { .cq_entries = 1024 };
	_Static_assert(TPUT_MAX + 1 <= 2 * 1024, "the direct QP's CQ and backlog hold a size's messages");
	if (!r)
		r = mrc_create_qp(dctx, &qc, &dqp);
	if (r)
		nh_die("setup: %s (%s)", mrc_strerror(r), mrc_last_error(dctx));
	struct mrc_ctx_info info;
	mrc_ctx_info(dctx, &info);
	uint32_t sid = 0x4d000000u + (uint32_t)getpid() % 100000, all[2 * MAXR];
	uint32_t mine[2] = { info.host, sid };
	nh_allgather(mine, all, sizeof(mine));
	struct mrc_qp_addr peer;
	if (nh_rank == 1) {
		if ((r = mrc_listen(dctx, sid, 1)))
			nh_die("mrc_listen: %s", mrc_strerror(r));
		nh_barrier();
		r = mrc_accept(dqp, sid, mrc_mr_key(dmr), 30000, &peer);
	} else {
		nh_barrier();
		r = mrc_connect(dqp, all[2], all[3], mrc_mr_key(dmr), &peer);
	}
	if (r)
		nh_die("connect: %s (%s)", mrc_strerror(r), mrc_last_error(dctx));
	drkey = peer.priv;
	struct nh_bt t = { d_send, d_recv, d_poll };
	nh_run_bench(&t, "libmrc");
	nh_barrier();
	mrc_close(dctx);
}
