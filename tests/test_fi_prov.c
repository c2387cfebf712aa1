/* The libfabric provider "mrc" (docs/libfabric.md), opened through
 * libfabric (FI_PROVIDER_PATH = this build's lib/) against a loopback
 * mrcd:
 *  - fi_getinfo honours hints and refuses what it cannot give;
 *  - AV table and map: insert, lookup, remove, straddr, EQ event;
 *  - CQ formats (context, msg, data, tagged), readfrom with FI_SOURCE,
 *    sread with its wait fd, readerr;
 *  - counters (read, add, set, wait, error count);
 *  - MR: registration of application memory, keys, refusals, EQ event;
 *  - msg and tagged send/recv, eager and rendezvous, 0 B..8 MiB, every
 *    byte checked; directed receive; peek/claim/discard; unexpected
 *    messages in order; truncation (eager and rendezvous) as FI_ETRUNC;
 *    inject (no completion, bytes delivered);
 *  - RMA write with remote CQ data, multi-chunk; RMA read refused;
 *  - atomic FI_SUM on u64, every other op refused;
 *  - two endpoints in two processes (fork);
 *  - a hostile peer (a raw libmrc QP) sending malformed messages: each
 *    refused and counted, the receive buffer untouched, the endpoint
 *    still working;
 *  - mrcd killed: a posted receive completes in error, no hang. */
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

#include "tests/support/fi_fix.h"
#include "tests/support/seeded.h"
#include "fi/proto.h"

#define CAPS_ALL (FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC | FI_DIRECTED_RECV | FI_SOURCE)

static void fill(uint8_t *b, size_t n, uint64_t salt)
{
	for (size_t i = 0; i < n; i++)
		b[i] = (uint8_t)((i * 131u) ^ (salt * 7u) ^ (i >> 9));
}

static void check_bytes(const uint8_t *b, size_t n, uint64_t salt)
{
	for (size_t i = 0; i < n; i++)
		if (b[i] != (uint8_t)((i * 131u) ^ (salt * 7u) ^ (i >> 9)))
			CHECK(0, "byte %zu of %zu differs (salt %llu)", i, n,
			      (unsigned long long)salt);
}

/* ---- getinfo --------------------------------------------------------- */
static int getinfo_with(struct fi_info *h, struct fi_info **out)
{
	int r = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, out);
	fi_freeinfo(h);
	return r;
}

static void test_getinfo(void **state)
{
	FIX_NEED();
	struct fi_info *fi;
	FI_OK(getinfo_with(fix_hints(CAPS_ALL), &fi));
	assert_string_equal(fi->fabric_attr->prov_name, "mrc");
	assert_int_equal(fi->ep_attr->type, FI_EP_RDM);
	assert_true((fi->caps & CAPS_ALL) == CAPS_ALL);
	assert_int_equal(fi->domain_attr->mr_mode, FI_MR_PROV_KEY | FI_MR_ALLOCATED);
	assert_int_equal(fi->domain_attr->data_progress, FI_PROGRESS_AUTO);
	assert_int_equal(fi->tx_attr->msg_order & FI_ORDER_SAS, FI_ORDER_SAS);
	assert_true(fi->tx_attr->inject_size >= 4096);
	assert_int_equal(fi->domain_attr->cq_data_size, 8);
	/* the generic tag format: Open MPI's ofi mtl counts its free bits
	 * (0 made it refuse the provider) */
	assert_int_equal(fi->ep_attr->mem_tag_format, 0xaaaaaaaaaaaaaaaaull);
	assert_null(fi->next);
	fi_freeinfo(fi);

	/* RMA read: refused */
	struct fi_info *h = fix_hints(FI_RMA | FI_READ);
	assert_int_equal(getinfo_with(h, &fi), -FI_ENODATA);
	/* a connected endpoint type */
	h = fix_hints(FI_MSG);
	h->ep_attr->type = FI_EP_MSG;
	assert_int_equal(getinfo_with(h, &fi), -FI_ENODATA);
	/* an IP address format */
	h = fix_hints(FI_MSG);
	h->addr_format = FI_SOCKADDR_IN;
	assert_int_equal(getinfo_with(h, &fi), -FI_ENODATA);
	/* a mode bit we do not need is fine; an ordering we do not give is not */
	h = fix_hints(FI_TAGGED);
	h->mode = FI_CONTEXT;
	h->tx_attr->msg_order = FI_ORDER_SAS | FI_ORDER_RAW;
	assert_int_equal(getinfo_with(h, &fi), -FI_ENODATA);
	/* RMA without provider keys cannot work */
	h = fix_hints(FI_RMA);
	h->domain_attr->mr_mode = FI_MR_LOCAL;
	assert_int_equal(getinfo_with(h, &fi), -FI_ENODATA);
	/* ... but tagged messages without them can, minus RMA */
	h = fix_hints(FI_TAGGED);
	h->domain_attr->mr_mode = FI_MR_LOCAL;
	FI_OK(getinfo_with(h, &fi));
	assert_int_equal(fi->caps & (FI_RMA | FI_ATOMIC), 0);
	assert_int_equal(fi->domain_attr->mr_mode, 0);
	fi_freeinfo(fi);
	/* another provider's name, a node to resolve */
	h = fix_hints(FI_MSG);
	free(h->fabric_attr->prov_name);
	h->fabric_attr->prov_name = strdup("verbs");
	assert_int_equal(getinfo_with(h, &fi), -FI_ENODATA);
	h = fix_hints(FI_MSG);
	assert_int_equal(fi_getinfo(FI_VERSION(1, 17), "10.0.0.1", "7000", 0, h, &fi), -FI_ENODATA);
	/* src_addr always, dest_addr from an mrc name (fabtests'
	 * getinfo_test: "source addrlen not set") */
	FI_OK(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &fi));
	assert_int_equal(fi->src_addrlen, 8);
	assert_non_null(fi->src_addr);
	assert_null(fi->dest_addr);
	fi_freeinfo(fi);
	FI_OK(fi_getinfo(FI_VERSION(1, 17), "3", "9228", 0, h, &fi));
	assert_int_equal(fi->dest_addrlen, 8);
	assert_int_equal(((uint32_t *)fi->dest_addr)[0], 3);
	assert_int_equal(((uint32_t *)fi->dest_addr)[1], 9228);
	assert_int_equal(fi->src_addrlen, 8);
	fi_freeinfo(fi);
	FI_OK(fi_getinfo(FI_VERSION(1, 17), "2", NULL, FI_SOURCE, h, &fi));
	assert_int_equal(((uint32_t *)fi->src_addr)[0], 2);
	assert_null(fi->dest_addr);
	fi_freeinfo(fi);
	/* a local port with FI_SOURCE (fabtests' server) is no address to
	 * resolve: accepted, the endpoint takes its own service id */
	FI_OK(fi_getinfo(FI_VERSION(1, 17), NULL, "9228", FI_SOURCE, h, &fi));
	assert_string_equal(fi->fabric_attr->prov_name, "mrc");
	fi_freeinfo(fi);
	fi_freeinfo(h);
}

/* ---- AV ---------------------------------------------------------------- */
static void av_case(enum fi_av_type t)
{
	struct fix f;
	fix_open(&f, FI_TAGGED, t);
	struct fid_eq *eq;
	struct fi_eq_attr ea = { .wait_obj = FI_WAIT_FD };
	uint32_t names[3][2] = { { 0, 0x46490001 }, { 3, 77 }, { 0, 0x46490002 } };
	fi_addr_t a[3];
	assert_int_equal(fi_av_insert(f.av, names, 3, a, 0, NULL), 3);
	for (int i = 0; i < 3; i++) {
		uint32_t got[2] = { 0, 0 };
		size_t len = sizeof(got);
		FI_OK(fi_av_lookup(f.av, a[i], got, &len));
		assert_int_equal(len, 8);
		assert_memory_equal(got, names[i], 8);
	}
	char buf[64];
	size_t bl = sizeof(buf);
	fi_av_straddr(f.av, names[1], buf, &bl);
	assert_string_equal(buf, "mrc://3:77");
	FI_OK(fi_av_remove(f.av, &a[1], 1, 0));
	if (t == FI_AV_TABLE) {
		size_t len = 8;
		uint32_t got[2];
		assert_int_equal(fi_av_lookup(f.av, a[1], got, &len), -FI_EINVAL);
	}
	/* bound to an EQ, an insert completes by an FI_AV_COMPLETE event */
	FI_OK(fi_eq_open(f.fab, &ea, &eq, NULL));
	FI_OK(fi_av_bind(f.av, &eq->fid, 0));
	int ctx;
	fi_addr_t b;
	assert_int_equal(fi_av_insert(f.av, names[1], 1, &b, 0, &ctx), 0);
	uint32_t ev;
	struct fi_eq_entry ent;
	assert_int_equal(fi_eq_sread(eq, &ev, &ent, sizeof(ent), FIX_WAIT_MS, 0), sizeof(ent));
	assert_int_equal(ev, FI_AV_COMPLETE);
	assert_ptr_equal(ent.context, &ctx);
	assert_int_equal(ent.data, 1);
	assert_int_equal(fi_eq_read(eq, &ev, &ent, sizeof(ent), 0), -FI_EAGAIN);
	FI_OK(fi_close(&f.av->fid));
	FI_OK(fi_close(&eq->fid));
	struct fi_av_attr aa = { .type = t };
	FI_OK(fi_av_open(f.dom, &aa, &f.av, NULL));
	fix_close(&f);
}

static void test_av(void **state)
{
	FIX_NEED();
	av_case(FI_AV_TABLE);
	av_case(FI_AV_MAP);
}

/* ---- send/recv helpers -------------------------------------------------- */
struct pair {
	struct fix f;
	struct fix_ep a, b;
	fi_addr_t to_a, to_b;
};

static void pair_open(struct pair *p, enum fi_cq_format fmt)
{
	fix_open(&p->f, CAPS_ALL, FI_AV_TABLE);
	fix_ep_open(&p->f, &p->a, fmt);
	fix_ep_open(&p->f, &p->b, fmt);
	p->to_a = fix_insert(&p->f, &p->a);
	p->to_b = fix_insert(&p->f, &p->b);
}

static void pair_close(struct pair *p)
{
	fix_ep_close(&p->a);
	fix_ep_close(&p->b);
	fix_close(&p->f);
}

/* posts retried while the provider says FI_EAGAIN (its progress thread
 * frees slots meanwhile) */
#define POST(call) do { int64_t _end = mrcd_spawn_now_ms() + FIX_WAIT_MS; ssize_t _r; \
	while ((_r = (call)) == -FI_EAGAIN) \
		CHECK(mrcd_spawn_now_ms() < _end, "%s stays FI_EAGAIN", #call); \
	if (_r) fail_msg("%s = %zd (%s)", #call, _r, fi_strerror((int)-_r)); } while (0)

static void xfer(struct pair *p, size_t len, int tagged, uint64_t salt)
{
	uint8_t *s = malloc(len + 1), *r = malloc(len + 64);
	fill(s, len, salt);
	memset(r, 0xee, len + 64);
	int sc, rc;
	if (tagged) {
		POST(fi_trecv(p->b.ep, r, len, NULL, FI_ADDR_UNSPEC, salt, 0, &rc));
		POST(fi_tsend(p->a.ep, s, len, NULL, p->to_b, salt, &sc));
	} else {
		POST(fi_recv(p->b.ep, r, len, NULL, FI_ADDR_UNSPEC, &rc));
		POST(fi_send(p->a.ep, s, len, NULL, p->to_b, &sc));
	}
	struct fi_cq_tagged_entry c;
	fi_addr_t src = FI_ADDR_NOTAVAIL;
	FI_OK(fix_wait_cq(p->b.cq, &c, &src, NULL));
	assert_ptr_equal(c.op_context, &rc);
	assert_int_equal(c.len, len);
	assert_true(c.flags & FI_RECV);
	assert_true(c.flags & (tagged ? FI_TAGGED : FI_MSG));
	if (tagged)
		assert_int_equal(c.tag, salt);
	assert_int_equal(src, p->to_a);       /* FI_SOURCE */
	FI_OK(fix_wait_cq(p->a.cq, &c, NULL, NULL));
	assert_ptr_equal(c.op_context, &sc);
	assert_true(c.flags & FI_SEND);
	check_bytes(r, len, salt);
	for (int i = 0; i < 64; i++)
		CHECK(r[len + i] == 0xee, "byte %d past the %zu-byte receive written", i, len);
	free(s);
	free(r);
}

static void test_sizes(void **state)
{
	FIX_NEED();
	struct pair p;
	pair_open(&p, FI_CQ_FORMAT_TAGGED);
	const size_t sizes[] = { 0, 1, 64, 4096, MRCFI_EAGER_MAX, MRCFI_EAGER_MAX + 1, 65536,
				 MRCFI_CHUNK - 1, MRCFI_CHUNK, MRCFI_CHUNK + 1,
				 3 * MRCFI_CHUNK + 17, 8u << 20 };
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		xfer(&p, sizes[i], 1, 100 + i);
		xfer(&p, sizes[i], 0, 200 + i);
	}
	/* random sizes in both ranges */
	for (int i = 0; i < 8; i++)
		xfer(&p, rnd() % (2 * MRCFI_CHUNK), (int)(rnd() & 1), 300 + (uint64_t)i);
	pair_close(&p);
}

/* ---- CQ formats ---------------------------------------------------------- */
static void test_cq_formats(void **state)
{
	FIX_NEED();
	const enum fi_cq_format fmts[] = { FI_CQ_FORMAT_CONTEXT, FI_CQ_FORMAT_MSG,
					   FI_CQ_FORMAT_DATA, FI_CQ_FORMAT_TAGGED };
	for (int k = 0; k < 4; k++) {
		struct pair p;
		pair_open(&p, fmts[k]);
		char msg[100], got[100];
		fill((uint8_t *)msg, sizeof(msg), 9);
		int rc, sc;
		POST(fi_trecv(p.b.ep, got, sizeof(got), NULL, FI_ADDR_UNSPEC, 5, 0, &rc));
		POST(fi_tsenddata(p.a.ep, msg, sizeof(msg), NULL, 0xabcdef, p.to_b, 5, &sc));
		union {
			struct fi_cq_entry c;
			struct fi_cq_msg_entry m;
			struct fi_cq_data_entry d;
			struct fi_cq_tagged_entry t;
			uint8_t raw[64];
		} u;
		memset(&u, 0x5a, sizeof(u));
		/* the wait object is an fd that polls readable */
		int fd = -1;
		FI_OK(fi_control(&p.b.cq->fid, FI_GETWAIT, &fd));
		assert_true(fd >= 0);
		ssize_t r = fi_cq_sread(p.b.cq, &u, 1, NULL, FIX_WAIT_MS);
		assert_int_equal(r, 1);
		assert_ptr_equal(u.c.op_context, &rc);
		if (fmts[k] >= FI_CQ_FORMAT_MSG) {
			assert_int_equal(u.m.len, sizeof(msg));
			assert_true(u.m.flags & FI_REMOTE_CQ_DATA);
		}
		if (fmts[k] >= FI_CQ_FORMAT_DATA)
			assert_int_equal(u.d.data, 0xabcdef);
		if (fmts[k] == FI_CQ_FORMAT_TAGGED)
			assert_int_equal(u.t.tag, 5);
		/* nothing beyond the format's size is written */
		static const size_t sz[] = { sizeof(struct fi_cq_entry), sizeof(struct fi_cq_msg_entry),
					     sizeof(struct fi_cq_data_entry),
					     sizeof(struct fi_cq_tagged_entry) };
		for (size_t i = sz[k]; i < sizeof(u.raw); i++)
			assert_int_equal(u.raw[i], 0x5a);
		assert_memory_equal(got, msg, sizeof(msg));
		assert_int_equal(fi_cq_sread(p.a.cq, &u, 1, NULL, FIX_WAIT_MS), 1);
		assert_ptr_equal(u.c.op_context, &sc);
		/* empty: EAGAIN at once, and sread times out */
		assert_int_equal(fi_cq_read(p.b.cq, &u, 1), -FI_EAGAIN);
		int64_t t0 = mrcd_spawn_now_ms();
		assert_int_equal(fi_cq_sread(p.b.cq, &u, 1, NULL, 50), -FI_EAGAIN);
		assert_true(mrcd_spawn_now_ms() - t0 >= 45);
		pair_close(&p);
	}
}

/* ---- truncation and readerr -------------------------------------------- */
static void trunc_case(struct pair *p, size_t len, size_t cap)
{
	uint8_t *s = malloc(len), *r = malloc(cap + 64);
	fill(s, len, len);
	memset(r, 0xee, cap + 64);
	int rc, sc;
	POST(fi_trecv(p->b.ep, r, cap, NULL, FI_ADDR_UNSPEC, 1, 0, &rc));
	POST(fi_tsend(p->a.ep, s, len, NULL, p->to_b, 1, &sc));
	struct fi_cq_tagged_entry c;
	struct fi_cq_err_entry e;
	assert_int_equal(fix_wait_cq(p->b.cq, &c, NULL, &e), -FI_EAVAIL);
	assert_int_equal(e.err, FI_ETRUNC);
	assert_ptr_equal(e.op_context, &rc);
	assert_int_equal(e.olen, len - cap);
	assert_int_equal(e.len, cap);
	check_bytes(r, cap, len);
	for (int i = 0; i < 64; i++)
		CHECK(r[cap + i] == 0xee, "byte %d past a truncated receive written", i);
	/* the sender's side succeeds */
	FI_OK(fix_wait_cq(p->a.cq, &c, NULL, NULL));
	assert_ptr_equal(c.op_context, &sc);
	free(s);
	free(r);
}

static void test_truncation(void **state)
{
	FIX_NEED();
	struct pair p;
	pair_open(&p, FI_CQ_FORMAT_TAGGED);
	trunc_case(&p, 100, 10);                       /* eager */
	trunc_case(&p, 3 * MRCFI_CHUNK, 100000);       /* rendezvous */
	trunc_case(&p, MRCFI_EAGER_MAX + 10, 0);
	xfer(&p, 1000, 1, 7);                          /* still fine */
	pair_close(&p);
}

/* ---- directed receive, unexpected messages, peek/claim -------------------- */
static void test_directed(void **state)
{
	FIX_NEED();
	struct pair p;
	pair_open(&p, FI_CQ_FORMAT_TAGGED);
	struct fix_ep c;
	fix_ep_open(&p.f, &c, FI_CQ_FORMAT_TAGGED);
	fi_addr_t to_c = fix_insert(&p.f, &c);
	char fa[16] = "from a", fc[16] = "from c", r1[16], r2[16];
	int x1, x2, s1, s2;
	/* b wants c's message first: a's (sent first) must wait */
	POST(fi_trecv(p.b.ep, r1, sizeof(r1), NULL, to_c, 3, 0, &x1));
	POST(fi_tsend(p.a.ep, fa, sizeof(fa), NULL, p.to_b, 3, &s1));
	struct fi_cq_tagged_entry e;
	FI_OK(fix_wait_cq(p.a.cq, &e, NULL, NULL));     /* a's is at b, unexpected */
	assert_int_equal(fi_cq_read(p.b.cq, &e, 1), -FI_EAGAIN);
	POST(fi_tsend(c.ep, fc, sizeof(fc), NULL, p.to_b, 3, &s2));
	fi_addr_t src;
	FI_OK(fix_wait_cq(p.b.cq, &e, &src, NULL));
	assert_ptr_equal(e.op_context, &x1);
	assert_int_equal(src, to_c);
	assert_string_equal(r1, "from c");
	POST(fi_trecv(p.b.ep, r2, sizeof(r2), NULL, FI_ADDR_UNSPEC, 3, 0, &x2));
	FI_OK(fix_wait_cq(p.b.cq, &e, &src, NULL));
	assert_int_equal(src, p.to_a);
	assert_string_equal(r2, "from a");
	FI_OK(fix_wait_cq(c.cq, &e, NULL, NULL));
	fix_ep_close(&c);
	pair_close(&p);
}

static void test_unexpected(void **state)
{
	FIX_NEED();
	struct pair p;
	pair_open(&p, FI_CQ_FORMAT_TAGGED);
	enum { N = 12 };
	size_t lens[N];
	uint8_t *bufs[N];
	int ctx[N];
	struct fi_cq_tagged_entry e;
	for (int i = 0; i < N; i++) {
		lens[i] = i % 3 == 0 ? MRCFI_CHUNK + (size_t)i : 100 * (size_t)i;
		bufs[i] = malloc(lens[i] + 1);
		fill(bufs[i], lens[i], (uint64_t)i);
		/* same tag: matched in sending order */
		POST(fi_tsend(p.a.ep, bufs[i], lens[i], NULL, p.to_b, 42, &ctx[i]));
	}
	/* eager ones complete before any receive is posted */
	for (int i = 0; i < N; i++)
		if (i % 3) {
			FI_OK(fix_wait_cq(p.a.cq, &e, NULL, NULL));
			assert_true(e.op_context != &ctx[0]);
		}
	for (int i = 0; i < N; i++) {
		uint8_t *r = malloc(lens[i] + 1);
		int rc;
		POST(fi_trecv(p.b.ep, r, lens[i], NULL, FI_ADDR_UNSPEC, 42, 0, &rc));
		FI_OK(fix_wait_cq(p.b.cq, &e, NULL, NULL));
		assert_int_equal(e.len, lens[i]);
		check_bytes(r, lens[i], (uint64_t)i);
		free(r);
	}
	for (int i = 0; i < N; i++)
		if (i % 3 == 0)
			FI_OK(fix_wait_cq(p.a.cq, &e, NULL, NULL));
	for (int i = 0; i < N; i++)
		free(bufs[i]);
	pair_close(&p);
}

enum { RX_POSTED = 8 };   /* fi/mrcfi.h MRCFI_RX_POSTED: slots per QP */

static uint64_t ep_opt(struct fix_ep *e, int opt)
{
	uint64_t v = 0;
	size_t len = sizeof(v);
	FI_OK(fi_getopt(&e->ep->fid, FI_OPT_ENDPOINT, opt, &v, &len));
	return v;
}


/* One completion, by polling fi_cq_read as fabtests and MPI do. */
static void poll_cq(struct fid_cq *cq)
{
	struct fi_cq_tagged_entry c;
	int64_t end = mrcd_spawn_now_ms() + FIX_WAIT_MS;
	ssize_t r;
	while ((r = fi_cq_read(cq, &c, 1)) == -FI_EAGAIN)
		CHECK(mrcd_spawn_now_ms() < end, "no completion within %d ms (polled)", FIX_WAIT_MS);
	assert_int_equal(r, 1);
}

/* An application polling fi_cq_read is the progress engine: meanwhile
 * the progress thread leaves the CQs unarmed, so mrcd rings no doorbell
 * per message and the thread is not woken to fight the application for
 * the lock and the CPU (docs/libfabric.md "Progress").  200 polled
 * ping-pongs cost it a few armed rounds, not one or more per message
 * (as with FI_MRC_POLL_GRACE_US=0, the default until the Open MPI
 * failure it may cause is understood). */
static void test_polled_progress(void **state)
{
	FIX_NEED();
	struct pair p;
	setenv("FI_MRC_POLL_GRACE_US", "1000", 1);   /* opt-in (fi_mrc(7)) */
	pair_open(&p, FI_CQ_FORMAT_TAGGED);
	unsetenv("FI_MRC_POLL_GRACE_US");
	enum { N = 200, LEN = 64 };
	uint8_t s[LEN], r[LEN];
	xfer(&p, LEN, 1, 7);   /* connected */
	uint64_t armed0 = ep_opt(&p.a, MRCFI_OPT_PROGRESS_ARMED);
	for (int i = 0; i < N; i++) {
		fill(s, LEN, (uint64_t)i);
		POST(fi_trecv(p.b.ep, r, LEN, NULL, FI_ADDR_UNSPEC, 5, 0, NULL));
		POST(fi_tsend(p.a.ep, s, LEN, NULL, p.to_b, 5, NULL));
		poll_cq(p.b.cq);
		poll_cq(p.a.cq);
		check_bytes(r, LEN, (uint64_t)i);
		POST(fi_trecv(p.a.ep, r, LEN, NULL, FI_ADDR_UNSPEC, 6, 0, NULL));
		POST(fi_tsend(p.b.ep, s, LEN, NULL, p.to_a, 6, NULL));
		poll_cq(p.a.cq);
		poll_cq(p.b.cq);
	}
	uint64_t armed = ep_opt(&p.a, MRCFI_OPT_PROGRESS_ARMED) - armed0;
	CHECK(armed < N / 10, "the progress thread armed %llu times in %d polled round trips",
	      (unsigned long long)armed, N);
	pair_close(&p);
}

/* The unexpected queue is bounded (FI_MRC_UNEXP_MAX here 3): past it a
 * message stays in its receive slot, unreposted; with every slot of the
 * QP held the sender waits in RNR.  Nothing is lost: the 32 messages
 * (4 QPs' worth of slots) all arrive, in order, once receives are
 * posted, and the held counter moved. */
static void test_unexpected_bound(void **state)
{
	FIX_NEED();
	setenv("FI_MRC_UNEXP_MAX", "3", 1);
	struct pair p;
	pair_open(&p, FI_CQ_FORMAT_TAGGED);
	unsetenv("FI_MRC_UNEXP_MAX");
	enum { N = 4 * RX_POSTED, LEN = 1000 };
	static uint8_t bufs[N][LEN];
	for (int i = 0; i < N; i++) {
		fill(bufs[i], LEN, (uint64_t)i + 500);
		POST(fi_tsend(p.a.ep, bufs[i], LEN, NULL, p.to_b, 43, NULL));
	}
	/* 3 copied, then one QP's slots held: the rest wait in RNR */
	int64_t end = mrcd_spawn_now_ms() + FIX_WAIT_MS;
	while (ep_opt(&p.b, MRCFI_OPT_UNEXP_HELD) < RX_POSTED)
		CHECK(mrcd_spawn_now_ms() < end, "held %llu < %u after %d ms",
		      (unsigned long long)ep_opt(&p.b, MRCFI_OPT_UNEXP_HELD), RX_POSTED,
		      FIX_WAIT_MS);
	struct fi_cq_tagged_entry e;
	uint8_t r[LEN];
	for (int i = 0; i < N; i++) {
		memset(r, 0, LEN);
		POST(fi_trecv(p.b.ep, r, LEN, NULL, FI_ADDR_UNSPEC, 43, 0, NULL));
		FI_OK(fix_wait_cq(p.b.cq, &e, NULL, NULL));
		assert_int_equal(e.len, LEN);
		check_bytes(r, LEN, (uint64_t)i + 500);
	}
	assert_true(ep_opt(&p.b, MRCFI_OPT_UNEXP_HELD) >= RX_POSTED);
	assert_int_equal(ep_opt(&p.b, MRCFI_OPT_PROTO_ERRORS), 0);
	for (int i = 0; i < N; i++)
		FI_OK(fix_wait_cq(p.a.cq, &e, NULL, NULL));
	pair_close(&p);
}

static ssize_t peek(struct fix_ep *e, uint64_t tag, uint64_t flags, void *ctx, void *buf,
		    size_t len)
{
	struct iovec v = { buf, len };
	struct fi_msg_tagged m = { .msg_iov = &v, .iov_count = buf ? 1 : 0,
				   .addr = FI_ADDR_UNSPEC, .tag = tag, .context = ctx };
	return fi_trecvmsg(e->ep, &m, flags);
}

static void test_peek_claim(void **state)
{
	FIX_NEED();
	struct pair p;
	pair_open(&p, FI_CQ_FORMAT_TAGGED);
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	struct fi_context pc;
	/* nothing there: FI_ENOMSG */
	POST(peek(&p.b, 9, FI_PEEK, &pc, NULL, 0));
	assert_int_equal(fix_wait_cq(p.b.cq, &e, NULL, &err), -FI_EAVAIL);
	assert_int_equal(err.err, FI_ENOMSG);
	char m1[300], m2[50], got[300];
	fill((uint8_t *)m1, sizeof(m1), 1);
	fill((uint8_t *)m2, sizeof(m2), 2);
	int s1, s2;
	POST(fi_tsend(p.a.ep, m1, sizeof(m1), NULL, p.to_b, 9, &s1));
	POST(fi_tsend(p.a.ep, m2, sizeof(m2), NULL, p.to_b, 10, &s2));
	FI_OK(fix_wait_cq(p.a.cq, &e, NULL, NULL));
	FI_OK(fix_wait_cq(p.a.cq, &e, NULL, NULL));
	/* peek, claim, then receive the claimed one */
	struct fi_context cc;
	for (;;) {
		POST(peek(&p.b, 9, FI_PEEK | FI_CLAIM, &cc, NULL, 0));
		if (!fix_wait_cq(p.b.cq, &e, NULL, &err))
			break;
		assert_int_equal(err.err, FI_ENOMSG);   /* not arrived yet */
	}
	assert_ptr_equal(e.op_context, &cc);
	assert_int_equal(e.len, sizeof(m1));
	assert_int_equal(e.tag, 9);
	/* claimed: a plain receive of tag 9 does not take it */
	POST(peek(&p.b, 9, FI_PEEK, &pc, NULL, 0));
	assert_int_equal(fix_wait_cq(p.b.cq, &e, NULL, &err), -FI_EAVAIL);
	assert_int_equal(err.err, FI_ENOMSG);
	POST(peek(&p.b, 9, FI_CLAIM, &cc, got, sizeof(got)));
	FI_OK(fix_wait_cq(p.b.cq, &e, NULL, NULL));
	assert_int_equal(e.len, sizeof(m1));
	assert_memory_equal(got, m1, sizeof(m1));
	/* peek and discard */
	for (;;) {
		POST(peek(&p.b, 10, FI_PEEK | FI_DISCARD, &pc, NULL, 0));
		if (!fix_wait_cq(p.b.cq, &e, NULL, &err))
			break;
		assert_int_equal(err.err, FI_ENOMSG);
	}
	assert_int_equal(e.len, sizeof(m2));
	POST(peek(&p.b, 10, FI_PEEK, &pc, NULL, 0));
	assert_int_equal(fix_wait_cq(p.b.cq, &e, NULL, &err), -FI_EAVAIL);
	assert_int_equal(err.err, FI_ENOMSG);
	/* a discarded rendezvous message releases its sender */
	size_t big = 2 * MRCFI_CHUNK;
	uint8_t *bb = malloc(big);
	int s3;
	POST(fi_tsend(p.a.ep, bb, big, NULL, p.to_b, 11, &s3));
	for (;;) {
		POST(peek(&p.b, 11, FI_PEEK | FI_DISCARD, &pc, NULL, 0));
		if (!fix_wait_cq(p.b.cq, &e, NULL, &err))
			break;
		assert_int_equal(err.err, FI_ENOMSG);
	}
	assert_int_equal(e.len, big);
	FI_OK(fix_wait_cq(p.a.cq, &e, NULL, NULL));
	assert_ptr_equal(e.op_context, &s3);
	free(bb);
	/* cancel a posted receive */
	int rc;
	POST(fi_trecv(p.b.ep, got, 10, NULL, FI_ADDR_UNSPEC, 77, 0, &rc));
	FI_OK(fi_cancel(&p.b.ep->fid, &rc));
	assert_int_equal(fix_wait_cq(p.b.cq, &e, NULL, &err), -FI_EAVAIL);
	assert_int_equal(err.err, FI_ECANCELED);
	assert_ptr_equal(err.op_context, &rc);
	pair_close(&p);
}

/* ---- inject ------------------------------------------------------------- */
static void test_inject(void **state)
{
	FIX_NEED();
	struct pair p;
	pair_open(&p, FI_CQ_FORMAT_TAGGED);
	char m[64], got[64];
	struct fi_cq_tagged_entry e;
	for (int k = 0; k < 3; k++) {
		fill((uint8_t *)m, sizeof(m), (uint64_t)k);
		int rc;
		POST(fi_trecv(p.b.ep, got, sizeof(got), NULL, FI_ADDR_UNSPEC, 4, 0, &rc));
		if (k == 0)
			POST(fi_tinject(p.a.ep, m, sizeof(m), p.to_b, 4));
		else if (k == 1)
			POST(fi_tinjectdata(p.a.ep, m, sizeof(m), 99, p.to_b, 4));
		else {
			struct iovec v = { m, sizeof(m) };
			struct fi_msg_tagged mt = { .msg_iov = &v, .iov_count = 1, .addr = p.to_b,
						    .tag = 4 };
			POST(fi_tsendmsg(p.a.ep, &mt, FI_INJECT));
		}
		memset(m, 0, sizeof(m));       /* the buffer is free at return */
		FI_OK(fix_wait_cq(p.b.cq, &e, NULL, NULL));
		check_bytes((uint8_t *)got, sizeof(got), (uint64_t)k);
		if (k == 1)
			assert_int_equal(e.data, 99);
	}
	/* msg inject too */
	int rc;
	POST(fi_recv(p.b.ep, got, sizeof(got), NULL, FI_ADDR_UNSPEC, &rc));
	fill((uint8_t *)m, sizeof(m), 5);
	POST(fi_inject(p.a.ep, m, sizeof(m), p.to_b));
	FI_OK(fix_wait_cq(p.b.cq, &e, NULL, NULL));
	check_bytes((uint8_t *)got, sizeof(got), 5);
	/* an inject generates no completion at the sender; too large: refused */
	assert_int_equal(fi_cq_read(p.a.cq, &e, 1), -FI_EAGAIN);
	static char big[MRCFI_EAGER_MAX + 1];
	assert_int_equal(fi_inject(p.a.ep, big, sizeof(big), p.to_b), -FI_EINVAL);
	pair_close(&p);
}

/* ---- counters ------------------------------------------------------------- */
static void test_counters(void **state)
{
	FIX_NEED();
	struct fix f;
	fix_open(&f, CAPS_ALL, FI_AV_MAP);
	struct fix_ep a, b;
	struct fid_cntr *cs, *cr;
	struct fi_cntr_attr ca = { .events = FI_CNTR_EVENTS_COMP, .wait_obj = FI_WAIT_UNSPEC };
	FI_OK(fi_cntr_open(f.dom, &ca, &cs, NULL));
	FI_OK(fi_cntr_open(f.dom, &ca, &cr, NULL));
	memset(&a, 0, sizeof(a));
	FI_OK(fi_endpoint(f.dom, f.info, &a.ep, NULL));
	FI_OK(fi_ep_bind(a.ep, &f.av->fid, 0));
	FI_OK(fi_ep_bind(a.ep, &cs->fid, FI_SEND));
	assert_int_equal(fi_ep_bind(a.ep, &cs->fid, FI_REMOTE_WRITE), -FI_ENOSYS);
	FI_OK(fi_enable(a.ep));
	fix_ep_open(&f, &b, FI_CQ_FORMAT_CONTEXT);
	FI_OK(fi_ep_bind(b.ep, &cr->fid, FI_RECV));
	fi_addr_t to_b = fix_insert(&f, &b);
	char m[16] = "x", got[5][16];
	for (int i = 0; i < 5; i++)
		POST(fi_recv(b.ep, got[i], sizeof(got[i]), NULL, FI_ADDR_UNSPEC, NULL));
	for (int i = 0; i < 5; i++)
		POST(fi_send(a.ep, m, sizeof(m), NULL, to_b, NULL));
	FI_OK(fi_cntr_wait(cs, 5, FIX_WAIT_MS));
	FI_OK(fi_cntr_wait(cr, 5, FIX_WAIT_MS));
	assert_int_equal(fi_cntr_read(cs), 5);
	assert_int_equal(fi_cntr_readerr(cs), 0);
	assert_int_equal(fi_cntr_wait(cs, 6, 30), -FI_ETIMEDOUT);
	FI_OK(fi_cntr_add(cs, 3));
	assert_int_equal(fi_cntr_read(cs), 8);
	FI_OK(fi_cntr_set(cs, 1));
	assert_int_equal(fi_cntr_read(cs), 1);
	/* a truncated receive counts as an error */
	char big[100] = { 0 };
	POST(fi_recv(b.ep, got[0], 4, NULL, FI_ADDR_UNSPEC, NULL));
	POST(fi_send(a.ep, big, sizeof(big), NULL, to_b, NULL));
	int64_t end = mrcd_spawn_now_ms() + FIX_WAIT_MS;
	while (fi_cntr_readerr(cr) != 1)
		CHECK(mrcd_spawn_now_ms() < end, "truncation not counted");
	FI_OK(fi_close(&a.ep->fid));
	fix_ep_close(&b);
	FI_OK(fi_close(&cs->fid));
	FI_OK(fi_close(&cr->fid));
	fix_close(&f);
}

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

/* ---- two processes ------------------------------------------------------- */
static int child_main(int wfd, int rfd)
{
	struct fix f;
	fix_open(&f, CAPS_ALL, FI_AV_TABLE);
	struct fix_ep e;
	fix_ep_open(&f, &e, FI_CQ_FORMAT_TAGGED);
	if (write(wfd, e.name, e.namelen) != (ssize_t)e.namelen)
		return 2;
	char peer[64];
	if (read(rfd, peer, 8) != 8)
		return 3;
	fi_addr_t pa;
	if (fi_av_insert(f.av, peer, 1, &pa, 0, NULL) != 1)
		return 4;
	size_t len = 2 * MRCFI_CHUNK + 5;
	uint8_t *b = malloc(len);
	for (int i = 0; i < 4; i++) {
		size_t n = i % 2 ? len : 1000;
		if (fi_trecv(e.ep, b, n, NULL, pa, (uint64_t)i, 0, NULL))
			return 5;
		struct fi_cq_tagged_entry c;
		if (fi_cq_sread(e.cq, &c, 1, NULL, FIX_WAIT_MS) != 1 || c.len != n)
			return 6;
		/* echo it back */
		ssize_t r;
		while ((r = fi_tsend(e.ep, b, n, NULL, pa, (uint64_t)i + 100, NULL)) == -FI_EAGAIN)
			;
		if (r || fi_cq_sread(e.cq, &c, 1, NULL, FIX_WAIT_MS) != 1)
			return 7;
	}
	free(b);
	fix_ep_close(&e);
	fix_close(&f);
	return 0;
}

static void test_two_processes(void **state)
{
	FIX_NEED();
	int up[2], down[2];
	assert_int_equal(pipe(up), 0);
	assert_int_equal(pipe(down), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(child_main(up[1], down[0]));
	struct fix f;
	fix_open(&f, CAPS_ALL, FI_AV_TABLE);
	struct fix_ep e;
	fix_ep_open(&f, &e, FI_CQ_FORMAT_TAGGED);
	char peer[8];
	assert_int_equal(read(up[0], peer, 8), 8);
	assert_int_equal(write(down[1], e.name, 8), 8);
	fi_addr_t pa;
	assert_int_equal(fi_av_insert(f.av, peer, 1, &pa, 0, NULL), 1);
	size_t len = 2 * MRCFI_CHUNK + 5;
	uint8_t *s = malloc(len), *r = malloc(len);
	for (int i = 0; i < 4; i++) {
		size_t n = i % 2 ? len : 1000;
		fill(s, n, (uint64_t)i);
		memset(r, 0, n);
		POST(fi_trecv(e.ep, r, n, NULL, pa, (uint64_t)i + 100, 0, NULL));
		POST(fi_tsend(e.ep, s, n, NULL, pa, (uint64_t)i, NULL));
		struct fi_cq_tagged_entry c;
		fi_addr_t src;
		int got_recv = 0;
		for (int k = 0; k < 2; k++) {
			FI_OK(fix_wait_cq(e.cq, &c, &src, NULL));
			if (c.flags & FI_RECV) {
				got_recv = 1;
				assert_int_equal(src, pa);
				assert_int_equal(c.len, n);
			}
		}
		assert_true(got_recv);
		check_bytes(r, n, (uint64_t)i);
	}
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child failed: status %d", st);
	free(s);
	free(r);
	fix_ep_close(&e);
	fix_close(&f);
}

/* A process that sends its first message to a peer and closes at once
 * (fabtests' fi_rdm and fi_cq_data clients): the send completes early
 * (inject-complete), so fi_close(ep) must let it go out before the QPs
 * go (FI_MRC_LINGER_MS).  With FI_MRC_LINGER_MS=0 the message was lost. */
static int sender_main(int wfd, int rfd)
{
	struct fix f;
	fix_open(&f, CAPS_ALL, FI_AV_TABLE);
	struct fix_ep e;
	fix_ep_open(&f, &e, FI_CQ_FORMAT_TAGGED);
	char peer[8];
	if (read(rfd, peer, 8) != 8)
		return 3;
	fi_addr_t pa;
	if (fi_av_insert(f.av, peer, 1, &pa, 0, NULL) != 1)
		return 4;
	uint8_t b[1000];
	fill(b, sizeof(b), 77);
	ssize_t r;
	while ((r = fi_tsenddata(e.ep, b, sizeof(b), NULL, 0xda7a, pa, 77, NULL)) == -FI_EAGAIN)
		;
	struct fi_cq_tagged_entry c;
	if (r || fi_cq_sread(e.cq, &c, 1, NULL, FIX_WAIT_MS) != 1)
		return 5;
	fix_ep_close(&e);
	fix_close(&f);
	return 0;
}

static void test_send_then_close(void **state)
{
	FIX_NEED();
	int up[2], down[2];
	assert_int_equal(pipe(up), 0);
	assert_int_equal(pipe(down), 0);
	pid_t pid = fork();   /* before the domain: its thread and locks */
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(sender_main(up[1], down[0]));
	struct fix f;
	fix_open(&f, CAPS_ALL, FI_AV_TABLE);
	struct fix_ep e;
	fix_ep_open(&f, &e, FI_CQ_FORMAT_TAGGED);
	assert_int_equal(write(down[1], e.name, 8), 8);
	/* the child is gone before we post: the message waits unexpected */
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "sender failed: status %d", st);
	uint8_t r[1000];
	POST(fi_trecv(e.ep, r, sizeof(r), NULL, FI_ADDR_UNSPEC, 77, 0, NULL));
	struct fi_cq_tagged_entry c;
	FI_OK(fix_wait_cq(e.cq, &c, NULL, NULL));
	assert_true(c.flags & FI_RECV);
	assert_int_equal(c.len, sizeof(r));
	assert_int_equal(c.data, 0xda7a);
	check_bytes(r, sizeof(r), 77);
	fix_ep_close(&e);
	fix_close(&f);
}

/* fabtests' fi_mr_test: one malloc'd 8 MiB buffer (mmap'd by malloc)
 * registered with every access combination at growing sizes, 1 byte
 * first: remote write moves pages to a memfd, and the first move must
 * not leave the buffer half moved (the 4 KiB registration failed). */
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

/* ---- a hostile peer ------------------------------------------------------- */
static uint64_t proto_errors(struct fix_ep *e)
{
	uint64_t v = 0;
	size_t len = sizeof(v);
	FI_OK(fi_getopt(&e->ep->fid, FI_OPT_ENDPOINT, MRCFI_OPT_PROTO_ERRORS, &v, &len));
	return v;
}

static void raw_send(struct mrc_qp *qp, struct mrc_mr *mr, const void *msg, size_t n)
{
	memcpy(mrc_mr_addr(mr), msg, n);
	assert_int_equal(mrc_post_send(qp, 1, mrc_mr_key(mr), 0, n), 0);
	struct mrc_completion c;
	int64_t end = mrcd_spawn_now_ms() + FIX_WAIT_MS;
	int r;
	while ((r = mrc_poll_cq(qp, &c, 1)) == 0)
		CHECK(mrcd_spawn_now_ms() < end, "raw SEND never completed");
	assert_int_equal(r, 1);
	assert_int_equal(c.status, 0);
}

static void wait_errors(struct fix_ep *e, uint64_t want)
{
	int64_t end = mrcd_spawn_now_ms() + FIX_WAIT_MS;
	while (proto_errors(e) < want)
		CHECK(mrcd_spawn_now_ms() < end, "protocol error %llu never counted",
		      (unsigned long long)want);
	assert_int_equal(proto_errors(e), want);
}

static void test_hostile(void **state)
{
	FIX_NEED();
	struct fix f;
	fix_open(&f, CAPS_ALL, FI_AV_TABLE);
	struct fix_ep b;
	fix_ep_open(&f, &b, FI_CQ_FORMAT_TAGGED);
	uint32_t bname[2];
	memcpy(bname, b.name, 8);
	/* the raw peer: a libmrc QP connected to b's service id, calling
	 * itself service 0x1234 */
	struct mrc_ctx *ctx;
	assert_int_equal(mrc_open(NULL, &ctx), 0);
	struct mrc_mr *mr;
	assert_int_equal(mrc_alloc_mr(ctx, 65536, MRC_MR_ALL, &mr), 0);
	struct mrc_qp *qp;
	assert_int_equal(mrc_create_qp(ctx, NULL, &qp), 0);
	for (int k = 0; k < 8; k++)
		assert_int_equal(mrc_post_recv(qp, 100 + (uint64_t)k, mrc_mr_key(mr), 32768, 8192), 0);
	struct mrc_qp_addr remote;
	assert_int_equal(mrc_connect(qp, bname[0], bname[1], 0x1234, &remote), 0);
	uint32_t rawname[2] = { bname[0], 0x1234 };
	fi_addr_t raw_addr;
	assert_int_equal(fi_av_insert(f.av, rawname, 1, &raw_addr, 0, NULL), 1);

	uint8_t *rbuf = malloc(256);
	memset(rbuf, 0xee, 256);
	int rc;
	POST(fi_trecv(b.ep, rbuf, 128, NULL, FI_ADDR_UNSPEC, 5, 0, &rc));
	uint8_t msg[MRCFI_SLOT];
	struct mrcfi_hdr *h = (struct mrcfi_hdr *)msg;
	uint64_t errs = 0;
	/* 1. bad magic */
	memset(msg, 0, sizeof(msg));
	*h = (struct mrcfi_hdr){ .magic = 0xdeadbeef, .op = MRCFI_EAGER, .hlen = sizeof(*h),
				 .flags = MRCFI_F_TAGGED, .tag = 5, .len = 16 };
	raw_send(qp, mr, msg, sizeof(*h) + 16);
	wait_errors(&b, ++errs);
	/* 2. an eager length beyond what was written */
	h->magic = MRCFI_MAGIC;
	h->len = 4000;
	raw_send(qp, mr, msg, sizeof(*h) + 16);
	wait_errors(&b, ++errs);
	/* 3. a header shorter than a header */
	raw_send(qp, mr, msg, 20);
	wait_errors(&b, ++errs);
	/* 4. rendezvous data for a receive never granted */
	*h = (struct mrcfi_hdr){ .magic = MRCFI_MAGIC, .op = MRCFI_RZDATA, .hlen = sizeof(*h),
				 .rreq = 1, .len = 64 };
	raw_send(qp, mr, msg, sizeof(*h));
	wait_errors(&b, ++errs);
	/* 5. a CTS for a send that does not exist */
	*h = (struct mrcfi_hdr){ .magic = MRCFI_MAGIC, .op = MRCFI_CTS, .hlen = sizeof(*h),
				 .sreq = 7, .len = 64, .rkey = 1 };
	raw_send(qp, mr, msg, sizeof(*h));
	wait_errors(&b, ++errs);
	/* 6. unknown op, unknown flags */
	*h = (struct mrcfi_hdr){ .magic = MRCFI_MAGIC, .op = 9, .hlen = sizeof(*h) };
	raw_send(qp, mr, msg, sizeof(*h));
	wait_errors(&b, ++errs);
	/* none of it reached the posted receive */
	struct fi_cq_tagged_entry c;
	assert_int_equal(fi_cq_read(b.cq, &c, 1), -FI_EAGAIN);
	for (int i = 0; i < 256; i++)
		CHECK(rbuf[i] == 0xee, "byte %d of the receive written by a refused message", i);
	/* 7. a rendezvous whose data claims more than the chunk granted */
	*h = (struct mrcfi_hdr){ .magic = MRCFI_MAGIC, .op = MRCFI_RTS, .hlen = sizeof(*h),
				 .flags = MRCFI_F_TAGGED, .tag = 5, .sreq = 77, .total = 100 };
	raw_send(qp, mr, msg, sizeof(*h));
	/* b answers with a CTS to the raw QP */
	struct mrc_completion rc2;
	int64_t end = mrcd_spawn_now_ms() + FIX_WAIT_MS;
	int n;
	while ((n = mrc_poll_cq(qp, &rc2, 1)) == 0)
		CHECK(mrcd_spawn_now_ms() < end, "no CTS came back");
	assert_int_equal(n, 1);
	assert_int_equal(rc2.op, MRC_CQE_RECV);
	struct mrcfi_hdr cts;
	assert_int_equal(mrcfi_hdr_parse((uint8_t *)mrc_mr_addr(mr) + 32768, rc2.byte_len, &cts), 0);
	assert_int_equal(cts.op, MRCFI_CTS);
	assert_int_equal(cts.sreq, 77);
	assert_int_equal(cts.len, 100);
	*h = (struct mrcfi_hdr){ .magic = MRCFI_MAGIC, .op = MRCFI_RZDATA, .hlen = sizeof(*h),
				 .sreq = 77, .rreq = cts.rreq, .len = 5000 };
	raw_send(qp, mr, msg, sizeof(*h));
	wait_errors(&b, ++errs);
	/* the right data: WRITE into the granted chunk, then RZDATA */
	fill((uint8_t *)mrc_mr_addr(mr) + 1024, 100, 3);
	assert_int_equal(mrc_post_write(qp, 2, mrc_mr_key(mr), 1024, 100, cts.rkey, cts.roff), 0);
	h->len = 100;
	raw_send(qp, mr, msg, sizeof(*h));
	struct fi_cq_err_entry ee;
	end = mrcd_spawn_now_ms() + FIX_WAIT_MS;
	ssize_t r;
	while ((r = fi_cq_read(b.cq, &c, 1)) == -FI_EAGAIN)
		CHECK(mrcd_spawn_now_ms() < end, "the good rendezvous never completed");
	if (r == -FI_EAVAIL) {
		fi_cq_readerr(b.cq, &ee, 0);
		fail_msg("error %d", ee.err);
	}
	assert_int_equal(r, 1);
	assert_int_equal(c.len, 100);
	check_bytes(rbuf, 100, 3);
	for (int i = 100; i < 256; i++)
		CHECK(rbuf[i] == 0xee, "byte %d past the message written", i);
	assert_int_equal(proto_errors(&b), errs);
	free(rbuf);
	mrc_close(ctx);
	fix_ep_close(&b);
	fix_close(&f);
}

/* ---- a dead mrcd ---------------------------------------------------------- */
static void test_dead_daemon(void **state)
{
	FIX_NEED();
	struct mrcd_proc d;
	assert_int_equal(mrcd_spawn_start(&d, NULL), 0);
	setenv("MRC_SOCKET", d.sock, 1);
	struct fix f;
	fix_open(&f, CAPS_ALL, FI_AV_TABLE);
	setenv("MRC_SOCKET", mrcd_group.d.sock, 1);
	struct fix_ep e;
	fix_ep_open(&f, &e, FI_CQ_FORMAT_TAGGED);
	char buf[16];
	int rc;
	POST(fi_trecv(e.ep, buf, sizeof(buf), NULL, FI_ADDR_UNSPEC, 1, 0, &rc));
	mrcd_spawn_stop(&d);
	struct fi_cq_tagged_entry c;
	struct fi_cq_err_entry err;
	assert_int_equal(fix_wait_cq(e.cq, &c, NULL, &err), -FI_EAVAIL);
	assert_int_equal(err.err, FI_EIO);
	assert_ptr_equal(err.op_context, &rc);
	/* a send now completes in error too, at once */
	fi_addr_t self = fix_insert(&f, &e);
	int sc;
	POST(fi_tsend(e.ep, buf, 4, NULL, self, 1, &sc));
	assert_int_equal(fix_wait_cq(e.cq, &c, NULL, &err), -FI_EAVAIL);
	assert_int_equal(err.err, FI_EIO);
	fix_ep_close(&e);
	fix_close(&f);
}

int main(void)
{
	seed_init("test_fi_prov");
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_getinfo, reseed),
		cmocka_unit_test_setup(test_av, reseed),
		cmocka_unit_test_setup(test_sizes, reseed),
		cmocka_unit_test_setup(test_cq_formats, reseed),
		cmocka_unit_test_setup(test_truncation, reseed),
		cmocka_unit_test_setup(test_directed, reseed),
		cmocka_unit_test_setup(test_unexpected, reseed),
		cmocka_unit_test_setup(test_peek_claim, reseed),
		cmocka_unit_test_setup(test_polled_progress, reseed),
		cmocka_unit_test_setup(test_inject, reseed),
		cmocka_unit_test_setup(test_counters, reseed),
		cmocka_unit_test_setup(test_mr, reseed),
		cmocka_unit_test_setup(test_rma_write, reseed),
		cmocka_unit_test_setup(test_atomic, reseed),
		cmocka_unit_test_setup(test_two_processes, reseed),
		cmocka_unit_test(test_send_then_close),
		cmocka_unit_test(test_unexpected_bound),
		cmocka_unit_test(test_mr_malloc),
		cmocka_unit_test(test_mr_heap),
		cmocka_unit_test_setup(test_hostile, reseed),
		cmocka_unit_test_setup(test_dead_daemon, reseed),
	};
	return cmocka_run_group_tests(tests, fix_group_setup, fix_group_teardown);
}
