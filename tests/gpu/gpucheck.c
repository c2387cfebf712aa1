/* GPU-machine checks of libmrc-gpu's CUDA parts, without mrcd, cmocka or
 * libev (scripts/gpu-check.sh builds and runs it with nvcc there):
 *
 *  1. staging: device -> pinned shadow -> "send" (a memcpy standing in for
 *     the datapath) through gpu/stage.c with the real CUDA backend
 *     (cudaMemcpyAsync on its own stream, events), verified byte for byte,
 *     timed against the unpipelined copy-then-send, per chunk size;
 *     the target side (shadow -> device) verified;
 *  2. chan_to_device: a ring laid out as mrcd lays it out, registered and
 *     mapped by mrc_gpu_chan_to_device; one GPU thread posts puts through
 *     mrc/gpu.h's producer and flushes; a host thread plays the daemon
 *     (consumes in order, checks every field, completes, parks the ring
 *     now and then so the kernel must wake it through the notify page);
 *     registrations are released and counted.
 * Prints "gpucheck: PASS" or "gpucheck: FAIL ..." lines; exit 0 only if
 * all passed.  Argument "quick": small sizes (for compute-sanitizer). */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include <cuda_runtime_api.h>

#include "mrc/gpu.h"
#include "gpu/stage.h"

int gpucheck_kernel_post(const struct mrc_gpu_chan *dev, int n, uint32_t rkey, uint32_t lkey,
			 int *rc, double *secs);

static int failures;
#define CHECK(c, ...) do { if (!(c)) { failures++; printf("gpucheck: FAIL %s:%d: ", __FILE__, __LINE__); \
	printf(__VA_ARGS__); printf("\n"); } } while (0)
#define CU(x) do { cudaError_t _e = (x); if (_e != cudaSuccess) { \
	printf("gpucheck: FAIL %s: %s\n", #x, cudaGetErrorString(_e)); exit(1); } } while (0)

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* ---- 1. staging ------------------------------------------------------ */
struct msink {
	const uint8_t *shadow;
	uint8_t *remote;
	unsigned posts;
};
static int m_post(void *p, uint64_t off, uint64_t len, uint64_t roff)
{
	struct msink *s = p;
	memcpy(s->remote + roff, s->shadow + off, len);
	s->posts++;
	return 0;
}
static int m_reap(void *p, int *err)
{
	return (int)((struct msink *)p)->posts;   /* every post completed at once */
}

static void staging(size_t len, int reps)
{
	const struct mrc__gpu_copy_ops *ops;
	void *be;
	int r = mrc__gpu_cuda_backend(&ops, &be);
	CHECK(r == 0, "mrc__gpu_cuda_backend: %d", r);
	if (r)
		return;
	uint8_t *host = malloc(len), *remote = malloc(len), *back = malloc(len);
	uint8_t *shadow = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	void *dev;
	for (size_t i = 0; i < len; i++)
		host[i] = (uint8_t)(i * 2654435761u >> 13);
	CU(cudaMalloc(&dev, len));
	CU(cudaMemcpy(dev, host, len, cudaMemcpyHostToDevice));
	CHECK(ops->host_register(be, shadow, len) == 0, "host_register of the shadow");
	struct mrc__gpu_stage st = { .ops = ops, .be = be, .shadow = shadow, .dev = dev };
	static const struct mrc__gpu_sink sink = { .post = m_post, .reap = m_reap };

	/* Unpipelined: one copy of everything, then one send of everything. */
	double base[16], t;
	for (int k = 0; k < reps; k++) {
		memset(remote, 0, len);
		t = now();
		CU(cudaMemcpy(shadow, dev, len, cudaMemcpyDeviceToHost));
		memcpy(remote, shadow, len);
		base[k] = now() - t;
	}
	qsort(base, (size_t)reps, sizeof(double), cmp_d);
	printf("gpucheck: staging %zu MiB unpipelined (copy, then send): median %.3f ms, %.2f GB/s\n",
	       len >> 20, base[reps / 2] * 1e3, len / base[reps / 2] / 1e9);
	static const uint64_t chunks[] = { 256 << 10, 1 << 20, 4 << 20 };
	for (size_t c = 0; c < sizeof(chunks) / sizeof(chunks[0]); c++) {
		double d[16];
		st.chunk = chunks[c];
		for (int k = 0; k < reps; k++) {
			struct msink s = { .shadow = shadow, .remote = remote };
			memset(remote, 0, len);
			memset(shadow, 0, len);
			t = now();
			r = mrc__gpu_stage_put(&st, &sink, &s, 0, len, 0);
			d[k] = now() - t;
			CHECK(r == 0, "stage_put chunk %llu: %d", (unsigned long long)chunks[c], r);
			CHECK(s.posts == (len + chunks[c] - 1) / chunks[c], "posts %u", s.posts);
			CHECK(!memcmp(remote, host, len), "staged data differs (chunk %llu)",
			      (unsigned long long)chunks[c]);
		}
		qsort(d, (size_t)reps, sizeof(double), cmp_d);
		printf("gpucheck: staging %zu MiB pipelined, chunk %llu KiB: median %.3f ms, %.2f GB/s, %.2fx unpipelined\n",
		       len >> 20, (unsigned long long)(chunks[c] >> 10), d[reps / 2] * 1e3,
		       len / d[reps / 2] / 1e9, base[reps / 2] / d[reps / 2]);
	}
	/* Target side: landed data (the shadow) to the device. */
	for (size_t i = 0; i < len; i++)
		shadow[i] = (uint8_t)~host[i];
	CHECK(mrc__gpu_stage_copy(&st, 1, 4096, len - 8192) == 0, "stage_copy to device");
	CU(cudaMemcpy(back, dev, len, cudaMemcpyDeviceToHost));
	CHECK(!memcmp(back + 4096, shadow + 4096, len - 8192) && !memcmp(back, host, 4096),
	      "landed data not on the device, or outside the range");
	ops->host_unregister(be, shadow);
	ops->destroy(be);
	cudaFree(dev);
	munmap(shadow, len);
	free(host);
	free(remote);
	free(back);
	printf("gpucheck: staging checked\n");
}

/* ---- 2. a kernel posting into a host-consumed ring ------------------- */
struct ring {
	void *map, *nmap;
	size_t map_len;
	struct mrc_gpu_chan ch;
	uint32_t abort_word;
	int n;
	uint32_t rkey, lkey;
	int bad, parks, wakes;
	char why[200];
};

static uint32_t ld_acq32(const uint32_t *p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }

/* The daemon's part: consume SQ entries in order, verify, complete. */
static void *consumer(void *arg)
{
	struct ring *g = arg;
	struct mrc_gpu_chan *c = &g->ch;
	uint64_t cq_i = 0;
	double idle_since = 0;
	for (uint64_t i = 0; i < (uint64_t)g->n;) {
		struct mrc_sqe *s = &c->sq[i & c->sq_mask];
		if (ld_acq32(&s->seq) != (uint32_t)(i + 1)) {
			double t = now();
			if (!idle_since)
				idle_since = t;
			if (t - idle_since > 10) {
				snprintf(g->why, sizeof(g->why), "nothing at index %llu for 10 s",
					 (unsigned long long)i);
				g->bad++;
				return NULL;
			}
			/* Park after 50 us idle (ring.h, "Polled rings"), then wait
			 * for the producer's wake through the notify page. */
			if (t - idle_since > 50e-6 && c->notify) {
				__atomic_store_n(&c->sqh->sleeping, 1, __ATOMIC_RELAXED);
				__atomic_thread_fence(__ATOMIC_SEQ_CST);
				if (ld_acq32(&s->seq) == (uint32_t)(i + 1)) {
					__atomic_store_n(&c->sqh->sleeping, 0, __ATOMIC_RELAXED);
					continue;
				}
				g->parks++;
				while (!__atomic_load_n(&c->notify->summary, __ATOMIC_ACQUIRE))
					if (now() - t > 10) {
						snprintf(g->why, sizeof(g->why), "parked at %llu: no wake in 10 s",
							 (unsigned long long)i);
						g->bad++;
						return NULL;
					}
				__atomic_store_n(&c->notify->summary, 0, __ATOMIC_RELAXED);
				__atomic_thread_fence(__ATOMIC_SEQ_CST);
				if (__atomic_load_n(&c->notify->pending[c->notify_slot], __ATOMIC_RELAXED)) {
					__atomic_store_n(&c->notify->pending[c->notify_slot], 0, __ATOMIC_RELAXED);
					g->wakes++;
				}
				__atomic_thread_fence(__ATOMIC_SEQ_CST);
				__atomic_store_n(&c->sqh->sleeping, 0, __ATOMIC_RELAXED);
				idle_since = 0;
			}
			continue;
		}
		idle_since = 0;
		struct mrc_sqe d = *s;
		if (d.op != MRC_SQE_WRITE || d.len != 64 || d.loff != i * 64 || d.roff != i * 64 ||
		    d.rkey != g->rkey || d.lkey != g->lkey) {
			if (!g->bad++)
				snprintf(g->why, sizeof(g->why), "descriptor %llu: op %u len %llu loff %llu",
					 (unsigned long long)i, d.op, (unsigned long long)d.len,
					 (unsigned long long)d.loff);
		}
		__atomic_store_n(&c->sqh->tail, i + 1, __ATOMIC_RELEASE);
		/* The producer keeps posted - completed below the CQ's size, so
		 * the CQ always has room for this completion. */
		struct mrc_cqe *e = &c->cq[cq_i & c->cq_mask];
		e->status = 0;
		e->wr_id = d.wr_id;
		e->byte_len = (uint32_t)d.len;
		e->qpn = c->qpn;
		e->op = MRC_CQE_WRITE;
		e->flags = 0;
		__atomic_store_n(&e->seq, (uint32_t)(cq_i + 1), __ATOMIC_RELEASE);
		cq_i++;
		i++;
	}
	return NULL;
}

static void ring_make(struct ring *g, uint32_t sq_n, uint32_t cq_n)
{
	size_t sq = mrc_ring_bytes(sq_n, sizeof(struct mrc_sqe));
	size_t cq = mrc_ring_bytes(cq_n, sizeof(struct mrc_cqe));
	memset(g, 0, sizeof(*g));
	g->map_len = sq + cq;
	g->map = mmap(NULL, g->map_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	g->nmap = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	struct mrc_ring_hdr *sqh = g->map, *cqh = (void *)((char *)g->map + sq);
	mrc_ring_layout(sqh, MRC_RING_SQ, sq_n, sizeof(struct mrc_sqe), MRC_RING_F_POLLED, 7, 0, 3);
	mrc_ring_layout(cqh, MRC_RING_CQ, cq_n, sizeof(struct mrc_cqe), 0, 7, 0, 0);
	struct mrc_notify *nt = g->nmap;
	nt->magic = MRC_NOTIFY_MAGIC;
	nt->version = MRC_RING_VERSION;
	nt->slots = 64;
	struct mrc_gpu_chan *c = &g->ch;
	c->sqh = sqh;
	c->sq = (void *)(sqh + 1);
	c->cqh = cqh;
	c->cq = (void *)(cqh + 1);
	c->notify = nt;
	c->notify_slot = 3;
	c->sq_mask = sq_n - 1;
	c->cq_mask = cq_n - 1;
	c->qpn = 7;
	c->sq_limit = sq_n;
	c->abort = &g->abort_word;
	c->timeout_ns = 20ull * 1000 * 1000 * 1000;
}

static void kernel_posts(int n)
{
	struct ring g;
	ring_make(&g, 256, 512);
	g.n = n;
	g.rkey = 0x1234;
	g.lkey = 0x5678;
	struct mrc_gpu_chan dev, dev2;
	int r = mrc_gpu_chan_to_device(&g.ch, &dev);
	CHECK(r == 0, "mrc_gpu_chan_to_device: %d", r);
	if (r)
		return;
	CHECK(mrc_gpu_chan_to_device(&g.ch, &dev2) == 0, "second chan_to_device (ref count)");
	mrc_gpu_chan_release(&g.ch);
	pthread_t th;
	pthread_create(&th, NULL, consumer, &g);
	int rc = -1;
	double secs = 0;
	r = gpucheck_kernel_post(&dev, n, g.rkey, g.lkey, &rc, &secs);
	pthread_join(th, NULL);
	CHECK(r == 0, "kernel launch: %d", r);
	CHECK(rc == 0, "kernel's producer returned %d", rc);
	CHECK(!g.bad, "consumer: %s", g.why);
	CHECK(g.ch.sqh->tail == (uint64_t)n, "consumed %llu of %d", (unsigned long long)g.ch.sqh->tail, n);
	CHECK(g.ch.cqh->tail == (uint64_t)n, "CQ tail the kernel stored: %llu of %d",
	      (unsigned long long)g.ch.cqh->tail, n);
	/* Every park ended by a wake (a hang is the consumer's 10 s failure
	 * above).  Wakes counts pending bytes found: a producer's repeated
	 * wake may set a summary whose pending byte the daemon already
	 * cleared (ring.h allows the repeats), so wakes <= parks. */
	CHECK(g.wakes <= g.parks, "woken %d times, parked only %d", g.wakes, g.parks);
	printf("gpucheck: kernel posted %d puts + flush in %.3f ms (%.2f Mposts/s, host consumer), "
	       "ring parked %d times and woken through the notify page %d times\n",
	       n, secs * 1e3, n / secs / 1e6, g.parks, g.wakes);
	mrc_gpu_chan_release(&g.ch);
	/* Last release: the mapping is no longer registered. */
	cudaError_t e = cudaHostRegister(g.map, g.map_len, cudaHostRegisterDefault);
	CHECK(e == cudaSuccess, "ring mapping still registered after the last release: %s",
	      cudaGetErrorString(e));
	cudaHostUnregister(g.map);
	munmap(g.map, g.map_len);
	munmap(g.nmap, 4096);
}

int main(int argc, char **argv)
{
	int quick = argc > 1 && !strcmp(argv[1], "quick");
	int n = 0;
	struct cudaDeviceProp p;
	if (cudaGetDeviceCount(&n) != cudaSuccess || n < 1) {
		printf("gpucheck: SKIP no CUDA device\n");
		return 77;
	}
	CU(cudaGetDeviceProperties(&p, 0));
	printf("gpucheck: device 0: %s, sm_%d%d, %d devices\n", p.name, p.major, p.minor, n);
	staging(quick ? (8u << 20) : (256u << 20), quick ? 1 : 7);
	kernel_posts(quick ? 1000 : 100000);
	if (failures)
		printf("gpucheck: FAIL (%d checks)\n", failures);
	else
		printf("gpucheck: PASS\n");
	return failures ? 1 : 0;
}
