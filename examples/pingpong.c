/* mrc_pingpong: round-trip latency of WRITE_WITH_IMM ping-pong.
 *
 *   host B:  mrc_pingpong [-S SOCK] [-s SIZE] [-n ITERS] [-i SID] server
 *   host A:  mrc_pingpong [-S SOCK] [-s SIZE] [-n ITERS] [-i SID] client HOST_B
 *
 * The client WRITEs SIZE bytes with an immediate into the server's
 * buffer; the server answers each immediate with the same WRITE back.
 * Completions are busy-polled (-w: sleep in mrc_wait instead).  Prints
 * the min, median, 99th percentile and max round trip.
 *
 * -L US: the scheduler slice this process asks for (Linux 6.12+: a woken
 * task with a shorter slice than the running one's preempts it), so a
 * -w waiter woken by its completion can preempt a busy CPU's task instead of
 * waiting out its slice; 0 (default): the kernel's.  mrcd does
 * the same with mrcd.conf sched_slice_us. */
#include <getopt.h>
#include <stdint.h>
#include <unistd.h>

#include "common/sched_slice.h"
#include "examples/common.h"

static const char *sock;
static uint64_t size = 8;
static unsigned iters = 10000, warmup = 100, sid = 7002;
static int sleepy;

/* Returns the next incoming WRITE_IMM's immediate, consuming the send
 * completions that come in between. */
static uint32_t next_imm(struct mrc_qp *qp, struct mrc_ctx *ctx, unsigned *sends)
{
	for (;;) {
		struct mrc_completion c;
		int n = mrc_poll_cq(qp, &c, 1);
		if (n < 0)
			ex_die("mrc_poll_cq", n, ctx);
		if (n == 0) {
			if (sleepy) {
				int r = mrc_wait(qp, 10000);
				if (r)
					ex_die("mrc_wait", r, ctx);
			}
			continue;
		}
		if (c.status)
			ex_die(mrc_cqe_op_name(c.op), c.status, NULL);
		if (c.op == MRC_CQE_RECV_WRITE_IMM)
			return c.imm;
		(*sends)--;
	}
}

static uint32_t qp_flags;   /* -t: MRC_QP_URGENT or MRC_QP_BULK */
static uint32_t slice_us;   /* -L */


static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static int run(int server, uint32_t host)
{
	struct mrc_ctx *ctx;
	struct mrc_mr *buf;
	struct mrc_qp *qp;
	struct mrc_qp_addr peer;
	int rc = slice_us ? mrc__sched_slice_set(slice_us) : 0;
	if (rc)
		fprintf(stderr, "mrc_pingpong: -L %u not applied: %s\n", slice_us, strerror(-rc));
	EX_CHECK(mrc_open(sock, &ctx), NULL);
	EX_CHECK(mrc_alloc_mr(ctx, size, MRC_MR_REMOTE_WRITE | MRC_MR_LOCAL_READ, &buf), ctx);
	EX_CHECK(mrc_create_qp(ctx, &(struct mrc_qp_cfg){ .flags = qp_flags }, &qp), ctx);
	ex_pair(ctx, qp, "mrc_pingpong", server, 1, host, sid, mrc_mr_key(buf), &peer);
	unsigned total = iters + warmup, sends = 0;
	double *rtt = calloc(iters, sizeof(double));
	for (unsigned i = 0; i < total; i++) {
		double t0 = ex_now();
		if (server) {
			uint32_t imm = next_imm(qp, ctx, &sends);
			EX_CHECK(mrc_post_write_imm(qp, i, mrc_mr_key(buf), 0, size, peer.priv, 0, imm), ctx);
			sends++;
		} else {
			EX_CHECK(mrc_post_write_imm(qp, i, mrc_mr_key(buf), 0, size, peer.priv, 0, i), ctx);
			sends++;
			uint32_t imm = next_imm(qp, ctx, &sends);
			if (imm != i) {
				fprintf(stderr, "mrc_pingpong: reply %u to ping %u\n", imm, i);
				return 1;
			}
			if (i >= warmup)
				rtt[i - warmup] = ex_now() - t0;
		}
	}
	while (sends)   /* the last send completions */
		if (ex_get(qp, ctx, 10000).op != MRC_CQE_RECV_WRITE_IMM)
			sends--;
	if (!server) {
		qsort(rtt, iters, sizeof(double), cmp);
		printf("mrc_pingpong: %u round trips of %llu bytes with host %u: min %.1f us, "
		       "median %.1f us, p99 %.1f us, max %.1f us\n", iters, (unsigned long long)size,
		       peer.host, rtt[0] * 1e6, rtt[iters / 2] * 1e6, rtt[iters * 99 / 100] * 1e6,
		       rtt[iters - 1] * 1e6);
	}
	free(rtt);
	mrc_close(ctx);
	return 0;
}

int main(int argc, char **argv)
{
	int o;
	while ((o = getopt(argc, argv, "S:s:n:i:t:L:wh")) != -1) {
		switch (o) {
		case 'S': sock = optarg; break;
		case 's': size = ex_size(optarg); break;
		case 'n': iters = ex_uint(optarg, "iterations"); break;
		case 'i': sid = ex_uint(optarg, "service id"); break;
		case 'w': sleepy = 1; break;
		case 'L': slice_us = ex_uint(optarg, "slice (us)"); break;
		case 't':   /* the QP's traffic class (mrc_qp_cfg.flags) */
			if (!strcmp(optarg, "urgent"))
				qp_flags = MRC_QP_URGENT;
			else if (!strcmp(optarg, "bulk"))
				qp_flags = MRC_QP_BULK;
			else
				goto usage;
			break;
		default: goto usage;
		}
	}
	if (!size || !iters)
		goto usage;
	uint32_t host = 0;
	int role = ex_role(argc, argv, optind, &host);
	if (role >= 0)
		return run(role, host);
usage:
	fprintf(stderr, "usage: mrc_pingpong [-S socket] [-s size] [-n iters] [-i sid] [-w] "
			"[-t urgent|bulk] [-L slice_us] server | client HOST\n");
	return 2;
}
