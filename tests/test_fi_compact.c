/* Compact EAGERs (docs/libfabric.md "Wire", fi/proto.h): against a
 * loopback mrcd, an eager message to a peer that offered them goes as its
 * payload alone with immediate data (one packet for 4 KiB), tagged ones
 * only while the tag's high bits are the QP's last full header's; remote
 * CQ data and a new high part go full.  Every message arrives with its
 * bytes, tag and data, counted compact or not exactly as the rule says,
 * with FI_MRC_COMPACT=1 (opt-in); with 0 or unset none is.  A raw libmrc peer's malformed
 * compact messages are refused and counted, a well-formed one lands. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <mrc/mrc.h>

#include "tests/support/fi_pair.h"
#include "fi/proto.h"


/* One message from -> to (tagged with tag, or untagged; with remote CQ
 * data when data != 0), checked at the receiver. */
static void one(struct fix_ep *from, fi_addr_t to, struct fix_ep *rcv, size_t len, int tagged,
		uint64_t tag, uint64_t data, uint64_t salt)
{
	static uint8_t sb[MRCFI_EAGER_MAX], rb[MRCFI_SLOT];
	fill(sb, len, salt);
	memset(rb, 0xee, sizeof(rb));
	int rc;
	if (tagged)
		POST(fi_trecv(rcv->ep, rb, len, NULL, FI_ADDR_UNSPEC, tag, 0, &rc));
	else
		POST(fi_recv(rcv->ep, rb, len, NULL, FI_ADDR_UNSPEC, &rc));
	if (tagged && data)
		POST(fi_tinjectdata(from->ep, sb, len, data, to, tag));
	else if (tagged)
		POST(fi_tinject(from->ep, sb, len, to, tag));
	else if (data)
		POST(fi_injectdata(from->ep, sb, len, data, to));
	else
		POST(fi_inject(from->ep, sb, len, to));
	struct fi_cq_tagged_entry e;
	FI_OK(fix_wait_cq(rcv->cq, &e, NULL, NULL));
	assert_int_equal(e.len, len);
	check_bytes(rb, len, salt);
	CHECK(rb[len] == 0xee, "a byte past the message written");
	if (tagged)
		CHECK(e.tag == tag, "tag %#llx arrived as %#llx", (unsigned long long)tag,
		      (unsigned long long)e.tag);
	CHECK(!!(e.flags & FI_REMOTE_CQ_DATA) == !!data && (!data || e.data == data),
	      "remote CQ data %llu", (unsigned long long)data);
}

/* a -> b messages and whether each must have gone compact */
static void run(int compact_on)
{
	struct pair p;
	pair_open(&p, FI_CQ_FORMAT_TAGGED);
	uint64_t hi = rnd() & 0xffffffffull, lo = rnd() & MRCFI_IMM_TAGMASK;
	uint64_t t1 = hi << MRCFI_IMM_TAGBITS | lo;
	uint64_t t2 = (hi + 1) << MRCFI_IMM_TAGBITS | (lo ^ 1);
	/* b -> a first: a hears that b takes compact EAGERs */
	one(&p.b, p.to_a, &p.a, 64, 1, 1, 0, 1);
	assert_int_equal(fix_opt_u64(&p.a, MRCFI_OPT_COMPACT_SENT), 0);
	struct {
		size_t len;
		int tagged;
		uint64_t tag, data;
		int compact;    /* expected */
	} seq[] = {
		{ 4096, 1, t1, 0, 0 },           /* the QP's first tagged: full */
		{ 4096, 1, t1 + 1, 0, 1 },       /* the same high bits: compact */
		{ 4096, 1, t1 ^ 0x155, 0, 1 },
		{ 4096, 1, t1, 7, 0 },           /* remote CQ data: full */
		{ 4096, 1, t2, 0, 0 },           /* new high bits: full, the new base */
		{ 4096, 1, t2 - 1, 0, 1 },
		{ 1, 0, 0, 0, 1 },               /* untagged: compact */
		{ MRCFI_EAGER_MAX, 0, 0, 0, 1 }, /* the largest eager */
		{ 100, 0, 0, 9, 0 },
		{ 0, 1, t2, 0, 1 },
	};
	uint64_t want = 0;
	for (size_t k = 0; k < sizeof(seq) / sizeof(seq[0]); k++) {
		one(&p.a, p.to_b, &p.b, seq[k].len, seq[k].tagged, seq[k].tag, seq[k].data, k + 10);
		want += compact_on && seq[k].compact;
		CHECK(fix_opt_u64(&p.a, MRCFI_OPT_COMPACT_SENT) == want,
		      "message %zu: %llu compact sent, %llu expected", k,
		      (unsigned long long)fix_opt_u64(&p.a, MRCFI_OPT_COMPACT_SENT),
		      (unsigned long long)want);
	}
	assert_int_equal(fix_opt_u64(&p.b, MRCFI_OPT_PROTO_ERRORS), 0);
	pair_close(&p);
}

static void test_compact(void **state)
{
	FIX_NEED();
	setenv("FI_MRC_COMPACT", "1", 1);
	run(1);
	setenv("FI_MRC_COMPACT", "0", 1);
	run(0);
	unsetenv("FI_MRC_COMPACT");
	run(0);                          /* off by default */
}

/* ---- a hostile peer ------------------------------------------------------- */
static void raw_send_imm(struct mrc_qp *qp, struct mrc_mr *mr, size_t n, uint32_t imm, int hdr)
{
	int r = hdr ? mrc_post_send(qp, 1, mrc_mr_key(mr), 0, n)
		    : mrc_post_send_imm(qp, 1, mrc_mr_key(mr), 0, n, imm);
	assert_int_equal(r, 0);
	raw_peer_sent(qp);
}


static void test_compact_hostile(void **state)
{
	FIX_NEED();
	setenv("FI_MRC_COMPACT", "1", 1);
	struct fix f;
	fix_open(&f, CAPS_ALL, FI_AV_TABLE);
	unsetenv("FI_MRC_COMPACT");
	struct fix_ep b;
	fix_ep_open(&f, &b, FI_CQ_FORMAT_TAGGED);
	struct raw_peer peer;
	raw_peer_open(&peer, &b);
	struct mrc_ctx *ctx = peer.ctx;
	struct mrc_mr *mr = peer.mr;
	struct mrc_qp *qp = peer.qp;
	const uint32_t *bname = peer.bname;
	struct mrc_qp_addr remote;
	assert_int_equal(mrc_connect(qp, bname[0], bname[1], 0x1234, &remote), 0);
	uint8_t *rbuf = malloc(MRCFI_SLOT);
	memset(rbuf, 0xee, MRCFI_SLOT);
	int rc;
	uint64_t tag = rnd() & ~(uint64_t)0xffff;
	POST(fi_trecv(b.ep, rbuf, MRCFI_SLOT, NULL, FI_ADDR_UNSPEC, tag, 0, &rc));
	uint8_t *m = mrc_mr_addr(mr);
	uint64_t errs = 0;
	fill(m, MRCFI_SLOT, 4);
	/* 1. tagged before any full tagged header on the QP: no base */
	raw_send_imm(qp, mr, 100, MRCFI_IMM_COMPACT | MRCFI_IMM_TAGGED | 5, 0);
	fix_wait_proto_errors(&b, ++errs);
	/* 2. immediate data without the compact flag */
	raw_send_imm(qp, mr, 100, 5, 0);
	fix_wait_proto_errors(&b, ++errs);
	/* 3. untagged with tag bits */
	raw_send_imm(qp, mr, 100, MRCFI_IMM_COMPACT | 5, 0);
	fix_wait_proto_errors(&b, ++errs);
	/* 4. beyond an eager message */
	raw_send_imm(qp, mr, MRCFI_EAGER_MAX + 1, MRCFI_IMM_COMPACT, 0);
	fix_wait_proto_errors(&b, ++errs);
	/* none completed the receive; its bytes are checked once the good
	 * message completed it (a read now would race with the provider's
	 * progress thread, which owns the buffer while it is posted) */
	struct fi_cq_tagged_entry c;
	assert_int_equal(fi_cq_read(b.cq, &c, 1), -FI_EAGAIN);
	/* a full tagged EAGER of another tag sets the base (unexpected at b),
	 * then a compact one with the receive's low bits lands in it */
	struct mrcfi_hdr h = { .magic = MRCFI_MAGIC, .op = MRCFI_EAGER, .hlen = sizeof(h),
			       .flags = MRCFI_F_TAGGED, .tag = tag | 0xffff, .len = 0 };
	memcpy(m, &h, sizeof(h));
	raw_send_imm(qp, mr, sizeof(h), 0, 1);
	fill(m, MRCFI_SLOT, 4);
	raw_send_imm(qp, mr, 4096, MRCFI_IMM_COMPACT | MRCFI_IMM_TAGGED |
		     ((uint32_t)tag & MRCFI_IMM_TAGMASK), 0);
	FI_OK(fix_wait_cq(b.cq, &c, NULL, NULL));
	assert_int_equal(c.len, 4096);
	assert_int_equal(c.tag, tag);
	check_bytes(rbuf, 4096, 4);
	/* the 8,137 refused bytes would have reached past 4 KiB */
	for (int i = 4096; i < (int)MRCFI_SLOT; i++)
		CHECK(rbuf[i] == 0xee, "byte %d past the message written", i);
	assert_int_equal(fix_opt_u64(&b, MRCFI_OPT_PROTO_ERRORS), errs);
	free(rbuf);
	mrc_close(ctx);
	fix_ep_close(&b);
	fix_close(&f);
}

int main(void)
{
	seed_init("test_fi_compact");
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_compact, reseed),
		cmocka_unit_test_setup(test_compact_hostile, reseed),
	};
	return cmocka_run_group_tests(tests, fix_group_setup, fix_group_teardown);
}
