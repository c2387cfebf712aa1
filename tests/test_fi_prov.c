/* The libfabric provider "mrc" (docs/libfabric.md), its objects, opened
 * through libfabric (FI_PROVIDER_PATH = this build's lib/) against a
 * loopback mrcd:
 *  - fi_getinfo honours hints and refuses what it cannot give;
 *  - AV table and map: insert, lookup, remove, straddr, EQ event;
 *  - CQ formats (context, msg, data, tagged), readfrom with FI_SOURCE,
 *    sread with its wait fd, readerr;
 *  - counters (read, add, set, wait, error count).
 * Messages: test_fi_msg.c; MR, RMA and atomics: test_fi_rma.c; other
 * processes, hostile peers and a dead mrcd: test_fi_proc.c. */
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

int main(void)
{
	seed_init("test_fi_prov");
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_getinfo, reseed),
		cmocka_unit_test_setup(test_av, reseed),
		cmocka_unit_test_setup(test_cq_formats, reseed),
		cmocka_unit_test_setup(test_counters, reseed),
	};
	return cmocka_run_group_tests(tests, fix_group_setup, fix_group_teardown);
}
