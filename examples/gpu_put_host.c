/* mrc_gpu_put: the GPU put flow (examples/gpu_put_flow.h) between two
 * hosts, on a host thread (mrc_gpu_put) or, built with -DGPU_PUT_CUDA and
 * linked with examples/gpu_put.cu, from a kernel.
 *
 *   host B:  mrc_gpu_put [-S SOCK] [-s SIZE] [-n ROUNDS] [-i SID] [-t LANES] server
 *   host A:  mrc_gpu_put [-S SOCK] [-s SIZE] [-n ROUNDS] [-i SID] [-t LANES] client HOST_B
 *
 * Each round both sides put SIZE bytes (a pattern of their host index and
 * the round) into the other's memory and signal; each waits for the
 * other's signal and then checks the peer's bytes, every one of them.
 * Rounds alternate between two target areas so that a fast peer never
 * overwrites data not yet checked.  -t LANES: that many QPs, each with
 * its own producer thread, areas and semaphore (host-thread mode).
 * Exits 0 when every round of every lane verified. */
#include <getopt.h>
#include <pthread.h>
#include <unistd.h>

#include "examples/common.h"
#include "examples/gpu_put_flow.h"

static const char *sock;
static uint64_t size = 65536;
static unsigned rounds = 100, sid = 7003, nthreads = 1;

/* Target region: lane t's semaphore at 8 t in the first page, its two
 * areas from AREA(t, 0).  Source region: lane t's buffer at t * size. */
#define MAXLANES 64u
#define AREA(t, k) (4096u + ((uint64_t)(t) * 2 + (k)) * size)

static uint64_t pattern_seed(uint32_t host, unsigned lane, uint64_t r)
{
	return ((uint64_t)host << 40) ^ ((uint64_t)lane << 32) ^ r ^ 0x6770755f707574ull;
}

#ifdef GPU_PUT_CUDA
static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* examples/gpu_put.cu: the same rounds from a kernel (one lane). */
int gpu_put_cuda_init(const struct mrc_gpu_chan *ch, void *dst, uint64_t dst_len, void *src,
		      uint64_t src_len);
int gpu_put_cuda_round(uint32_t rkey, uint64_t roff, uint32_t lkey, uint64_t bytes, uint64_t r,
		       uint64_t *kernel_ns);
#define MODE "kernel"
#else
#define MODE "host threads"
#endif

/* One producer: a QP, its channel, and its share of both regions. */
struct lane {
	unsigned t;
	struct mrc_qp *qp;
	struct mrc_qp_addr peer;   /* peer.priv: the peer's target region key */
	struct mrc_gpu_chan ch;
	uint8_t *src, *dst;        /* whole regions */
	uint32_t lkey, host;
	uint64_t *kernel_ns;       /* [rounds]: each round inside the kernel */
	const char *fail;
	unsigned bad_round;
	uint64_t bad_byte;
	int rc;
};

/* Each round: put our pattern into the peer's area, signal, wait for the
 * peer's signal, flush; then every byte the peer put here is checked. */
static void *lane_main(void *arg)
{
	struct lane *l = arg;
	uint8_t *want = malloc(size), *s = l->src + (uint64_t)l->t * size;
	const uint64_t *sem = (const uint64_t *)(void *)(l->dst + 8u * l->t);
	if (!want) {
		l->rc = -ENOMEM;
		return NULL;
	}
	for (unsigned r = 0; r < rounds; r++) {
		uint64_t area = AREA(l->t, r % 2);
		ex_fill(s, size, pattern_seed(l->host, l->t, r));
#ifdef GPU_PUT_CUDA
		(void)sem;
		l->rc = gpu_put_cuda_round(l->peer.priv, area, l->lkey, size, r, &l->kernel_ns[r]);
#else
		l->rc = gpu_put_round(&l->ch, l->peer.priv, area, l->lkey, (uint64_t)l->t * size,
				      size, sem, r);
#endif
		if (l->rc < 0) {
			l->fail = "gpu_put_round";
			break;
		}
		ex_fill(want, size, pattern_seed(l->peer.host, l->t, r));
		if (memcmp(l->dst + area, want, size)) {
			uint64_t i = 0;
			while (l->dst[area + i] == want[i])
				i++;
			l->fail = "verify";
			l->bad_round = r;
			l->bad_byte = i;
			l->rc = -EIO;
			break;
		}
	}
	free(want);
	return NULL;
}

static int run(int server, uint32_t host)
{
	struct mrc_ctx *ctx;
	struct mrc_mr *src, *dst;
	struct mrc_ctx_info info;
	static struct lane lanes[MAXLANES];
	EX_CHECK(mrc_open(sock, &ctx), NULL);
	EX_CHECK(mrc_ctx_info(ctx, &info), ctx);
	EX_CHECK(mrc_alloc_mr(ctx, nthreads * size, MRC_MR_LOCAL_READ, &src), ctx);
	EX_CHECK(mrc_alloc_mr(ctx, AREA(nthreads, 0), MRC_MR_REMOTE_WRITE | MRC_MR_REMOTE_ATOMIC,
			      &dst), ctx);
	struct mrc_gpu_watch *w;
	EX_CHECK(mrc_gpu_watch_start(ctx, &w), ctx);
	/* Lanes pair up in order: the client connects them one after the
	 * other, the server accepts them one after the other. */
	for (unsigned t = 0; t < nthreads; t++) {
		struct lane *l = &lanes[t];
		l->t = t;
		l->src = mrc_mr_addr(src);
		l->dst = mrc_mr_addr(dst);
		l->lkey = mrc_mr_key(src);
		l->host = info.host;
		/* Polled: a kernel cannot ring the daemon's eventfd. */
		struct mrc_qp_cfg cfg = { .sq_entries = 64, .flags = MRC_QP_POLLED };
		EX_CHECK(mrc_create_qp(ctx, &cfg, &l->qp), ctx);
		ex_pair(ctx, l->qp, "mrc_gpu_put", server, t ? 0 : nthreads, host, sid,
			mrc_mr_key(dst), &l->peer);
		/* Our signal goes to the peer lane's semaphore. */
		EX_CHECK(mrc_gpu_chan_init(l->qp, l->peer.priv, 8u * t, &l->ch), ctx);
		mrc_gpu_watch_attach(w, &l->ch);
		l->ch.timeout_ns = 30ull * 1000000000u;
	}
#ifdef GPU_PUT_CUDA
	EX_CHECK(gpu_put_cuda_init(&lanes[0].ch, mrc_mr_addr(dst), mrc_mr_len(dst),
				   mrc_mr_addr(src), size), NULL);
	if (!(lanes[0].kernel_ns = calloc(rounds, sizeof(uint64_t))))
		ex_die("calloc", -ENOMEM, ctx);
#endif
	double t0 = ex_now();
	pthread_t th[MAXLANES];
	for (unsigned t = 0; t < nthreads; t++)
		if (pthread_create(&th[t], NULL, lane_main, &lanes[t]))
			ex_die("pthread_create", -EAGAIN, NULL);
	int bad = 0;
	for (unsigned t = 0; t < nthreads; t++) {
		pthread_join(th[t], NULL);
		struct lane *l = &lanes[t];
		if (l->rc == -EIO)
			fprintf(stderr, "mrc_gpu_put: lane %u round %u: byte %llu differs\n", t,
				l->bad_round, (unsigned long long)l->bad_byte);
		else if (l->rc < 0)
			fprintf(stderr, "mrc_gpu_put: lane %u: %s: %s\n", t, l->fail, mrc_strerror(l->rc));
		bad |= l->rc < 0;
	}
	if (bad)
		return 1;
	double dt = ex_now() - t0;
	printf("mrc_gpu_put: %u lanes x %u rounds x %llu bytes from host %u verified byte for byte "
	       "(%s, %.1f us per round)\n", nthreads, rounds, (unsigned long long)size,
	       lanes[0].peer.host, MODE, dt * 1e6 / rounds);
#ifdef GPU_PUT_CUDA
	/* Where a round's time goes: inside the kernel (the transport), and
	 * around it (launch, synchronisation, the host's check). */
	qsort(lanes[0].kernel_ns, rounds, sizeof(uint64_t), cmp_u64);
	printf("mrc_gpu_put: a round inside the kernel (put, signal, wait, flush): median %.1f us, "
	       "p99 %.1f us\n", lanes[0].kernel_ns[rounds / 2] / 1e3,
	       lanes[0].kernel_ns[(uint64_t)rounds * 99 / 100] / 1e3);
	free(lanes[0].kernel_ns);
#endif
	mrc_gpu_watch_stop(w);
	mrc_close(ctx);
	return 0;
}

int main(int argc, char **argv)
{
	int o;
	while ((o = getopt(argc, argv, "S:s:n:i:t:h")) != -1) {
		switch (o) {
		case 'S': sock = optarg; break;
		case 's': size = ex_size(optarg); break;
		case 'n': rounds = ex_uint(optarg, "rounds"); break;
		case 'i': sid = ex_uint(optarg, "service id"); break;
		case 't': nthreads = ex_uint(optarg, "threads"); break;
		default: goto usage;
		}
	}
#ifdef GPU_PUT_CUDA
	nthreads = 1;   /* one kernel lane */
#endif
	if (!size || !rounds || !nthreads || nthreads > MAXLANES)
		goto usage;
	uint32_t host = 0;
	int role = ex_role(argc, argv, optind, &host);
	if (role >= 0)
		return run(role, host);
usage:
	fprintf(stderr, "usage: mrc_gpu_put [-S socket] [-s size] [-n rounds] [-i sid] [-t lanes] "
			"server | client HOST\n");
	return 2;
}
