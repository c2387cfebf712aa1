/* mrc_gpu_put: the GPU put flow (examples/gpu_put_flow.h) between two
 * hosts, on a host thread (mrc_gpu_put) or, built with -DGPU_PUT_CUDA and
 * linked with examples/gpu_put.cu, from a kernel.
 *
 *   host B:  mrc_gpu_put [-S SOCK] [-s SIZE] [-n ROUNDS] [-i SID] server
 *   host A:  mrc_gpu_put [-S SOCK] [-s SIZE] [-n ROUNDS] [-i SID] client HOST_B
 *
 * Each round both sides put SIZE bytes (a pattern of their host index and
 * the round) into the other's memory and signal; each waits for the
 * other's signal and then checks the peer's bytes, every one of them.
 * Rounds alternate between two target areas so that a fast peer never
 * overwrites data not yet checked.  Exits 0 when every round verified. */
#include <getopt.h>
#include <unistd.h>

#include "examples/common.h"
#include "examples/gpu_put_flow.h"

static const char *sock;
static uint64_t size = 65536;
static unsigned rounds = 100, sid = 7003;

#define DATA_OFF 64u   /* target region: semaphore at 0, two areas from 64 */

static uint64_t pattern_seed(uint32_t host, uint64_t r)
{
	return ((uint64_t)host << 32) ^ r ^ 0x6770755f707574ull;
}

#ifdef GPU_PUT_CUDA
/* examples/gpu_put.cu: the same rounds from a kernel. */
int gpu_put_cuda_init(const struct mrc_gpu_chan *ch, void *dst, uint64_t dst_len, void *src,
		      uint64_t src_len);
int gpu_put_cuda_round(uint32_t rkey, uint64_t roff, uint32_t lkey, uint64_t bytes, uint64_t r);
#define MODE "kernel"
#else
#define MODE "host thread"
#endif

static int run(int server, uint32_t host)
{
	struct mrc_ctx *ctx;
	struct mrc_mr *src, *dst;
	struct mrc_qp *qp;
	struct mrc_qp_addr peer;
	struct mrc_ctx_info info;
	EX_CHECK(mrc_open(sock, &ctx), NULL);
	EX_CHECK(mrc_ctx_info(ctx, &info), ctx);
	EX_CHECK(mrc_alloc_mr(ctx, size, MRC_MR_LOCAL_READ, &src), ctx);
	EX_CHECK(mrc_alloc_mr(ctx, DATA_OFF + 2 * size, MRC_MR_REMOTE_WRITE | MRC_MR_REMOTE_ATOMIC,
			      &dst), ctx);
	/* Polled: a kernel cannot ring the daemon's eventfd. */
	struct mrc_qp_cfg cfg = { .sq_entries = 64, .flags = MRC_QP_POLLED };
	EX_CHECK(mrc_create_qp(ctx, &cfg, &qp), ctx);
	ex_pair(ctx, qp, "mrc_gpu_put", server, host, sid, mrc_mr_key(dst), &peer);
	/* The peer's semaphore is the first word of its target region. */
	struct mrc_gpu_chan ch;
	struct mrc_gpu_watch *w;
	EX_CHECK(mrc_gpu_chan_init(qp, peer.priv, 0, &ch), ctx);
	EX_CHECK(mrc_gpu_watch_start(ctx, &w), ctx);
	mrc_gpu_watch_attach(w, &ch);
	ch.timeout_ns = 30ull * 1000000000u;
	uint8_t *s = mrc_mr_addr(src), *t = mrc_mr_addr(dst);
	uint8_t *want = malloc(size);
	if (!want)
		ex_die("malloc", -ENOMEM, NULL);
#ifdef GPU_PUT_CUDA
	EX_CHECK(gpu_put_cuda_init(&ch, t, mrc_mr_len(dst), s, size), NULL);
#endif
	double t0 = ex_now();
	for (unsigned r = 0; r < rounds; r++) {
		uint64_t area = DATA_OFF + (r % 2) * size;
		ex_fill(s, size, pattern_seed(info.host, r));
#ifdef GPU_PUT_CUDA
		int rc = gpu_put_cuda_round(peer.priv, area, mrc_mr_key(src), size, r);
#else
		int rc = gpu_put_round(&ch, peer.priv, area, mrc_mr_key(src), 0, size,
				       (const uint64_t *)(void *)t, r);
#endif
		if (rc < 0)
			ex_die("gpu_put_round", rc, ctx);
		ex_fill(want, size, pattern_seed(peer.host, r));
		if (memcmp(t + area, want, size)) {
			uint64_t i = 0;
			while (t[area + i] == want[i])
				i++;
			fprintf(stderr, "mrc_gpu_put: round %u: byte %llu differs\n", r,
				(unsigned long long)i);
			return 1;
		}
	}
	double dt = ex_now() - t0;
	printf("mrc_gpu_put: %u rounds x %llu bytes from host %u verified byte for byte (%s, "
	       "%.1f us per round)\n", rounds, (unsigned long long)size, peer.host, MODE,
	       dt * 1e6 / rounds);
	mrc_gpu_watch_stop(w);
	free(want);
	mrc_close(ctx);
	return 0;
}

int main(int argc, char **argv)
{
	int o;
	while ((o = getopt(argc, argv, "S:s:n:i:h")) != -1) {
		switch (o) {
		case 'S': sock = optarg; break;
		case 's': size = ex_size(optarg); break;
		case 'n': rounds = (unsigned)atoi(optarg); break;
		case 'i': sid = (unsigned)atoi(optarg); break;
		default: goto usage;
		}
	}
	if (!size || !rounds)
		goto usage;
	uint32_t host = 0;
	int role = ex_role(argc, argv, optind, &host);
	if (role >= 0)
		return run(role, host);
usage:
	fprintf(stderr, "usage: mrc_gpu_put [-S socket] [-s size] [-n rounds] [-i sid] "
			"server | client HOST\n");
	return 2;
}
