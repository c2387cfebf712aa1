/* mrc_alltoall: every host sends SIZE bytes to every other host.
 *
 *   on each of N hosts:  mrc_alltoall [-S SOCK] [-s SIZE] [-i SID] [-r ROUNDS]
 *
 * The fabric's host count and this host's index come from the daemon.
 * Connections: host i connects to every host j < i and accepts from every
 * j > i (an order without cycles, so no host waits on one that waits on
 * it); the accept side learns who connected from the remote address.
 * Each host owns a region of N slots; priv carries its key.  In every
 * round, host i WRITEs a pattern seeded by (i, round) into slot i of every
 * peer with one WRITE_WITH_IMM; a host is done when it has seen N-1
 * immediates and its N-1 writes completed, and then checks every slot. */
#include <getopt.h>
#include <unistd.h>

#include "examples/common.h"

static const char *sock;
static uint64_t size = 16ull << 20;
static unsigned sid = 7003, rounds = 1;

static uint64_t seed_of(uint32_t host, unsigned round)
{
	return ((uint64_t)host << 32) ^ round ^ 0xa11a11ull;
}

enum { DATA = 0, DONE = 0x80000000u };
struct counts {
	uint32_t data[2], done[2];   /* immediates received, by round parity */
	uint32_t writes;             /* our WRITE_WITH_IMMs completed */
};

/* Polls every QP once and counts what completed. */
static void poll_all(struct mrc_ctx *ctx, struct mrc_qp **qp, uint32_t n, uint32_t me,
		     struct counts *st, double end)
{
	int any = 0;
	for (uint32_t j = 0; j < n; j++) {
		struct mrc_completion c;
		if (j == me || mrc_poll_cq(qp[j], &c, 1) != 1)
			continue;
		any = 1;
		if (c.status)
			ex_die(mrc_cqe_op_name(c.op), c.status, ctx);
		if (c.op == MRC_CQE_RECV_WRITE_IMM && (c.imm & DONE))
			st->done[c.imm & 1]++;
		else if (c.op == MRC_CQE_RECV_WRITE_IMM)
			st->data[c.imm & 1]++;
		else if (c.op == MRC_CQE_WRITE_IMM)
			st->writes++;
	}
	if (!any && ex_now() > end)
		ex_die("all-to-all round", -ETIMEDOUT, ctx);
}

int main(int argc, char **argv)
{
	int o;
	while ((o = getopt(argc, argv, "S:s:i:r:h")) != -1) {
		switch (o) {
		case 'S': sock = optarg; break;
		case 's': size = ex_size(optarg); break;
		case 'i': sid = ex_uint(optarg, "service id"); break;
		case 'r': rounds = ex_uint(optarg, "rounds"); break;
		default:
			fprintf(stderr, "usage: mrc_alltoall [-S socket] [-s size] [-i sid] [-r rounds]\n");
			return 2;
		}
	}
	struct mrc_ctx *ctx;
	EX_CHECK(mrc_open(sock, &ctx), NULL);
	struct mrc_ctx_info info;
	mrc_ctx_info(ctx, &info);
	uint32_t n = info.n_hosts, me = info.host;
	if (n < 2) {
		fprintf(stderr, "mrc_alltoall: the fabric has %u host(s); nothing to exchange\n", n);
		return 1;
	}
	struct mrc_mr *src, *dst;
	EX_CHECK(mrc_alloc_mr(ctx, size, MRC_MR_LOCAL_READ, &src), ctx);
	EX_CHECK(mrc_alloc_mr(ctx, size * n, MRC_MR_REMOTE_WRITE | MRC_MR_LOCAL_READ, &dst), ctx);
	struct mrc_qp **qp = calloc(n, sizeof(*qp));   /* by peer host */
	uint32_t *rkey = calloc(n, sizeof(*rkey));
	EX_CHECK(mrc_listen(ctx, sid, n), ctx);
	for (uint32_t j = 0; j < me; j++) {
		struct mrc_qp_addr peer;
		EX_CHECK(mrc_create_qp(ctx, NULL, &qp[j]), ctx);
		int r;
		for (int t = 0; (r = mrc_connect(qp[j], j, sid, mrc_mr_key(dst), &peer)) == -ECONNREFUSED &&
				t < 300; t++)
			usleep(100000);   /* host j may not listen yet */
		EX_CHECK(r, ctx);
		rkey[j] = peer.priv;
	}
	for (uint32_t k = me + 1; k < n; k++) {
		struct mrc_qp *q;
		struct mrc_qp_addr peer;
		EX_CHECK(mrc_create_qp(ctx, NULL, &q), ctx);
		EX_CHECK(mrc_accept(q, sid, mrc_mr_key(dst), 600000, &peer), ctx);
		if (peer.host >= n || peer.host <= me || qp[peer.host]) {
			fprintf(stderr, "mrc_alltoall: unexpected connection from host %u\n", peer.host);
			return 1;
		}
		qp[peer.host] = q;
		rkey[peer.host] = peer.priv;
	}
	printf("mrc_alltoall: host %u of %u connected to every peer\n", me, n);
	fflush(stdout);
	int bad = 0;
	double t0 = ex_now();
	/* Immediates: DATA | round marks a slot written; DONE | round says the
	 * sender has checked its slots of that round.  A host starts round r+1
	 * only after every peer said DONE for round r, so nobody overwrites a
	 * slot its owner is still checking.  Counts are kept per round parity
	 * because a fast peer's next-round data may arrive before our own
	 * DONE wait ends. */
	struct counts st = { { 0, 0 }, { 0, 0 }, 0 };
	for (unsigned round = 0; round < rounds; round++) {
		ex_fill(mrc_mr_addr(src), size, seed_of(me, round));
		for (uint32_t j = 0; j < n; j++)
			if (j != me)
				EX_CHECK(mrc_post_write_imm(qp[j], j, mrc_mr_key(src), 0, size, rkey[j],
							    (uint64_t)me * size, DATA | round), ctx);
		double end = ex_now() + 600;
		while (st.data[round & 1] < n - 1 || st.writes < (2 * round + 1) * (n - 1))
			poll_all(ctx, qp, n, me, &st, end);
		st.data[round & 1] -= n - 1;
		/* Check every slot against the pattern its sender used. */
		for (uint32_t j = 0; j < n; j++) {
			if (j == me)
				continue;
			ex_fill(mrc_mr_addr(src), size, seed_of(j, round));
			uint8_t *slot = (uint8_t *)mrc_mr_addr(dst) + (uint64_t)j * size;
			if (memcmp(slot, mrc_mr_addr(src), size)) {
				fprintf(stderr, "mrc_alltoall: round %u: data from host %u differs\n", round, j);
				bad = 1;
			}
		}
		/* Barrier: tell every peer we are done with this round. */
		for (uint32_t j = 0; j < n; j++)
			if (j != me)
				EX_CHECK(mrc_post_write_imm(qp[j], (uint64_t)n + j, mrc_mr_key(src), 0, 0,
							    rkey[j], 0, DONE | round), ctx);
		while (st.done[round & 1] < n - 1 || st.writes < 2 * (round + 1) * (n - 1))
			poll_all(ctx, qp, n, me, &st, end);
		st.done[round & 1] -= n - 1;
	}
	double dt = ex_now() - t0;
	printf("mrc_alltoall: host %u: %u round(s), sent and received %llu bytes per peer per round, "
	       "%.3f s, %.1f MB/s out: %s\n", me, rounds, (unsigned long long)size, dt,
	       (double)size * (n - 1) * rounds / dt / 1e6, bad ? "MISMATCH" : "OK");
	mrc_close(ctx);
	return bad;
}
