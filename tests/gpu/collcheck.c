/* GPU-machine check of libmrc-coll on device buffers (docs/coll.md, "GPU
 * buffers"), without cmocka or libev (scripts/gpu-check.sh builds it with
 * gcc and nvcc there):
 *
 *  1. the CUDA reduction kernels (coll/reduce_cuda.cu): every type x op,
 *     out of place and in place, against the host table (coll/reduce.c)
 *     bit for bit on 1,000,003 random elements (values kept where no
 *     product overflows, no NaN), plus the CUDA backend's copy and
 *     staged-reduce paths (coll/memops_cuda.c);
 *  2. with MRC_SOCKET naming a running mrcd: 2 ranks as threads,
 *     mrc_coll_set_memory(AUTO), all-reduce (float32 sum, bfloat16 max,
 *     int64 prod; out of place and in place), a reduce-scatter (device
 *     temporary) and an all-gather on cudaMalloc'd buffers of several
 *     chunks, checked element by element; without MRC_SOCKET: "SKIP".
 * Prints "collcheck: PASS" or "collcheck: FAIL ..." lines; exit 0 only if
 * all passed, 77 without a GPU. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "coll/coll_int.h"
#include "coll/devmem.h"
#include "common/prng.h"

static int failures;
#define CHECK(c, ...) do { if (!(c)) { failures++; printf("collcheck: FAIL %s:%d: ", __FILE__, __LINE__); \
	printf(__VA_ARGS__); printf("\n"); } } while (0)
#define CU(x) do { cudaError_t _e = (x); if (_e != cudaSuccess) { \
	printf("collcheck: FAIL %s: %s\n", #x, cudaGetErrorString(_e)); exit(1); } } while (0)

/* Random elements of a type, in ranges where sums and products of two
 * stay finite. */
static void fill_rand(void *buf, int dt, size_t n, uint64_t *s)
{
	for (size_t i = 0; i < n; i++) {
		uint64_t r = mrc_splitmix64(s);
		double u = (double)(r >> 11) / 9007199254740992.0 * 2 - 1;   /* [-1, 1) */
		switch (dt) {
		case MRC_COLL_INT32: ((int32_t *)buf)[i] = (int32_t)r; break;
		case MRC_COLL_INT64: ((int64_t *)buf)[i] = (int64_t)r; break;
		case MRC_COLL_FLOAT32: ((float *)buf)[i] = (float)(u * 1e3); break;
		case MRC_COLL_FLOAT64: ((double *)buf)[i] = u * 1e6; break;
		case MRC_COLL_FLOAT16: ((uint16_t *)buf)[i] = mrc__coll_f2h((float)(u * 100)); break;
		default: ((uint16_t *)buf)[i] = mrc__coll_f2bf((float)(u * 1e4)); break;
		}
	}
}

static size_t diff_elems(const void *x, const void *y, size_t n, size_t esz)
{
	size_t bad = 0;
	for (size_t i = 0; i < n; i++)
		bad += memcmp((const uint8_t *)x + i * esz, (const uint8_t *)y + i * esz, esz) != 0;
	return bad;
}

static void kernels(size_t n)
{
	const struct mrc__coll_devops *d;
	CHECK(mrc__coll_cuda_devops(&d) == 0, "no CUDA backend");
	if (failures)
		return;
	void *be;
	CHECK(d->open(&be) == 0, "backend open");
	uint64_t seed = 0x636f6c6c;
	for (int dt = 0; dt < MRC_COLL_NTYPES; dt++)
		for (int op = 0; op < MRC_COLL_NOPS; op++) {
			size_t esz = mrc_coll_dtype_size(dt), bytes = n * esz;
			uint8_t *a = malloc(bytes), *b = malloc(bytes), *want = malloc(bytes),
				*got = malloc(bytes);
			fill_rand(a, dt, n, &seed);
			fill_rand(b, dt, n, &seed);
			mrc__coll_reduce(want, a, b, n, dt, op);
			void *da, *db, *dd;
			CU(cudaMalloc(&da, bytes));
			CU(cudaMalloc(&db, bytes));
			CU(cudaMalloc(&dd, bytes));
			CU(cudaMemcpy(da, a, bytes, cudaMemcpyHostToDevice));
			CU(cudaMemcpy(db, b, bytes, cudaMemcpyHostToDevice));
			/* the kernel itself, out of place */
			CU((cudaError_t)mrc__coll_cuda_reduce(dd, da, db, n, dt, op, NULL));
			CU(cudaDeviceSynchronize());
			CU(cudaMemcpy(got, dd, bytes, cudaMemcpyDeviceToHost));
			size_t bad1 = diff_elems(got, want, n, esz);
			/* the backend, in place, b from host memory (a receive slot) */
			CHECK(d->reduce(be, da, da, b, n, dt, op) == 0, "backend reduce");
			CU(cudaMemcpy(got, da, bytes, cudaMemcpyDeviceToHost));
			size_t bad2 = diff_elems(got, want, n, esz);
			/* the backend's copy, device -> host */
			memset(got, 0, bytes);
			CHECK(d->copy(be, got, db, bytes) == 0, "backend copy");
			size_t bad3 = diff_elems(got, b, n, esz);
			CHECK(!bad1 && !bad2 && !bad3, "%s %s: %zu kernel, %zu in place, %zu copy of %zu differ",
			      mrc_coll_dtype_name(dt), mrc_coll_op_name(op), bad1, bad2, bad3, n);
			CHECK(d->where(be, da) == 1 && d->where(be, a) == 0, "where()");
			cudaFree(da), cudaFree(db), cudaFree(dd);
			free(a), free(b), free(want), free(got);
		}
	d->close(be);
	printf("collcheck: reductions: %d types x %d ops on %zu elements: %s\n", MRC_COLL_NTYPES,
	       MRC_COLL_NOPS, n, failures ? "FAIL" : "ok");
}

/* ---- 2. collectives on device buffers over mrcd ------------------------- */
struct rank {
	pthread_t th;
	uint32_t me;
	const char *sock;
	int rc;
	char why[200];
};

static int one(struct mrc_coll *c, struct rank *r, int kind, size_t count, int dt, int op,
	       int inplace)
{
	uint32_t n = 2, me = r->me;
	size_t esz = mrc_coll_dtype_size(dt);
	size_t inb = mrc__coll_in_count(kind, n, count) * esz;
	size_t outb = mrc__coll_out_count(kind, n, count) * esz;
	uint8_t *h = malloc(inb + outb), *din, *dout;
	CU(cudaMalloc((void **)&din, inb));
	CU(cudaMalloc((void **)&dout, outb));
	CU(cudaMemset(dout, 0xa5, outb));
	uint8_t *src = inplace ? dout : din;
	mrc__coll_fill(kind, h, n, me, count, dt, op, 0);
	CU(cudaMemcpy(src, h, inplace ? outb : inb, cudaMemcpyHostToDevice));
	int rc = mrc__coll_call(c, kind, src, dout, count, dt, op, 0);
	size_t bad = 0;
	if (!rc) {
		CU(cudaMemcpy(h, dout, outb, cudaMemcpyDeviceToHost));
		bad = mrc__coll_wrong(kind, h, n, me, count, dt, op, 0);
	}
	cudaFree(din), cudaFree(dout), free(h);
	if (rc || bad)
		snprintf(r->why, sizeof(r->why), "%s %s %s count %zu%s: %s, %zu wrong",
			 mrc__coll_name[kind], mrc_coll_dtype_name(dt), mrc_coll_op_name(op), count,
			 inplace ? " in place" : "", rc ? strerror(-rc) : "ok", bad);
	return rc ? rc : bad ? -EIO : 0;
}

static void *rank_main(void *p)
{
	struct rank *r = p;
	CU(cudaSetDevice(0));
	struct mrc_coll_cfg cfg = { .sock = r->sock, .nranks = 2, .rank = r->me,
		.root_host = MRC_COLL_HOST_ANY, .sid = 7990, .timeout_ms = 30000 };
	struct mrc_coll *c;
	r->rc = mrc_coll_init(&cfg, &c);
	if (r->rc) {
		snprintf(r->why, sizeof(r->why), "mrc_coll_init: %s", strerror(-r->rc));
		return NULL;
	}
	r->rc = mrc_coll_set_memory(c, MRC_COLL_MEM_AUTO);
	if (r->rc)
		snprintf(r->why, sizeof(r->why), "mrc_coll_set_memory: %s", strerror(-r->rc));
	size_t big = 3 * (512u << 10) / 4 + 7;   /* several default chunks of float */
	if (!r->rc)
		r->rc = one(c, r, MRC__C_ALLREDUCE, big, MRC_COLL_FLOAT32, MRC_COLL_SUM, 0);
	if (!r->rc)
		r->rc = one(c, r, MRC__C_ALLREDUCE, big, MRC_COLL_BFLOAT16, MRC_COLL_MAX, 1);
	if (!r->rc)
		r->rc = one(c, r, MRC__C_ALLREDUCE, 1001, MRC_COLL_INT64, MRC_COLL_PROD, 0);
	if (!r->rc)
		r->rc = one(c, r, MRC__C_REDUCE_SCATTER, big, MRC_COLL_FLOAT16, MRC_COLL_SUM, 0);
	if (!r->rc)
		r->rc = one(c, r, MRC__C_ALLGATHER, big, MRC_COLL_INT32, MRC_COLL_SUM, 0);
	mrc_coll_destroy(c);
	return NULL;
}

static void collectives(void)
{
	const char *sock = getenv("MRC_SOCKET");
	if (!sock || !*sock) {
		printf("collcheck: SKIP collectives: no MRC_SOCKET (a running mrcd: scripts/gpu-check.sh "
		       "starts the one of nccl-gpu-kit/ when carried)\n");
		return;
	}
	struct rank R[2];
	for (uint32_t i = 0; i < 2; i++) {
		R[i] = (struct rank){ .me = i, .sock = sock };
		pthread_create(&R[i].th, NULL, rank_main, &R[i]);
	}
	for (uint32_t i = 0; i < 2; i++) {
		pthread_join(R[i].th, NULL);
		CHECK(R[i].rc == 0, "rank %u: %s", i, R[i].why);
	}
	printf("collcheck: collectives on device buffers, 2 ranks over mrcd: %s\n",
	       R[0].rc || R[1].rc ? "FAIL" : "ok");
}

int main(int argc, char **argv)
{
	int n = 0;
	struct cudaDeviceProp p;
	if (cudaGetDeviceCount(&n) != cudaSuccess || n < 1) {
		printf("collcheck: SKIP no CUDA device\n");
		return 77;
	}
	CU(cudaGetDeviceProperties(&p, 0));
	printf("collcheck: device 0: %s, sm_%d%d\n", p.name, p.major, p.minor);
	kernels(argc > 1 && !strcmp(argv[1], "quick") ? 10007 : 1000003);
	collectives();
	printf(failures ? "collcheck: FAIL (%d checks)\n" : "collcheck: PASS\n", failures);
	return failures ? 1 : 0;
}
