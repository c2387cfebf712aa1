/* GPU self-test of mrc/gpu.h (needs a GPU; no mrcd, no libmrc): kernels
 * post through channels to rings in mapped host memory, consumed by host
 * threads that stand in for mrcd and follow the same ring rules (acquire
 * of seq, one private copy of the descriptor, release of tail, CQEs
 * published with a release seq, polled-ring parking and the notify-page
 * wake of ring.h "Polled rings").
 *
 *   gpu_selftest [-n POSTS] [-c CHANNELS] [-l LATENCY_POSTS] [-q]
 *
 * Checks (exit 1 on any failure, each printed as "ok ..." / "FAIL ..."):
 *   1. CHANNELS blocks, one producer thread each, POSTS puts/atomics per
 *      channel: the consumer validates every field of every descriptor
 *      (wr_id = index, op, keys, offsets, length, reserved zero); signals
 *      are applied to a mapped semaphore that the kernel waits on.
 *      Reports posts/s from kernels.
 *   2. Post-to-pickup latency seen by the kernel (globaltimer from before
 *      the post until the consumer's tail passes it), consumer polling.
 *   3. The same with a consumer that parks the ring when idle and is woken
 *      through the notify page only: no wake-up may be lost.
 *   4. A stopped consumer: timeout_ns gives -ETIMEDOUT; the abort word set
 *      by the host gives -EPIPE.
 * Indices start near 2^64 (hdr.base) so the wrap is crossed.  -q: small
 * counts (for compute-sanitizer).
 *
 * The same file built as host C++ (g++ -x c++ -DMRC_GPU_CCCL, gpu/host.mk:
 * build/tests/gpu_selftest_cccl, run by make check where CUDA's CCCL
 * headers exist) runs each "kernel" block on a host thread, with gpu.h's
 * cuda::atomic_ref primitives: the same checks without a GPU. */
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mrc/gpu.h"

#ifdef __CUDACC__
#include <cuda_runtime.h>
#define LAUNCH(nb, k, ...) k<<<(nb), 32>>>(__VA_ARGS__)
#define IDLE() do { } while (0)
#else
/* Host build: the few CUDA calls used here as plain memory operations,
 * and a launch as one host thread per block. */
#include <sched.h>
#include <thread>
#include <vector>
#define __global__
#define __device__
struct sim_dim { unsigned x; };
static thread_local sim_dim blockIdx, threadIdx;
typedef int cudaError_t;
enum { cudaSuccess = 0, cudaMemcpyHostToDevice = 1, cudaMemcpyDeviceToHost = 2,
       cudaHostAllocMapped = 0, cudaDeviceMapHost = 0 };
struct cudaDeviceProp { char name[64]; int major, minor; };
static const char *cudaGetErrorString(cudaError_t) { return "allocation failed"; }
static cudaError_t cudaGetDeviceCount(int *n) { *n = 1; return 0; }
static cudaError_t cudaGetDeviceProperties(cudaDeviceProp *p, int)
{
	snprintf(p->name, sizeof(p->name), "host threads, cuda::atomic_ref");
	p->major = p->minor = 0;
	return 0;
}
static cudaError_t cudaSetDeviceFlags(int) { return 0; }
static cudaError_t cudaHostAlloc(void **p, size_t n, int)
{
	*p = aligned_alloc(4096, (n + 4095) & ~(size_t)4095);
	return *p ? 0 : 1;
}
static cudaError_t cudaHostGetDevicePointer(void **d, void *h, int) { *d = h; return 0; }
static cudaError_t cudaMalloc(void **p, size_t n) { *p = calloc(1, n); return *p ? 0 : 1; }
static cudaError_t cudaMemcpy(void *d, const void *s, size_t n, int) { memcpy(d, s, n); return 0; }
static cudaError_t cudaFree(void *p) { free(p); return 0; }
static cudaError_t cudaFreeHost(void *p) { free(p); return 0; }
static std::vector<std::thread> launched;
static cudaError_t cudaDeviceSynchronize(void)
{
	for (auto &t : launched)
		t.join();
	launched.clear();
	return 0;
}
#define LAUNCH(nb, k, ...)                                                      \
	do {                                                                    \
		for (unsigned b_ = 0; b_ < (unsigned)(nb); b_++)                \
			launched.emplace_back([=] { blockIdx.x = b_; threadIdx.x = 0; k(__VA_ARGS__); }); \
	} while (0)
/* Few CPUs: an idle stand-in consumer offers its CPU to the producers. */
#define IDLE() sched_yield()
#endif

#define CK(x)                                                                    \
	do {                                                                     \
		cudaError_t e_ = (x);                                            \
		if (e_ != cudaSuccess) {                                         \
			fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e_)); \
			exit(2);                                                 \
		}                                                                \
	} while (0)

#define SQ_N 256u
#define CQ_N 512u
#define MAXCH 64
#define BASE (0ull - 1000ull)     /* crosses 2^64 after 1000 posts */
#define SIG_EVERY 97u

static int fails;
static void result(int ok, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	printf("%s ", ok ? "ok  " : "FAIL");
	vprintf(fmt, ap);
	printf("\n");
	fflush(stdout);
	va_end(ap);
	fails += !ok;
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* One channel's shared memory: rings, notify page, semaphore, abort. */
struct shm {
	struct mrc_ring_hdr sqh;
	struct mrc_sqe sq[SQ_N];
	struct mrc_ring_hdr cqh;
	struct mrc_cqe cq[CQ_N];
	uint64_t sem;
	uint32_t abort_word;
};

struct cons {
	struct shm *m;              /* host view */
	struct mrc_notify *notify;  /* shared by all channels */
	uint32_t slot;
	int park;                   /* park the ring when idle */
	int stop, hold;             /* end; stop consuming (test 4): atomics */
	uint64_t picked, bad, wakes, parks;
	uint64_t sq_tail, cq_head;
	char why[160];
};

static void shm_init(struct shm *m, uint32_t slot)
{
	memset(m, 0, sizeof(*m));
	/* As mrcd lays them out; sq and cq follow their headers, so the
	 * pointers are taken from the whole object, not the header members. */
	char *base = (char *)m;
	mrc_ring_layout((struct mrc_ring_hdr *)(void *)(base + offsetof(struct shm, sqh)),
			MRC_RING_SQ, SQ_N, sizeof(struct mrc_sqe), MRC_RING_F_POLLED, 0, BASE, slot);
	mrc_ring_layout((struct mrc_ring_hdr *)(void *)(base + offsetof(struct shm, cqh)),
			MRC_RING_CQ, CQ_N, sizeof(struct mrc_cqe), 0, 0, BASE, 0);
}

/* What descriptor index i must hold (the kernel's formula below). */
static int sqe_ok(const struct mrc_sqe *s, uint64_t i, char *why, size_t wl)
{
	int sig = s->op == MRC_SQE_ATOMIC_ADD;
	int ok = s->wr_id == i && s->rsvd0 == 0 && s->rsvd1 == 0 && s->flags == 0 &&
		 (sig ? s->rkey == 77 && s->roff == 0 && s->add == 1 && s->len == 0 && s->lkey == 0
		      : s->op == MRC_SQE_WRITE && s->rkey == 5 && s->lkey == 6 &&
			s->len == 1 + (i % 4093) && s->loff == (i % 64) * 4096 &&
			s->roff == (i * 7) % 65536 && s->add == 0 && s->imm == 0);
	if (!ok)
		snprintf(why, wl, "index %llu: op %u wr_id %llu len %llu loff %llu roff %llu",
			 (unsigned long long)i, s->op, (unsigned long long)s->wr_id,
			 (unsigned long long)s->len, (unsigned long long)s->loff,
			 (unsigned long long)s->roff);
	return ok;
}

static void cq_publish(struct cons *c, const struct mrc_sqe *s)
{
	struct shm *m = c->m;
	while (c->cq_head - __atomic_load_n(&m->cqh.tail, __ATOMIC_ACQUIRE) >= CQ_N)
		if (__atomic_load_n(&c->stop, __ATOMIC_RELAXED))
			return;
	struct mrc_cqe *q = &m->cq[c->cq_head & (CQ_N - 1)];
	q->status = 0;
	q->wr_id = s->wr_id;
	q->byte_len = (uint32_t)s->len;
	q->imm = 0;
	q->qpn = 1;
	q->op = s->op;
	q->flags = 0;
	q->rsvd = 0;
	__atomic_store_n(&q->seq, (uint32_t)(c->cq_head + 1), __ATOMIC_RELEASE);
	c->cq_head++;
}

/* The stand-in daemon of one channel. */
static void *consumer(void *arg)
{
	struct cons *c = (struct cons *)arg;
	struct shm *m = c->m;
	uint64_t idle_since = now_ns();
	while (!__atomic_load_n(&c->stop, __ATOMIC_RELAXED)) {
		if (c->hold) {
			IDLE();
			continue;
		}
		struct mrc_sqe *slot = &m->sq[c->sq_tail & (SQ_N - 1)];
		if (__atomic_load_n(&slot->seq, __ATOMIC_ACQUIRE) == (uint32_t)(c->sq_tail + 1)) {
			struct mrc_sqe s;
			memcpy(&s, slot, sizeof(s));   /* one private copy, as mrcd */
			if (!sqe_ok(&s, c->sq_tail, c->why, sizeof(c->why)))
				c->bad++;
			if (s.op == MRC_SQE_ATOMIC_ADD)
				__atomic_fetch_add(&m->sem, s.add, __ATOMIC_RELEASE);
			c->sq_tail++;
			c->picked++;
			__atomic_store_n(&m->sqh.tail, c->sq_tail, __ATOMIC_RELEASE);
			cq_publish(c, &s);
			idle_since = now_ns();
			continue;
		}
		if (!c->park || now_ns() - idle_since < 20000) {
			IDLE();
			continue;
		}
		/* Park (ring.h "Polled rings"): sleeping, fence, re-check. */
		__atomic_store_n(&m->sqh.sleeping, 1, __ATOMIC_RELAXED);
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		if (__atomic_load_n(&slot->seq, __ATOMIC_ACQUIRE) == (uint32_t)(c->sq_tail + 1)) {
			__atomic_store_n(&m->sqh.sleeping, 0, __ATOMIC_RELAXED);
			continue;
		}
		c->parks++;
		/* Parked: only the notify page may wake us. */
		while (!__atomic_load_n(&c->stop, __ATOMIC_RELAXED)) {
			if (__atomic_load_n(&c->notify->summary, __ATOMIC_RELAXED)) {
				__atomic_store_n(&c->notify->summary, 0, __ATOMIC_RELAXED);
				__atomic_thread_fence(__ATOMIC_SEQ_CST);
			}
			if (__atomic_load_n(&c->notify->pending[c->slot], __ATOMIC_RELAXED)) {
				__atomic_store_n(&c->notify->pending[c->slot], 0, __ATOMIC_RELAXED);
				__atomic_thread_fence(__ATOMIC_SEQ_CST);
				__atomic_store_n(&m->sqh.sleeping, 0, __ATOMIC_RELAXED);
				c->wakes++;
				break;
			}
			IDLE();
		}
		idle_since = now_ns();
	}
	return NULL;
}

/* ---- kernels -------------------------------------------------------------- */
__device__ int post_i(struct mrc_gpu_chan *ch, uint64_t k)
{
	uint64_t i = ch->sq_head;
	(void)k;
	return mrc_gpu_put(ch, 5, (i * 7) % 65536, 6, (i % 64) * 4096, 1 + (i % 4093));
}

/* Test 1: n posts per channel; every SIG_EVERY-th a signal, then a wait
 * for the consumer to have applied it. */
__global__ void k_throughput(struct mrc_gpu_chan *chs, const uint64_t *const *sems, uint64_t n,
			     int *rc)
{
	if (threadIdx.x)
		return;
	struct mrc_gpu_chan ch = chs[blockIdx.x];
	int r = 0;
	uint64_t sig = 0;
	for (uint64_t k = 0; k < n && !r; k++) {
		if (k % SIG_EVERY == SIG_EVERY - 1) {
			r = mrc_gpu_signal(&ch);
			if (!r)
				r = mrc_gpu_wait(&ch, sems[blockIdx.x], ++sig);
		} else {
			r = post_i(&ch, k);
		}
	}
	if (!r)
		r = mrc_gpu_flush(&ch);
	chs[blockIdx.x] = ch;
	rc[blockIdx.x] = r;
}

/* Tests 2 and 3: one post at a time; lat[k] = ns until the tail passed. */
__global__ void k_latency(struct mrc_gpu_chan *chp, uint64_t n, uint64_t gap_ns, uint64_t *lat, int *rc)
{
	struct mrc_gpu_chan ch = *chp;
	int r = 0;
	for (uint64_t k = 0; k < n && !r; k++) {
		uint64_t t = mrc__now_ns();
		while (mrc__now_ns() - t < gap_ns)
			IDLE();
		uint64_t idx = ch.sq_head, t0 = mrc__now_ns();
		r = post_i(&ch, k);
		while (!r && (int64_t)(mrc__ld_acq64(&ch.sqh->tail) - (idx + 1)) < 0) {
			if (mrc__now_ns() - t0 > 1000000000ull)
				r = -ETIMEDOUT;   /* a lost wake-up */
			IDLE();
		}
		lat[k] = mrc__now_ns() - t0;
		if (!r)
			r = mrc_gpu_flush(&ch);
	}
	*chp = ch;
	*rc = r;
}

/* Test 4: posts until an error. */
__global__ void k_until_error(struct mrc_gpu_chan *chp, int *rc)
{
	struct mrc_gpu_chan ch = *chp;
	int r = 0;
	for (uint64_t k = 0; !r && k < (1u << 30); k++)
		r = post_i(&ch, k);
	*chp = ch;
	*rc = r;
}

/* ---- host ----------------------------------------------------------------- */
static void *dptr(void *h)
{
	void *d;
	CK(cudaHostGetDevicePointer(&d, h, 0));
	return d;
}

/* The device channel of host shm m (what mrc_gpu_chan_to_device does for
 * a real QP). */
static struct mrc_gpu_chan dev_chan(struct shm *m, struct mrc_notify *nt, uint32_t slot)
{
	struct shm *d = (struct shm *)dptr(m);
	struct mrc_gpu_chan ch;
	memset(&ch, 0, sizeof(ch));
	ch.sqh = &d->sqh;
	ch.sq = d->sq;
	ch.cqh = &d->cqh;
	ch.cq = d->cq;
	ch.notify = nt ? (struct mrc_notify *)dptr(nt) : NULL;
	ch.notify_slot = slot;
	ch.sq_mask = SQ_N - 1;
	ch.cq_mask = CQ_N - 1;
	ch.qpn = 1;
	ch.sq_head = BASE;
	ch.sq_limit = BASE + SQ_N;
	ch.cq_tail = BASE;
	ch.sem_rkey = 77;          /* the stand-in applies rkey 77's adds to m->sem */
	ch.sem_roff = 0;
	ch.abort = &d->abort_word;
	ch.timeout_ns = 10ull * 1000000000ull;
	return ch;
}

static int cmp64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
#ifdef __CUDACC__
	uint64_t n = 200000, nlat = 5000;
	int nch = 8, o;
#else
	uint64_t n = 20000, nlat = 300;
	int nch = 2, o;
#endif
	while ((o = getopt(argc, argv, "n:c:l:q")) != -1) {
		switch (o) {
		case 'n': n = strtoull(optarg, NULL, 0); break;
		case 'c': nch = atoi(optarg); break;
		case 'l': nlat = strtoull(optarg, NULL, 0); break;
		case 'q': n = 3000; nlat = 200; nch = 2; break;
		default: fprintf(stderr, "usage: gpu_selftest [-n posts] [-c channels] [-l lat] [-q]\n"); return 2;
		}
	}
	if (nch < 1 || nch > MAXCH)
		return 2;
	int ndev = 0;
	if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
		printf("skip: no CUDA device\n");
		return 0;
	}
	cudaDeviceProp prop;
	CK(cudaGetDeviceProperties(&prop, 0));
	printf("gpu_selftest: %s (sm_%d%d), %d channels x %llu posts, %llu latency posts\n",
	       prop.name, prop.major, prop.minor, nch, (unsigned long long)n,
	       (unsigned long long)nlat);
	CK(cudaSetDeviceFlags(cudaDeviceMapHost));

	struct shm *m;
	struct mrc_notify *nt;
	CK(cudaHostAlloc((void **)&m, sizeof(*m) * (nch + 1), cudaHostAllocMapped));
	CK(cudaHostAlloc((void **)&nt, 4096, cudaHostAllocMapped));
	memset(nt, 0, 4096);
	nt->magic = MRC_NOTIFY_MAGIC;
	nt->version = MRC_RING_VERSION;
	nt->slots = 4096 - offsetof(struct mrc_notify, pending);
	struct mrc_gpu_chan *dch, hch[MAXCH + 1];
	int *drc, hrc[MAXCH + 1];
	const uint64_t *hsem[MAXCH], **dsem;
	CK(cudaMalloc((void **)&dsem, sizeof(hsem)));
	CK(cudaMalloc((void **)&dch, sizeof(hch)));
	CK(cudaMalloc((void **)&drc, sizeof(hrc)));
	static struct cons cs[MAXCH + 1];
	pthread_t th[MAXCH + 1];

	/* 1. throughput, every descriptor validated */
	for (int c = 0; c < nch; c++) {
		shm_init(&m[c], (uint32_t)c);
		hch[c] = dev_chan(&m[c], NULL, (uint32_t)c);
		hsem[c] = (const uint64_t *)dptr(&m[c].sem);
		memset(&cs[c], 0, sizeof(cs[c]));
		cs[c].m = &m[c];
		cs[c].notify = nt;
		cs[c].slot = (uint32_t)c;
		cs[c].sq_tail = cs[c].cq_head = BASE;
		pthread_create(&th[c], NULL, consumer, &cs[c]);
	}
	CK(cudaMemcpy(dch, hch, sizeof(hch[0]) * nch, cudaMemcpyHostToDevice));
	CK(cudaMemcpy(dsem, hsem, sizeof(hsem[0]) * nch, cudaMemcpyHostToDevice));
	uint64_t t0 = now_ns();
	LAUNCH(nch, k_throughput, dch, dsem, n, drc);
	CK(cudaDeviceSynchronize());
	double s = (double)(now_ns() - t0) / 1e9;
	CK(cudaMemcpy(hrc, drc, sizeof(int) * nch, cudaMemcpyDeviceToHost));
	CK(cudaMemcpy(hch, dch, sizeof(hch[0]) * nch, cudaMemcpyDeviceToHost));
	uint64_t picked = 0, bad = 0;
	int rcs = 0;
	for (int c = 0; c < nch; c++) {
		__atomic_store_n(&cs[c].stop, 1, __ATOMIC_RELAXED);
		pthread_join(th[c], NULL);
		picked += cs[c].picked;
		bad += cs[c].bad;
		rcs |= hrc[c] != 0 || hch[c].completed != hch[c].posted || hch[c].posted != n;
		if (cs[c].bad)
			printf("     channel %d: %s\n", c, cs[c].why);
	}
	result(!rcs && !bad && picked == n * nch,
	       "throughput: %d kernel producers posted %llu descriptors (%llu picked, %llu malformed, "
	       "indices from 2^64-1000 across the wrap) in %.3f s: %.3g posts/s (%.3g per channel)",
	       nch, (unsigned long long)(n * nch), (unsigned long long)picked,
	       (unsigned long long)bad, s, n * nch / s, n / s);

	/* 2 and 3. latency, consumer polling then parking */
	uint64_t *dlat, *lat = (uint64_t *)malloc(nlat * 8);
	CK(cudaMalloc((void **)&dlat, nlat * 8));
	for (int park = 0; park < 2; park++) {
		struct shm *mm = &m[nch];
		shm_init(mm, 0);
		memset(nt->pending, 0, nt->slots);
		nt->summary = 0;
		hch[0] = dev_chan(mm, park ? nt : NULL, 0);
		struct cons *c = &cs[nch];
		memset(c, 0, sizeof(*c));
		c->m = mm;
		c->notify = nt;
		c->park = park;
		c->sq_tail = c->cq_head = BASE;
		pthread_create(&th[nch], NULL, consumer, c);
		CK(cudaMemcpy(dch, hch, sizeof(hch[0]), cudaMemcpyHostToDevice));
		/* Parking: 100 us between posts, so the ring is parked (20 us). */
		LAUNCH(1, k_latency, dch, nlat, park ? 100000 : 2000, dlat, drc);
		CK(cudaDeviceSynchronize());
		CK(cudaMemcpy(hrc, drc, sizeof(int), cudaMemcpyDeviceToHost));
		CK(cudaMemcpy(lat, dlat, nlat * 8, cudaMemcpyDeviceToHost));
		__atomic_store_n(&c->stop, 1, __ATOMIC_RELAXED);
		pthread_join(th[nch], NULL);
		qsort(lat, nlat, 8, cmp64);
		result(hrc[0] == 0 && !c->bad && c->picked == nlat && (!park || c->wakes > 0),
		       "pickup latency from a kernel, consumer %s: p50 %.2f us, p99 %.2f us, max %.2f us "
		       "(%llu posts; parked %llu times, woken through the notify page %llu times; rc %d)",
		       park ? "parking when idle (woken via notify)" : "polling",
		       lat[nlat / 2] / 1e3, lat[nlat * 99 / 100] / 1e3, lat[nlat - 1] / 1e3,
		       (unsigned long long)nlat, (unsigned long long)c->parks,
		       (unsigned long long)c->wakes, hrc[0]);
	}

	/* 4. a consumer that stops: -ETIMEDOUT, then -EPIPE from the abort word */
	for (int ab = 0; ab < 2; ab++) {
		struct shm *mm = &m[nch];
		shm_init(mm, 0);
		hch[0] = dev_chan(mm, NULL, 0);
		hch[0].timeout_ns = ab ? 0 : 20ull * 1000000;
		struct cons *c = &cs[nch];
		memset(c, 0, sizeof(*c));
		c->m = mm;
		c->notify = nt;
		c->sq_tail = c->cq_head = BASE;
		c->hold = 1;               /* never consumes */
		pthread_create(&th[nch], NULL, consumer, c);
		CK(cudaMemcpy(dch, hch, sizeof(hch[0]), cudaMemcpyHostToDevice));
		LAUNCH(1, k_until_error, dch, drc);
		if (ab) {
			usleep(20000);
			__atomic_store_n(&mm->abort_word, 1, __ATOMIC_RELEASE);
		}
		CK(cudaDeviceSynchronize());
		CK(cudaMemcpy(hrc, drc, sizeof(int), cudaMemcpyDeviceToHost));
		CK(cudaMemcpy(hch, dch, sizeof(hch[0]), cudaMemcpyDeviceToHost));
		__atomic_store_n(&c->stop, 1, __ATOMIC_RELAXED);
		pthread_join(th[nch], NULL);
		int want = ab ? -EPIPE : -ETIMEDOUT;
		result(hrc[0] == want && hch[0].posted == SQ_N,
		       "stopped consumer: %s after filling the %u-entry SQ (rc %d, posted %llu)",
		       ab ? "abort word -> -EPIPE" : "timeout_ns 20 ms -> -ETIMEDOUT", SQ_N, hrc[0],
		       (unsigned long long)hch[0].posted);
	}
	CK(cudaFree(dlat));
	CK(cudaFree(dsem));
	CK(cudaFree(drc));
	CK(cudaFree(dch));
	CK(cudaFreeHost(nt));
	CK(cudaFreeHost(m));
	free(lat);
	printf("gpu_selftest: %s\n", fails ? "FAILED" : "all passed");
	return fails ? 1 : 0;
}
