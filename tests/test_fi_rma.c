/* The libfabric provider's memory registration, RMA and atomics
 * (docs/libfabric.md), against a loopback mrcd: MR of application memory,
 * keys, refusals, EQ event; malloc'd and heap memory registered at growing
 * sizes (fabtests' fi_mr_test); RMA write with remote CQ data,
 * multi-chunk, out of bounds; RMA read refused; atomic FI_SUM on u64, every
 * other op refused. */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include <mrc/mrc.h>

#include "tests/support/fi_pair.h"
#include "fi/proto.h"

/* ---- MR, RMA write, atomics ---------------------------------------------- */
static void test_mr(void **state)
{
	FIX_NEED();
	struct fix f;
	fix_open(&f, CAPS_ALL, FI_AV_TABLE);
	struct fid_eq *eq;
	struct fi_eq_attr ea = { .wait_obj = FI_WAIT_FD };
	FI_OK(fi_eq_open(f.fab, &ea, &eq, NULL));
	FI_OK(fi_domain_bind(f.dom, &eq->fid, FI_REG_MR));
	size_t len = 3 * 4096;
	/* its own mapping: the pages are moved into a memfd, and heap pages
	 * would stay shared with a later fork's child (docs/libfabric.md) */
	void *buf = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(buf != MAP_FAILED);
	memset(buf, 7, len);
	struct fid_mr *mr, *mr2;
	int ctx;
	FI_OK(fi_mr_reg(f.dom, buf, len, FI_REMOTE_WRITE | FI_SEND | FI_RECV, 0, 0, 0, &mr, &ctx));
	assert_true(fi_mr_key(mr) != FI_KEY_NOTAVAIL);
	assert_non_null(fi_mr_desc(mr));
	/* contents survive the registration */
	for (size_t i = 0; i < len; i++)
		CHECK(((uint8_t *)buf)[i] == 7, "byte %zu changed by fi_mr_reg", i);
	uint32_t ev;
	struct fi_eq_entry ent;
	assert_int_equal(fi_eq_sread(eq, &ev, &ent, sizeof(ent), FIX_WAIT_MS, 0), sizeof(ent));
	assert_int_equal(ev, FI_MR_COMPLETE);
	assert_ptr_equal(ent.fid, &mr->fid);
	assert_ptr_equal(ent.context, &ctx);
	/* local-only: no key to name remotely, but a registration */
	char small[10];
	FI_OK(fi_mr_reg(f.dom, small, sizeof(small), FI_SEND, 0, 0, 0, &mr2, NULL));
	FI_OK(fi_close(&mr2->fid));
	/* refusals */
	struct iovec iov[2] = { { buf, 10 }, { (char *)buf + 100, 10 } };
	assert_int_equal(fi_mr_regv(f.dom, iov, 2, FI_SEND, 0, 0, 0, &mr2, NULL), -FI_EINVAL);
	struct fi_mr_attr ma = { .mr_iov = iov, .iov_count = 1, .access = FI_SEND,
				 .iface = FI_HMEM_CUDA };
	assert_int_equal(fi_mr_regattr(f.dom, &ma, 0, &mr2), -FI_ENOSYS);
	/* read access registers (fabtests' fi_mr_test tries every
	 * combination, fi_rdm_atomic FI_READ|FI_WRITE): no peer can read,
	 * fi_read is refused where it is asked */
	uint64_t acc[] = { FI_REMOTE_READ, FI_READ, FI_READ | FI_WRITE,
			   FI_REMOTE_READ | FI_REMOTE_WRITE | FI_READ | FI_WRITE };
	for (size_t i = 0; i < sizeof(acc) / sizeof(acc[0]); i++) {
		FI_OK(fi_mr_reg(f.dom, buf, 10, acc[i], 0, 0, 0, &mr2, NULL));
		FI_OK(fi_close(&mr2->fid));
	}
	FI_OK(fi_close(&mr->fid));
	FI_OK(fi_close(&eq->fid));
	fix_close(&f);
	munmap(buf, len);
}

static void test_rma_write(void **state)
{
	FIX_NEED();
	struct pair p;
	pair_open(&p, FI_CQ_FORMAT_DATA);
	size_t len = 3 * MRCFI_CHUNK + 4096;
	uint8_t *tgt = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(tgt != MAP_FAILED);
	memset(tgt, 0xee, len);
	struct fid_mr *mr;
	FI_OK(fi_mr_reg(p.f.dom, tgt, len, FI_REMOTE_WRITE, 0, 0, 0, &mr, NULL));
	uint64_t key = fi_mr_key(mr);
	uint8_t *src = malloc(len);
	fill(src, len, 5);
	/* both directions of connection: a->b (a connects), then b->a
	 * through the QP a made (the key's other half) */
	int wc;
	POST(fi_writedata(p.a.ep, src + 100, 1000, NULL, 0x77, p.to_b, 100, key, &wc));
	struct fi_cq_data_entry d;
	fi_addr_t from;
	assert_int_equal(fi_cq_sreadfrom(p.b.cq, &d, 1, &from, NULL, FIX_WAIT_MS), 1);
	assert_true(d.flags & FI_REMOTE_CQ_DATA);
	assert_true(d.flags & FI_REMOTE_WRITE);
	assert_int_equal(d.data, 0x77);
	assert_int_equal(d.len, 1000);
	assert_int_equal(from, p.to_a);
	assert_memory_equal(tgt + 100, src + 100, 1000);
	assert_int_equal(tgt[99], 0xee);
	assert_int_equal(tgt[1100], 0xee);
	assert_int_equal(fi_cq_sread(p.a.cq, &d, 1, NULL, FIX_WAIT_MS), 1);
	assert_ptr_equal(d.op_context, &wc);
	assert_true(d.flags & FI_WRITE);
	/* multi-chunk, without data: the completion says it is placed */
	POST(fi_write(p.a.ep, src, len, NULL, p.to_b, 0, key, &wc));
	assert_int_equal(fi_cq_sread(p.a.cq, &d, 1, NULL, FIX_WAIT_MS), 1);
	check_bytes(tgt, len, 5);
	/* from b's side, through the QP a connected to b */
	uint8_t *tgt2 = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct fid_mr *mr2;
	FI_OK(fi_mr_reg(p.f.dom, tgt2, 8192, FI_REMOTE_WRITE, 0, 0, 0, &mr2, NULL));
	POST(fi_write(p.b.ep, src, 8192, NULL, p.to_a, 0, fi_mr_key(mr2), &wc));
	assert_int_equal(fi_cq_sread(p.b.cq, &d, 1, NULL, FIX_WAIT_MS), 1);
	check_bytes(tgt2, 8192, 5);
	/* beyond the region: an error completion, nothing written */
	POST(fi_write(p.a.ep, src, 100, NULL, p.to_b, len - 50, key, &wc));
	struct fi_cq_err_entry e;
	assert_int_equal(fi_cq_sread(p.a.cq, &d, 1, NULL, FIX_WAIT_MS), -FI_EAVAIL);
	assert_int_equal(fi_cq_readerr(p.a.cq, &e, 0), 1);
	assert_int_equal(e.err, FI_EACCES);
	/* mrc fails the QP pair at an access violation (as RC does); the
	 * provider reconnects on the next operation to that peer */
	memset(tgt, 0xee, 64);
	for (int k = 0; k < 2; k++) {
		POST(fi_write(p.a.ep, src, 64, NULL, p.to_b, 0, key, &wc));
		ssize_t r = fi_cq_sread(p.a.cq, &d, 1, NULL, FIX_WAIT_MS);
		if (r == -FI_EAVAIL) {
			/* a write posted before the failure was seen */
			assert_int_equal(fi_cq_readerr(p.a.cq, &e, 0), 1);
			CHECK(k == 0, "a second write after the reset failed: %d", e.err);
			continue;
		}
		assert_int_equal(r, 1);
		break;
	}
	check_bytes(tgt, 64, 5);
	char msg[32] = "after the reset", got[32];
	int rc2, sc2;
	POST(fi_trecv(p.b.ep, got, sizeof(got), NULL, FI_ADDR_UNSPEC, 8, 0, &rc2));
	POST(fi_tsend(p.a.ep, msg, sizeof(msg), NULL, p.to_b, 8, &sc2));
	assert_int_equal(fi_cq_sread(p.b.cq, &d, 1, NULL, FIX_WAIT_MS), 1);
	assert_ptr_equal(d.op_context, &rc2);
	assert_string_equal(got, "after the reset");
	assert_int_equal(fi_cq_sread(p.a.cq, &d, 1, NULL, FIX_WAIT_MS), 1);
	/* read: not supported */
	assert_int_equal(fi_read(p.a.ep, src, 8, NULL, p.to_b, 0, key, &wc), -FI_ENOSYS);
	FI_OK(fi_close(&mr->fid));
	FI_OK(fi_close(&mr2->fid));
	pair_close(&p);
	free(src);
	munmap(tgt, len);
	munmap(tgt2, 8192);
}

static void test_atomic(void **state)
{
	FIX_NEED();
	struct pair p;
	pair_open(&p, FI_CQ_FORMAT_CONTEXT);
	uint64_t *cell = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	cell[1] = 1000;
	struct fid_mr *mr;
	FI_OK(fi_mr_reg(p.f.dom, cell, 4096, FI_REMOTE_WRITE, 0, 0, 0, &mr, NULL));
	uint64_t want = 1000;
	for (int i = 0; i < 20; i++) {
		uint64_t v = rnd() % 100000;
		want += v;
		int ctx;
		POST(fi_atomic(p.a.ep, &v, 1, NULL, p.to_b, 8, fi_mr_key(mr), FI_UINT64, FI_SUM, &ctx));
		struct fi_cq_entry c;
		assert_int_equal(fi_cq_sread(p.a.cq, &c, 1, NULL, FIX_WAIT_MS), 1);
		assert_ptr_equal(c.op_context, &ctx);
	}
	assert_int_equal(cell[1], want);
	assert_int_equal(cell[0], 0);
	size_t cnt;
	FI_OK(fi_atomicvalid(p.a.ep, FI_INT64, FI_SUM, &cnt));
	assert_int_equal(fi_atomicvalid(p.a.ep, FI_UINT64, FI_MIN, &cnt), -FI_EOPNOTSUPP);
	assert_int_equal(fi_atomicvalid(p.a.ep, FI_UINT32, FI_SUM, &cnt), -FI_EOPNOTSUPP);
	assert_int_equal(fi_fetch_atomicvalid(p.a.ep, FI_UINT64, FI_SUM, &cnt), -FI_EOPNOTSUPP);
	assert_int_equal(fi_compare_atomicvalid(p.a.ep, FI_UINT64, FI_CSWAP, &cnt), -FI_EOPNOTSUPP);
	uint64_t v = 1, res;
	assert_int_equal(fi_atomic(p.a.ep, &v, 1, NULL, p.to_b, 8, fi_mr_key(mr), FI_UINT64, FI_BOR,
				   NULL), -FI_EOPNOTSUPP);
	assert_int_equal(fi_fetch_atomic(p.a.ep, &v, 1, NULL, &res, NULL, p.to_b, 8, fi_mr_key(mr),
					 FI_UINT64, FI_SUM, NULL), -FI_EOPNOTSUPP);
	struct fi_atomic_attr aa;
	FI_OK(fi_query_atomic(p.f.dom, FI_UINT64, FI_SUM, &aa, 0));
	assert_int_equal(fi_query_atomic(p.f.dom, FI_DOUBLE, FI_SUM, &aa, 0), -FI_EOPNOTSUPP);
	FI_OK(fi_close(&mr->fid));
	pair_close(&p);
	munmap(cell, 4096);
}

static uint8_t *anon8(void)
{
	void *p = mmap(NULL, 8 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(p != MAP_FAILED);
	return p;
}

static void test_mr_malloc(void **state)
{
	FIX_NEED();
	setenv("FI_MRC_MR_MOVE_MAX", "1073741824", 1);   /* off by default */
	struct fix f;
	fix_open(&f, CAPS_ALL, FI_AV_TABLE);
	unsetenv("FI_MRC_MR_MOVE_MAX");
	size_t sizes[] = { 1, 4096, 8 << 20 };
	/* what malloc gives a fresh fabtests process for 8 MiB: an anonymous
	 * private mapping (mmap directly: ASan's malloc does not) */
	uint8_t *buf = anon8();
	assert_non_null(buf);
	memset(buf, 0x5a, 8 << 20);
	uint64_t all = FI_SEND | FI_RECV | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;
	for (size_t k = 0; k < 3; k++) {
		for (uint64_t a = 1; a <= all; a++) {
			if (a & ~all)
				continue;
			struct fid_mr *mr;
			int r = fi_mr_reg(f.dom, buf, sizes[k], a, 0, 0, 0, &mr, NULL);
			CHECK(r == 0, "fi_mr_reg(%zu bytes, access 0x%llx): %d", sizes[k],
			      (unsigned long long)a, r);
			FI_OK(fi_close(&mr->fid));
		}
	}
	CHECK(buf[0] == 0x5a && buf[(8 << 20) - 1] == 0x5a, "contents changed");
	/* mr_reg_free_then_alloc: register, allocate another, free the
	 * first (its moved mapping goes), register the new one */
	for (int i = 0; i < 5; i++) {
		struct fid_mr *mr;
		int r = fi_mr_reg(f.dom, buf, 8 << 20, FI_REMOTE_WRITE, 0, 0, 0, &mr, NULL);
		CHECK(r == 0, "round %d: fi_mr_reg: %d", i, r);
		FI_OK(fi_close(&mr->fid));
		uint8_t *b2 = anon8();
		munmap(buf, 8 << 20);
		buf = b2;
	}
	munmap(buf, 8 << 20);
	fix_close(&f);
}

/* Heap memory registered for remote write at growing sizes over one
 * buffer, as fabtests' fi_mr_test does, with the defaults (only a range's
 * own pages move): a larger range over pages an earlier registration moved
 * moves again, and a WRITE lands at the application's addresses; while a
 * registration holds the moved pages a larger range is -FI_EBUSY, never a
 * copy that registration would miss. */
static void test_mr_heap(void **state)
{
	FIX_NEED();
	struct pair p;
	pair_open(&p, FI_CQ_FORMAT_DATA);
	size_t len = 6 * 4096, extra = 3 * 4096;
	uint8_t *heap = malloc(len + extra);   /* below the mmap threshold */
	assert_non_null(heap);
	uint8_t *buf = heap + 40;               /* not on a page boundary */
	memset(heap, 0xee, len + extra);
	size_t sizes[] = { 1, 4096, len };
	struct fid_mr *mr = NULL;
	for (size_t k = 0; k < 3; k++) {
		if (mr)
			FI_OK(fi_close(&mr->fid));
		int r = fi_mr_reg(p.f.dom, buf, sizes[k], FI_REMOTE_WRITE, 0, 0, 0, &mr, NULL);
		CHECK(r == 0, "fi_mr_reg(%zu bytes) after a smaller one: %d", sizes[k], r);
	}
	assert_int_equal(heap[0], 0xee);
	assert_int_equal(buf[len], 0xee);
	uint8_t *src = malloc(len);
	fill(src, len, 9);
	int wc;
	struct fi_cq_data_entry d;
	POST(fi_write(p.a.ep, src, len, NULL, p.to_b, 0, fi_mr_key(mr), &wc));
	assert_int_equal(fi_cq_sread(p.a.cq, &d, 1, NULL, FIX_WAIT_MS), 1);
	check_bytes(buf, len, 9);
	assert_int_equal(heap[39], 0xee);
	assert_int_equal(buf[len], 0xee);
	struct fid_mr *mr2 = NULL;
	assert_int_equal(fi_mr_reg(p.f.dom, heap, len + extra, FI_REMOTE_WRITE, 0, 0, 0, &mr2,
				   NULL), -FI_EBUSY);
	POST(fi_write(p.a.ep, src, len, NULL, p.to_b, 0, fi_mr_key(mr), &wc));
	assert_int_equal(fi_cq_sread(p.a.cq, &d, 1, NULL, FIX_WAIT_MS), 1);
	check_bytes(buf, len, 9);
	FI_OK(fi_close(&mr->fid));
	/* released: the larger range registers now */
	FI_OK(fi_mr_reg(p.f.dom, heap, len + extra, FI_REMOTE_WRITE, 0, 0, 0, &mr2, NULL));
	FI_OK(fi_close(&mr2->fid));
	check_bytes(buf, len, 9);
	free(src);
	free(heap);
	pair_close(&p);
}

int main(void)
{
	seed_init("test_fi_rma");
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_mr, reseed),
		cmocka_unit_test_setup(test_rma_write, reseed),
		cmocka_unit_test_setup(test_atomic, reseed),
		cmocka_unit_test(test_mr_malloc),
		cmocka_unit_test(test_mr_heap),
	};
	return cmocka_run_group_tests(tests, fix_group_setup, fix_group_teardown);
}
