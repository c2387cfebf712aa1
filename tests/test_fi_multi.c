/* The mrc libfabric provider's FI_MULTI_RECV: one buffer receives many
 * untagged messages back to back (issue 32).  Real mrcd on the loopback
 * fabric; skipped when build/bin/mrcd or the provider is not built. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "tests/support/fi_pair.h"

/* Two endpoints with FI_MULTI_RECV; b's buffers go below min bytes. */
static void multi_pair_open(struct pair *p, size_t min)
{
	fix_open(&p->f, CAPS_ALL | FI_MULTI_RECV, FI_AV_TABLE);
	fix_ep_open(&p->f, &p->a, FI_CQ_FORMAT_TAGGED);
	fix_ep_open(&p->f, &p->b, FI_CQ_FORMAT_TAGGED);
	p->to_a = fix_insert(&p->f, &p->a);
	p->to_b = fix_insert(&p->f, &p->b);
	FI_OK(fi_setopt(&p->b.ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &min, sizeof(min)));
}

/* FI_MULTI_RECV: one 64 KiB buffer takes seven messages back to back,
 * eager and rendezvous, the first three unexpected when it is posted;
 * each completion names where its message starts, every byte is right,
 * the one that leaves less than FI_OPT_MIN_MULTI_RECV (1000) carries
 * FI_MULTI_RECV, nothing is written past the last message, and the next
 * message goes to the next receive. */
static void test_multi_recv(void **state)
{
	FIX_NEED();
	struct pair p;
	multi_pair_open(&p, 1000);
	enum { BUF = 65536, N = 7 };
	static const size_t sz[N] = { 3000, 5000, 20000, 7000, 9000, 6000, 15000 };
	uint8_t *s[N], *buf = malloc(BUF + 64);
	memset(buf, 0xee, BUF + 64);
	for (int i = 0; i < N; i++) {
		s[i] = malloc(sz[i]);
		fill(s[i], sz[i], (uint64_t)i + 900);
	}
	for (int i = 0; i < 3; i++)
		POST(fi_send(p.a.ep, s[i], sz[i], NULL, p.to_b, NULL));
	/* the first is unexpected once a peek sees it */
	int pk;
	for (;;) {
		struct fi_msg m = { .addr = FI_ADDR_UNSPEC, .context = &pk };
		POST(fi_recvmsg(p.b.ep, &m, FI_PEEK));
		struct fi_cq_tagged_entry c;
		struct fi_cq_err_entry e;
		if (fix_wait_cq(p.b.cq, &c, NULL, &e) == 0)
			break;
		assert_int_equal(e.err, FI_ENOMSG);
	}
	int mctx;
	struct iovec v = { .iov_base = buf, .iov_len = BUF };
	struct fi_msg m = { .msg_iov = &v, .iov_count = 1, .addr = FI_ADDR_UNSPEC, .context = &mctx };
	POST(fi_recvmsg(p.b.ep, &m, FI_MULTI_RECV));
	for (int i = 3; i < N; i++)
		POST(fi_send(p.a.ep, s[i], sz[i], NULL, p.to_b, NULL));
	size_t off[N], o = 0;
	for (int i = 0; i < N; i++) {
		off[i] = o;
		o += sz[i];
	}
	int seen[N] = { 0 };
	for (int k = 0; k < N; k++) {
		struct fi_cq_tagged_entry c;
		FI_OK(fix_wait_cq(p.b.cq, &c, NULL, NULL));
		assert_ptr_equal(c.op_context, &mctx);
		int i = 0;
		while (i < N && (uint8_t *)c.buf != buf + off[i])
			i++;
		CHECK(i < N, "completion %d names byte %td of the buffer, where no message starts",
		      k, (uint8_t *)c.buf - buf);
		CHECK(!seen[i]++, "message %d completed twice", i);
		assert_int_equal(c.len, sz[i]);
		assert_true(c.flags & FI_RECV);
		CHECK(!(c.flags & FI_MULTI_RECV) == (i != N - 1),
		      "message %d: FI_MULTI_RECV %s", i, c.flags & FI_MULTI_RECV ? "set" : "missing");
		check_bytes(buf + off[i], sz[i], (uint64_t)i + 900);
	}
	for (size_t i = o; i < BUF + 64; i++)
		CHECK(buf[i] == 0xee, "byte %zu past the last message written", i);
	/* released: the next message takes the next receive */
	uint8_t small[100], got[100];
	int rc;
	fill(small, sizeof(small), 77);
	POST(fi_recv(p.b.ep, got, sizeof(got), NULL, FI_ADDR_UNSPEC, &rc));
	POST(fi_send(p.a.ep, small, sizeof(small), NULL, p.to_b, NULL));
	struct fi_cq_tagged_entry c;
	FI_OK(fix_wait_cq(p.b.cq, &c, NULL, NULL));
	assert_ptr_equal(c.op_context, &rc);
	check_bytes(got, sizeof(got), 77);
	for (int i = 0; i < N + 1; i++)
		FI_OK(fix_wait_cq(p.a.cq, &c, NULL, NULL));
	for (int i = 0; i < N; i++)
		free(s[i]);
	free(buf);
	pair_close(&p);
}

/* A message larger than what a multi-receive buffer has left releases the
 * buffer (a completion of its own: FI_MULTI_RECV, no data) and goes to
 * the next receive, whole. */
static void test_multi_recv_overflow(void **state)
{
	FIX_NEED();
	struct pair p;
	multi_pair_open(&p, 100);
	enum { BUF = 10000, BIG = 12000 };
	uint8_t *buf = malloc(BUF), *big = malloc(BIG), *got = malloc(BIG);
	memset(buf, 0xee, BUF);
	fill(big, BIG, 4242);
	int mctx, rctx;
	struct iovec v = { .iov_base = buf, .iov_len = BUF };
	struct fi_msg m = { .msg_iov = &v, .iov_count = 1, .addr = FI_ADDR_UNSPEC, .context = &mctx };
	POST(fi_recvmsg(p.b.ep, &m, FI_MULTI_RECV));
	POST(fi_recv(p.b.ep, got, BIG, NULL, FI_ADDR_UNSPEC, &rctx));
	POST(fi_send(p.a.ep, big, BIG, NULL, p.to_b, NULL));
	struct fi_cq_tagged_entry c;
	FI_OK(fix_wait_cq(p.b.cq, &c, NULL, NULL));
	assert_ptr_equal(c.op_context, &mctx);
	CHECK(c.flags & FI_MULTI_RECV, "the released buffer's completion lacks FI_MULTI_RECV");
	assert_int_equal(c.len, 0);
	FI_OK(fix_wait_cq(p.b.cq, &c, NULL, NULL));
	assert_ptr_equal(c.op_context, &rctx);
	assert_int_equal(c.len, BIG);
	check_bytes(got, BIG, 4242);
	for (size_t i = 0; i < BUF; i++)
		CHECK(buf[i] == 0xee, "byte %zu of the released buffer written", i);
	FI_OK(fix_wait_cq(p.a.cq, &c, NULL, NULL));
	free(buf);
	free(big);
	free(got);
	pair_close(&p);
}

int main(void)
{
	seed_init("test_fi_multi");
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_multi_recv, reseed),
		cmocka_unit_test_setup(test_multi_recv_overflow, reseed),
	};
	return cmocka_run_group_tests(tests, fix_group_setup, fix_group_teardown);
}
