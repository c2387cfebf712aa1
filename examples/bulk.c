/* mrc_bulk: a bulk WRITE transfer with end-to-end verification.
 *
 *   host B:  mrc_bulk [-S SOCK] [-s SIZE] [-i SID] recv
 *   host A:  mrc_bulk [-S SOCK] [-s SIZE] [-c CHUNK] [-d DEPTH] [-i SID] [-p PASSES]
 *                     send HOST_B
 *
 * The receiver registers SIZE bytes, listens on SID and accepts with its
 * region's key as private data.  The sender connects, WRITEs a seeded
 * pattern in CHUNK pieces with DEPTH writes in flight, PASSES times over
 * the same regions (the first pass also pays for the memory's first use;
 * later ones are the steady state, as ib_write_bw's iterations over one
 * registration), then SENDs the size and hash of what it wrote.  The
 * receiver hashes what landed and exits 0 only if every byte matches. */
#include <getopt.h>
#include <unistd.h>

#include "examples/common.h"

struct bulk_msg {
	uint64_t magic, size, hash;
};
#define BULK_MAGIC 0x6b6c75622d63726dull

static const char *sock;
static uint64_t size = 64ull << 20, chunk = 1 << 20;
static unsigned depth = 64, sid = 7001, passes = 1;
static uint32_t qp_flags;   /* -t: MRC_QP_URGENT or MRC_QP_BULK */

static int do_recv(void)
{
	struct mrc_ctx *ctx;
	struct mrc_mr *dst, *msg;
	struct mrc_qp *qp;
	EX_CHECK(mrc_open(sock, &ctx), NULL);
	EX_CHECK(mrc_alloc_mr(ctx, size, MRC_MR_REMOTE_WRITE | MRC_MR_LOCAL_READ, &dst), ctx);
	EX_CHECK(mrc_alloc_mr(ctx, 4096, MRC_MR_LOCAL_WRITE, &msg), ctx);
	EX_CHECK(mrc_create_qp(ctx, &(struct mrc_qp_cfg){ .flags = qp_flags }, &qp), ctx);
	EX_CHECK(mrc_listen(ctx, sid, 1), ctx);
	printf("mrc_bulk: waiting for a sender on service %u (%llu bytes)\n", sid,
	       (unsigned long long)size);
	fflush(stdout);
	struct mrc_qp_addr peer;
	EX_CHECK(mrc_accept(qp, sid, mrc_mr_key(dst), 0, &peer), ctx);
	EX_CHECK(mrc_post_recv(qp, 1, mrc_mr_key(msg), 0, sizeof(struct bulk_msg)), ctx);
	struct mrc_completion c = ex_get(qp, ctx, 3600 * 1000);
	struct bulk_msg m;
	memcpy(&m, mrc_mr_addr(msg), sizeof(m));
	if (c.op != MRC_CQE_RECV || c.byte_len != sizeof(m) || m.magic != BULK_MAGIC) {
		fprintf(stderr, "mrc_bulk: unexpected message from host %u\n", peer.host);
		return 1;
	}
	uint64_t h = ex_hash(mrc_mr_addr(dst), m.size <= size ? m.size : size);
	int ok = m.size == size && h == m.hash;
	printf("mrc_bulk: %llu bytes from host %u: hash %016llx %s\n", (unsigned long long)m.size,
	       peer.host, (unsigned long long)h, ok ? "OK" : "MISMATCH");
	mrc_close(ctx);
	return ok ? 0 : 1;
}

static int do_send(uint32_t host)
{
	struct mrc_ctx *ctx;
	struct mrc_mr *src;
	struct mrc_qp *qp;
	EX_CHECK(mrc_open(sock, &ctx), NULL);
	EX_CHECK(mrc_alloc_mr(ctx, size + 4096, MRC_MR_LOCAL_READ, &src), ctx);
	uint8_t *buf = mrc_mr_addr(src);
	ex_fill(buf, size, size ^ 0x5eedull);
	struct mrc_qp_cfg cfg = { .sq_entries = 256, .cq_entries = 512, .flags = qp_flags };
	EX_CHECK(mrc_create_qp(ctx, &cfg, &qp), ctx);
	struct mrc_qp_addr peer;
	int r;
	/* The receiver may not be listening yet: retry for a while. */
	for (int i = 0; (r = mrc_connect(qp, host, sid, 0, &peer)) == -ECONNREFUSED && i < 100; i++)
		usleep(100000);
	EX_CHECK(r, ctx);
	uint32_t rkey = peer.priv;
	double first = 0, dt = 0;
	for (unsigned pass = 1; pass <= passes; pass++) {
		double t0 = ex_now();
		uint64_t posted = 0, done = 0, inflight = 0;
		while (done < size) {
			while (posted < size && inflight < depth) {
				uint64_t n = size - posted < chunk ? size - posted : chunk;
				r = mrc_post_write(qp, posted, mrc_mr_key(src), posted, n, rkey, posted);
				if (r == -ENOSPC)
					break;
				EX_CHECK(r, ctx);
				posted += n;
				inflight++;
			}
			struct mrc_completion c = ex_get(qp, ctx, 60000);
			done += c.wr_id + chunk > size ? size - c.wr_id : chunk;
			inflight--;
		}
		dt = ex_now() - t0;
		if (pass == 1)
			first = dt;
		if (passes > 1)
			printf("mrc_bulk: pass %u/%u: %llu bytes in %.3f s: %.1f MB/s\n", pass, passes,
			       (unsigned long long)size, dt, size / dt / 1e6);
	}
	struct bulk_msg m = { .magic = BULK_MAGIC, .size = size, .hash = ex_hash(buf, size) };
	memcpy(buf + size, &m, sizeof(m));
	EX_CHECK(mrc_post_send(qp, 0, mrc_mr_key(src), size, sizeof(m)), ctx);
	ex_get(qp, ctx, 60000);
	/* The last pass: the steady state when there were several. */
	printf("mrc_bulk: %llu bytes to host %u in %.3f s: %.1f MB/s, hash %016llx",
	       (unsigned long long)size, host, dt, size / dt / 1e6, (unsigned long long)m.hash);
	if (passes > 1)
		printf(" (pass %u of %u; the first took %.3f s)", passes, passes, first);
	printf("\n");
	mrc_close(ctx);
	return 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: mrc_bulk [-S socket] [-s size] [-c chunk] [-d depth] [-i sid] "
			"[-p passes] [-t urgent|bulk] recv | send HOST\n");
	exit(2);
}

int main(int argc, char **argv)
{
	int o;
	while ((o = getopt(argc, argv, "S:s:c:d:i:p:t:h")) != -1) {
		switch (o) {
		case 'S': sock = optarg; break;
		case 's': size = ex_size(optarg); break;
		case 'c': chunk = ex_size(optarg); break;
		case 'd': depth = ex_uint(optarg, "depth"); break;
		case 'i': sid = ex_uint(optarg, "service id"); break;
		case 'p': passes = ex_uint(optarg, "passes"); break;
		case 't':   /* the QP's traffic class (mrc_qp_cfg.flags) */
			if (!strcmp(optarg, "urgent"))
				qp_flags = MRC_QP_URGENT;
			else if (!strcmp(optarg, "bulk"))
				qp_flags = MRC_QP_BULK;
			else
				usage();
			break;
		default: usage();
		}
	}
	if (!size || !chunk || !depth || depth > 256 || !passes || passes > 1000)
		usage();
	if (optind < argc && !strcmp(argv[optind], "recv"))
		return do_recv();
	if (optind + 1 < argc && !strcmp(argv[optind], "send"))
		return do_send(ex_uint(argv[optind + 1], "host"));
	usage();
	return 2;
}
