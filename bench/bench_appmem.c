/* A stream of WRITEs through a loopback mrcd from three kinds of source
 * (bench/results/appmem.md):
 *   alloc   an mrc_alloc_mr region (the data is already in libmrc's memory)
 *   appmem  the application's own buffer registered with mrc_reg_mem
 *           (posix_memalign'd, MRC_REG_MOVE): no copy per message
 *   bounce  the application's buffer copied into a bounce region before
 *           each WRITE, as the NCCL plugin's isend does (nccl/send.c)
 * Two clients of one mrcd (client 0 sends, client 1's region receives),
 * W messages of S bytes in flight.  Also the one-time cost of
 * mrc_reg_mem with MRC_REG_MOVE (a copy of the buffer) and without (the
 * same buffer registered again).
 *
 * usage: bench_appmem [total_MiB (256)] [runs (5)] */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench_mrcd.h"
#include "mrc/mrc.h"

#define BUF_LEN ((uint64_t)64 << 20)   /* the application's data */
#define WINDOW 16

enum { M_ALLOC, M_APPMEM, M_BOUNCE, M_N };
static const char *mode_name[M_N] = { "alloc", "appmem", "bounce" };

struct setup {
	struct mrc_ctx *c[2];
	struct mrc_qp *q[2];
	struct mrc_mr *dst, *alloc, *app, *bounce;
	uint8_t *buf;                      /* the application's buffer */
};

static int die(const char *what, int r, struct mrc_ctx *c)
{
	fprintf(stderr, "bench_appmem: %s: %s (%s)\n", what, mrc_strerror(r), c ? mrc_last_error(c) : "");
	return 1;
}

static int wait_one(struct mrc_qp *qp)
{
	struct mrc_completion e;
	for (;;) {
		int n = mrc_poll_cq(qp, &e, 1);
		if (n < 0)
			return n;
		if (n == 1)
			return e.status;
		int r = mrc_wait(qp, 5000);
		if (r && r != -ETIMEDOUT)
			return r;
	}
}

static uint64_t cpu_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/* GB/s of total bytes in messages of sz, WINDOW in flight; *cpu: the
 * client's CPU ms per GiB sent (its posts, waits and copies). */
static double stream(struct setup *s, int mode, uint64_t sz, uint64_t total, double *cpu)
{
	uint64_t c0 = cpu_ns();
	struct mrc_qp *qp = s->q[0];
	uint32_t rkey = mrc_mr_key(s->dst);
	uint64_t nmsg = total / sz, posted = 0, done = 0;
	uint8_t *bounce = mrc_mr_addr(s->bounce);
	uint64_t t0 = bm_now_ns();
	while (done < nmsg) {
		while (posted < nmsg && posted - done < WINDOW) {
			uint64_t off = (posted * sz) % BUF_LEN;
			uint32_t lkey;
			uint64_t loff = off;
			if (mode == M_ALLOC) {
				lkey = mrc_mr_key(s->alloc);
			} else if (mode == M_APPMEM) {
				lkey = mrc_mr_key(s->app);
			} else {
				/* a free slot of the bounce ring: WINDOW slots */
				loff = (posted % WINDOW) * sz;
				memcpy(bounce + loff, s->buf + off, sz);
				lkey = mrc_mr_key(s->bounce);
			}
			int r = mrc_post_write(qp, posted, lkey, loff, sz, rkey, off % (BUF_LEN / 2));
			if (r == -ENOSPC)
				break;
			if (r)
				return -1;
			posted++;
		}
		if (wait_one(qp))
			return -1;
		done++;
	}
	uint64_t el = bm_now_ns() - t0;
	*cpu = (double)(cpu_ns() - c0) / 1e6 / ((double)(nmsg * sz) / (double)(1u << 30));
	return (double)(nmsg * sz) / (double)el;
}

int main(int argc, char **argv)
{
	uint64_t total = (argc > 1 ? strtoull(argv[1], NULL, 0) : 256) << 20;
	int runs = argc > 2 ? atoi(argv[2]) : 5;
	if (runs < 1 || runs > 64)
		runs = 5;
	struct bm_mrcd d;
	if (bm_mrcd_start(&d, NULL))
		return 1;
	struct setup s;
	memset(&s, 0, sizeof(s));
	int r;
	for (int i = 0; i < 2; i++) {
		if ((r = mrc_open(d.sock, &s.c[i])))
			return bm_mrcd_stop(&d), die("mrc_open", r, NULL);
		if ((r = mrc_create_qp(s.c[i], NULL, &s.q[i])))
			return bm_mrcd_stop(&d), die("mrc_create_qp", r, s.c[i]);
	}
	struct mrc_qp_addr a0, a1;
	mrc_qp_info_get(s.q[0], &a0);
	mrc_qp_info_get(s.q[1], &a1);
	if ((r = mrc_connect_oob(s.q[0], &a1)) || (r = mrc_connect_oob(s.q[1], &a0)))
		return bm_mrcd_stop(&d), die("connect", r, s.c[0]);
	if ((r = mrc_alloc_mr(s.c[1], BUF_LEN / 2, MRC_MR_ALL, &s.dst)) ||
	    (r = mrc_alloc_mr(s.c[0], BUF_LEN, MRC_MR_LOCAL_READ, &s.alloc)) ||
	    (r = mrc_alloc_mr(s.c[0], (uint64_t)WINDOW << 20, MRC_MR_LOCAL_READ, &s.bounce)))
		return bm_mrcd_stop(&d), die("mrc_alloc_mr", r, s.c[0]);
	memset(mrc_mr_addr(s.alloc), 0x5a, BUF_LEN);
	void *buf;
	if (posix_memalign(&buf, 4096, BUF_LEN))
		return bm_mrcd_stop(&d), 1;
	s.buf = buf;
	memset(s.buf, 0x5a, BUF_LEN);
	uint64_t t0 = bm_now_ns();
	r = mrc_reg_mem(s.c[0], s.buf, BUF_LEN, MRC_MR_LOCAL_READ, MRC_REG_MOVE, &s.app);
	uint64_t t_move = bm_now_ns() - t0;
	if (r)
		return bm_mrcd_stop(&d), die("mrc_reg_mem", r, s.c[0]);
	struct mrc_mr *again;
	t0 = bm_now_ns();
	r = mrc_reg_mem(s.c[0], s.buf, BUF_LEN, MRC_MR_LOCAL_READ, 0, &again);
	uint64_t t_again = bm_now_ns() - t0;
	if (r)
		return bm_mrcd_stop(&d), die("mrc_reg_mem again", r, s.c[0]);
	mrc_dereg_mr(again);

	char mach[256];
	bm_machine(mach, sizeof(mach));
	printf("# bench_appmem: %s\n", mach);
	printf("# WRITE stream, loopback mrcd, %u in flight, %llu MiB per run, %d runs: "
	       "median (min..max)\n", WINDOW, (unsigned long long)(total >> 20), runs);
	printf("# mrc_reg_mem of %llu MiB: MRC_REG_MOVE %.1f ms, again (already a memfd) %.2f ms\n",
	       (unsigned long long)(BUF_LEN >> 20), t_move / 1e6, t_again / 1e6);
	printf("| message | | alloc | appmem | bounce |\n|---|---|---|---|---|\n");
	static const uint64_t sizes[] = { 4096, 65536, 1 << 20 };
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		double g[M_N][64], cpu[M_N][64];
		for (int i = 0; i < runs; i++)
			for (int m = 0; m < M_N; m++)   /* interleaved: drift hits all */
				if ((g[m][i] = stream(&s, m, sizes[k], sizes[k] < 65536 ? total / 8 : total,
						  &cpu[m][i])) < 0)
					return bm_mrcd_stop(&d), die(mode_name[m], -EIO, s.c[0]);
		char c0[80], c1[80], c2[80];
		printf("| %llu KiB | GB/s | %s | %s | %s |\n", (unsigned long long)(sizes[k] >> 10),
		       bm_spread(c0, sizeof(c0), g[M_ALLOC], runs, "%.2f"),
		       bm_spread(c1, sizeof(c1), g[M_APPMEM], runs, "%.2f"),
		       bm_spread(c2, sizeof(c2), g[M_BOUNCE], runs, "%.2f"));
		printf("| | client CPU ms/GiB | %s | %s | %s |\n",
		       bm_spread(c0, sizeof(c0), cpu[M_ALLOC], runs, "%.0f"),
		       bm_spread(c1, sizeof(c1), cpu[M_APPMEM], runs, "%.0f"),
		       bm_spread(c2, sizeof(c2), cpu[M_BOUNCE], runs, "%.0f"));
		fflush(stdout);
	}
	mrc_close(s.c[0]);
	mrc_close(s.c[1]);
	bm_mrcd_stop(&d);
	free(buf);
	return 0;
}
