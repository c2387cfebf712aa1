/* What the libfabric provider's tests (tests/test_fi_*.c) share beyond
 * the fixture (fi_fix.h): a pair of endpoints in one domain, the byte
 * pattern every transfer is checked against, and POST (a post retried
 * while the provider says FI_EAGAIN).  Header-only, as fi_fix.h. */
#ifndef MRC_TESTS_SUPPORT_FI_PAIR_H
#define MRC_TESTS_SUPPORT_FI_PAIR_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <mrc/mrc.h>

#include "fi/proto.h"
#include "tests/support/fi_fix.h"
#include "tests/support/seeded.h"

#define CAPS_ALL (FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC | FI_DIRECTED_RECV | FI_SOURCE)

static inline void fill(uint8_t *b, size_t n, uint64_t salt)
{
	for (size_t i = 0; i < n; i++)
		b[i] = (uint8_t)((i * 131u) ^ (salt * 7u) ^ (i >> 9));
}

static inline void check_bytes(const uint8_t *b, size_t n, uint64_t salt)
{
	for (size_t i = 0; i < n; i++)
		if (b[i] != (uint8_t)((i * 131u) ^ (salt * 7u) ^ (i >> 9)))
			CHECK(0, "byte %zu of %zu differs (salt %llu)", i, n,
			      (unsigned long long)salt);
}

/* ---- send/recv helpers -------------------------------------------------- */
struct pair {
	struct fix f;
	struct fix_ep a, b;
	fi_addr_t to_a, to_b;
};

static inline void pair_open(struct pair *p, enum fi_cq_format fmt)
{
	fix_open(&p->f, CAPS_ALL, FI_AV_TABLE);
	fix_ep_open(&p->f, &p->a, fmt);
	fix_ep_open(&p->f, &p->b, fmt);
	p->to_a = fix_insert(&p->f, &p->a);
	p->to_b = fix_insert(&p->f, &p->b);
}

static inline void pair_close(struct pair *p)
{
	fix_ep_close(&p->a);
	fix_ep_close(&p->b);
	fix_close(&p->f);
}

/* A raw peer of endpoint b for the hostile tests: a libmrc context with a
 * 64 KiB region and one QP, not connected yet; b's name in bname. */
struct raw_peer {
	uint32_t bname[2];
	struct mrc_ctx *ctx;
	struct mrc_mr *mr;
	struct mrc_qp *qp;
};

static inline void raw_peer_open(struct raw_peer *r, const struct fix_ep *b)
{
	memcpy(r->bname, b->name, 8);
	assert_int_equal(mrc_open(NULL, &r->ctx), 0);
	assert_int_equal(mrc_alloc_mr(r->ctx, 65536, MRC_MR_ALL, &r->mr), 0);
	assert_int_equal(mrc_create_qp(r->ctx, NULL, &r->qp), 0);
}

/* Waits for the raw peer's one SEND in flight to complete, and checks it did. */
static inline void raw_peer_sent(struct mrc_qp *qp)
{
	struct mrc_completion c;
	int64_t end = mrcd_spawn_now_ms() + FIX_WAIT_MS;
	int r;
	while ((r = mrc_poll_cq(qp, &c, 1)) == 0)
		CHECK(mrcd_spawn_now_ms() < end, "raw SEND never completed");
	assert_int_equal(r, 1);
	assert_int_equal(c.status, 0);
}

/* An endpoint's counter (the provider's fi_getopt options). */
static inline uint64_t fix_opt_u64(struct fix_ep *e, int name)
{
	uint64_t v = 0;
	size_t len = sizeof(v);
	FI_OK(fi_getopt(&e->ep->fid, FI_OPT_ENDPOINT, name, &v, &len));
	return v;
}

/* Waits until the endpoint counted want protocol errors, and no more. */
static inline void fix_wait_proto_errors(struct fix_ep *e, uint64_t want)
{
	int64_t end = mrcd_spawn_now_ms() + FIX_WAIT_MS;
	while (fix_opt_u64(e, MRCFI_OPT_PROTO_ERRORS) < want)
		CHECK(mrcd_spawn_now_ms() < end, "protocol error %llu never counted",
		      (unsigned long long)want);
	assert_int_equal(fix_opt_u64(e, MRCFI_OPT_PROTO_ERRORS), want);
}

/* posts retried while the provider says FI_EAGAIN (its progress thread
 * frees slots meanwhile) */
#define POST(call) do { int64_t _end = mrcd_spawn_now_ms() + FIX_WAIT_MS; ssize_t _r; \
	while ((_r = (call)) == -FI_EAGAIN) \
		CHECK(mrcd_spawn_now_ms() < _end, "%s stays FI_EAGAIN", #call); \
	if (_r) fail_msg("%s = %zd (%s)", #call, _r, fi_strerror((int)-_r)); } while (0)


#endif
