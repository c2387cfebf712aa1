/* libmrc-gpu's CUDA backend against the real CUDA runtime: without a
 * GPU, its entry points fail with -ENODEV (asserted here, where there is
 * none) or -ENOSYS (built without CUDA); with one, device memory is
 * written through a loopback mrcd by the staged pipeline with real
 * cudaMemcpyAsync copies and lands back in device memory, and
 * mrc_gpu_chan_to_device's registrations are counted and undone.  (The
 * staging logic itself is tested without a GPU in test_gpu_stage.c.) */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <cmocka.h>

#include "mrc/gpu.h"
#include "mrc/mrc.h"
#include "tests/support/mrcd_spawn.h"
#include "tests/support/skip.h"

#ifdef MRC_HAVE_CUDA
#include <cuda_runtime_api.h>
#ifdef MRC_GPUDIRECT
#include "gpu/gpudirect.h"
#endif

static int devices(void)
{
	int n = 0;
	return cudaGetDeviceCount(&n) == cudaSuccess ? n : 0;
}
#define NEED_GPU() do { if (devices() <= 0) MRC_SKIP("no CUDA device"); } while (0)

/* A channel over ring memory of our own (no daemon needed to register
 * it): one mapping holding both rings, a notify page, an abort word. */
struct fake_chan {
	void *map, *notify_map;
	size_t map_len;
	uint32_t abort_word;
	struct mrc_gpu_chan ch;
};

static void fake_chan_make(struct fake_chan *f)
{
	size_t sq = mrc_ring_bytes(64, sizeof(struct mrc_sqe));
	size_t cq = mrc_ring_bytes(128, sizeof(struct mrc_cqe));
	f->map_len = sq + cq;
	f->map = mmap(NULL, sq + cq, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	f->notify_map = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	assert_true(f->map != MAP_FAILED && f->notify_map != MAP_FAILED);
	struct mrc_ring_hdr *sqh = f->map, *cqh = (void *)((char *)f->map + sq);
	memset(&f->ch, 0, sizeof(f->ch));
	f->ch.sqh = sqh;
	f->ch.sq = (void *)(sqh + 1);
	f->ch.cqh = cqh;
	f->ch.cq = (void *)(cqh + 1);
	f->ch.notify = f->notify_map;
	f->ch.notify->slots = 64;
	f->ch.sq_mask = 63;
	f->ch.cq_mask = 127;
	f->ch.abort = &f->abort_word;
}

static void test_no_device(void **state)
{
	if (devices() > 0)
		MRC_SKIP("a CUDA device is present (this tests its absence)");
	struct fake_chan f;
	fake_chan_make(&f);
	struct mrc_gpu_chan d;
	assert_int_equal(mrc_gpu_chan_to_device(&f.ch, &d), -ENODEV);
	struct mrc_gpu_mr *g;
	char buf[64];
	assert_int_equal(mrc_gpu_reg_mr(NULL, buf, sizeof(buf), 0, &g), -ENODEV);
	munmap(f.map, f.map_len);
	munmap(f.notify_map, 4096);
}

static void test_chan_to_device(void **state)
{
	NEED_GPU();
	struct fake_chan f;
	fake_chan_make(&f);
	struct mrc_gpu_chan d1, d2;
	assert_int_equal(mrc_gpu_chan_to_device(&f.ch, &d1), 0);
	assert_int_equal(mrc_gpu_chan_to_device(&f.ch, &d2), 0);   /* counted, not an error */
	assert_true(d1.sq == d2.sq && d1.notify == d2.notify && d1.abort == d2.abort);
	assert_non_null(d1.sqh);
	assert_non_null(d1.cq);
	assert_int_equal((char *)d1.sq - (char *)d1.sqh, (char *)f.ch.sq - (char *)f.ch.sqh);
	assert_int_equal(d1.sq_mask, 63);
	mrc_gpu_chan_release(&f.ch);
	/* Still registered (one reference left): registering again fails. */
	assert_int_equal(cudaHostRegister(f.map, 4096, cudaHostRegisterDefault),
			 cudaErrorHostMemoryAlreadyRegistered);
	(void)cudaGetLastError();
	mrc_gpu_chan_release(&f.ch);
	/* The last release undid it. */
	assert_int_equal(cudaHostRegister(f.map, 4096, cudaHostRegisterDefault), cudaSuccess);
	cudaHostUnregister(f.map);
	munmap(f.map, f.map_len);
	munmap(f.notify_map, 4096);
}

static void test_write_through_mrcd(void **state)
{
	NEED_GPU();
	if (!mrcd_spawn_available())
		MRC_SKIP("%s is not built", mrcd_spawn_bin());
	struct mrcd_proc dm;
	assert_int_equal(mrcd_spawn_start(&dm, NULL), 0);
	struct mrc_ctx *ctx;
	struct mrc_qp *a, *b;
	struct mrc_qp_addr la, lb;
	assert_int_equal(mrc_open(dm.sock, &ctx), 0);
	assert_int_equal(mrc_create_qp(ctx, NULL, &a), 0);
	assert_int_equal(mrc_create_qp(ctx, NULL, &b), 0);
	assert_int_equal(mrc_qp_info_get(a, &la), 0);
	assert_int_equal(mrc_qp_info_get(b, &lb), 0);
	assert_int_equal(mrc_connect_oob(a, &lb), 0);
	assert_int_equal(mrc_connect_oob(b, &la), 0);

	const size_t len = 8 << 20;
	uint8_t *host = malloc(len), *back = malloc(len);
	for (size_t i = 0; i < len; i++)
		host[i] = (uint8_t)(i * 131 + (i >> 12));
	void *dsrc, *ddst;
	assert_int_equal(cudaMalloc(&dsrc, len), cudaSuccess);
	assert_int_equal(cudaMalloc(&ddst, len), cudaSuccess);
	assert_int_equal(cudaMemcpy(dsrc, host, len, cudaMemcpyHostToDevice), cudaSuccess);
	assert_int_equal(cudaMemset(ddst, 0, len), cudaSuccess);
	struct mrc_gpu_mr *src, *dst;
	assert_int_equal(mrc_gpu_reg_mr(ctx, dsrc, len, 0, &src), 0);
	assert_int_equal(mrc_gpu_reg_mr(ctx, ddst, len, MRC_MR_REMOTE_WRITE, &dst), 0);
	assert_int_equal(mrc_gpu_mr_set_chunk(src, 512 << 10), 0);
	assert_int_equal(mrc_gpu_write(a, src, 0, len, mrc_mr_key(mrc_gpu_mr_host(dst)), 0, 30000), 0);
	assert_int_equal(mrc_gpu_mr_to_device(dst, 0, len), 0);
	assert_int_equal(cudaMemcpy(back, ddst, len, cudaMemcpyDeviceToHost), cudaSuccess);
	assert_memory_equal(back, host, len);
	assert_int_equal(mrc_gpu_dereg_mr(src), 0);
	assert_int_equal(mrc_gpu_dereg_mr(dst), 0);
	cudaFree(dsrc);
	cudaFree(ddst);
	free(host);
	free(back);
	mrc_destroy_qp(a);
	mrc_destroy_qp(b);
	mrc_close(ctx);
	mrcd_spawn_stop(&dm);
}

static void test_gpudirect_export(void **state)
{
#ifndef MRC_GPUDIRECT
	MRC_SKIP("built without MRC_GPUDIRECT=1");
#else
	NEED_GPU();
	void *d;
	assert_int_equal(cudaMalloc(&d, 1 << 20), cudaSuccess);
	struct mrc__gpu_dmabuf b;
	int r = mrc__gpu_dmabuf_export((char *)d + 4096 + 256, 8192, &b);
	if (r == -EOPNOTSUPP) {
		cudaFree(d);
		MRC_SKIP("the GPU or its driver has no dmabuf support");
	}
	assert_int_equal(r, 0);
	assert_true(b.fd >= 0);
	assert_int_equal(b.off, 256);
	assert_int_equal(b.span, 12288);
	close(b.fd);
	cudaFree(d);
#endif
}
#endif /* MRC_HAVE_CUDA */

static void test_without_cuda(void **state)
{
#ifdef MRC_HAVE_CUDA
	MRC_SKIP("built with CUDA (this tests the build without it)");
#else
	struct mrc_gpu_chan h, d;
	memset(&h, 0, sizeof(h));
	assert_int_equal(mrc_gpu_chan_to_device(&h, &d), -ENOSYS);
	struct mrc_gpu_mr *g;
	char buf[64];
	assert_int_equal(mrc_gpu_reg_mr(NULL, buf, sizeof(buf), 0, &g), -ENOSYS);
#endif
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_without_cuda),
#ifdef MRC_HAVE_CUDA
		cmocka_unit_test(test_no_device),
		cmocka_unit_test(test_chan_to_device),
		cmocka_unit_test(test_write_through_mrcd),
		cmocka_unit_test(test_gpudirect_export),
#endif
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
