/* The verbs datapath against a fake libibverbs (an ops table of mocks that
 * counts every object it creates and can fail any call): open makes one
 * UD QP per plane and posts its receive pool; send builds the SGEs, the
 * address handle (one per destination, cached, bounded) and the peer QP
 * number; receive reports source, length, plane and ECN from completions
 * and the GRH; error completions are counted; each failure in open
 * releases everything made before it; with no device, open refuses with
 * the message mrcd prints.  tests/test_dp_verbs_dev.c runs the real
 * library on a real device. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include <cmocka.h>

#include "tests/support/skip.h"

#ifdef MRC_HAVE_VERBS
#include "tests/support/fake_verbs.h"

/* ---- tests ---------------------------------------------------------- */

static void open_makes_a_ud_qp_per_plane(void **state)
{
	(void)state;
	struct mrc_dp_cfg c = cfg2("rx_depth=128,tx_depth=16");
	struct mrc_dp *dp = open_fake(&c);
	struct mrc__dp_verbs_dp *v = (struct mrc__dp_verbs_dp *)dp;
	assert_string_equal(mrc_dp_name(dp), "verbs");
	assert_int_equal(F.live[K_QP], 2);
	assert_int_equal(F.live[K_PD], 2);
	assert_int_equal(F.live[K_CQ], 4);   /* receive and send per plane */
	assert_int_equal(F.live[K_MR], 4);   /* receive pool and bounce pool */
	/* the device with the plane's address, its RoCEv2 GID (not v1) */
	assert_ptr_equal(v->pl[0].ctx->device, &F.dev[0]);
	assert_int_equal(v->pl[0].gid_index, 3);
	assert_int_equal(v->pl[0].mtu, 1024);
	for (uint32_t p = 0; p < 2; p++) {
		assert_int_equal(posted(dp, p), 128);
		assert_int_equal(((struct fqp *)v->pl[p].qp)->state, IBV_QPS_RTS);
		assert_int_equal(mrc_dp_fd(dp, p), v->pl[p].ch->fd);
		assert_int_equal(mrc_dp_link_up(dp, p), 1);
	}
	assert_int_equal(F.live[K_CTX], 2);  /* one context per plane */
	mrc_dp_close(dp);
	assert_nothing_live();
}

static void send_builds_sges_ah_and_qpn(void **state)
{
	(void)state;
	struct mrc_dp_cfg c = cfg2(NULL);
	struct mrc_dp *dp = open_fake(&c);
	struct mrc_dp_stats st;
	struct mrc__dp_verbs_xstats x;
	struct in6_addr a = A("fc00:0:1:2:3::"), b = A("fc00:0:1:4:3::");
	assert_int_equal(mrc__dp_verbs_set_peer(dp, 0, &a, 0x4242), 0);
	assert_int_equal(mrc__dp_verbs_set_peer(dp, 0, &b, 0x4343), 0);
	uint8_t hdr[8] = "HEADER!", pay[600], tr[4] = { 1, 2, 3, 4 };
	memset(pay, 0x5a, sizeof(pay));
	struct mrc_dp_out o[4];
	for (int i = 0; i < 4; i++)
		o[i] = (struct mrc_dp_out){ .plane = 0, .dst = i == 2 ? b : a, .iovcnt = 3,
			.iov = { { hdr, 8 }, { pay, 100 + (size_t)i }, { tr, 4 } } };
	o[3].dst = A("fc00:0:9::");             /* no QP number known */
	assert_int_equal(mrc_dp_send(dp, o, 4), 3);
	assert_int_equal(F.nlog, 3);
	for (int i = 0; i < 3; i++) {
		const struct sent *s = &F.log[i];
		assert_int_equal(s->num_sge, 1);  /* copied into the bounce slot */
		assert_int_equal(s->len, 8 + 100 + i + 4);
		assert_memory_equal(s->data, hdr, 8);
		assert_memory_equal(s->data + 8, pay, 100 + (size_t)i);
		assert_memory_equal(s->data + 108 + i, tr, 4);
		assert_int_equal(s->qkey, MRC__VERBS_QKEY);
		assert_int_equal(s->tclass, 0x02);   /* ECT(0) */
		assert_int_equal(s->qpn, i == 2 ? 0x4343 : 0x4242);
		assert_memory_equal(&s->dgid, i == 2 ? &b : &a, 16);
	}
	mrc__dp_verbs_xstats(dp, &x);
	assert_int_equal(x.ah_created, 2);       /* a's handle was reused */
	assert_int_equal(x.no_qpn, 1);
	assert_int_equal(x.copied, 3);
	mrc_dp_get_stats(dp, &st);
	assert_int_equal(st.tx_pkts, 3);
	assert_int_equal(st.tx_bytes, 3 * 112 + 0 + 1 + 2);
	assert_int_equal(st.tx_errs, 1);
	/* larger than the port MTU (1024): dropped, counted */
	static uint8_t big[1100];
	o[0].iov[1] = (struct iovec){ big, sizeof(big) };
	assert_int_equal(mrc_dp_send(dp, o, 1), 0);
	mrc__dp_verbs_xstats(dp, &x);
	assert_int_equal(x.too_big, 1);
	mrc_dp_close(dp);
	assert_nothing_live();
}

static void ah_cache_is_bounded(void **state)
{
	(void)state;
	struct mrc_dp_cfg c = cfg2("ah_max=4");   /* one set of four ways */
	struct mrc_dp *dp = open_fake(&c);
	struct in6_addr d[6];
	uint8_t hdr[16] = { 0 };
	for (int i = 0; i < 6; i++) {
		char s[64];
		snprintf(s, sizeof(s), "fc00:0:%x::", i + 1);
		d[i] = A(s);
		mrc__dp_verbs_set_peer(dp, 0, &d[i], 100 + (uint32_t)i);
		struct mrc_dp_out o = { .plane = 0, .dst = d[i], .iovcnt = 1, .iov = { { hdr, 16 } } };
		assert_int_equal(mrc_dp_send(dp, &o, 1), 1);
		assert_true(F.live[K_AH] <= 4);
	}
	struct mrc__dp_verbs_xstats x;
	mrc__dp_verbs_xstats(dp, &x);
	assert_int_equal(x.ah_created, 6);
	assert_int_equal(x.ah_evicted, 2);
	assert_int_equal(F.live[K_AH], 4);
	/* The peer table keeps what was set (test_dp_verbs_peer.c); d[0]'s
	 * handle was evicted, so it needs a new one. */
	mrc__dp_verbs_set_peer(dp, 0, &d[0], 100);
	struct mrc_dp_out o = { .plane = 0, .dst = d[0], .iovcnt = 1, .iov = { { hdr, 16 } } };
	assert_int_equal(mrc_dp_send(dp, &o, 1), 1);
	mrc__dp_verbs_xstats(dp, &x);
	assert_int_equal(x.ah_created, 7);
	assert_int_equal(F.log[F.nlog - 1].qpn, 100);
	assert_int_equal(F.live[K_AH], 4);
	mrc_dp_close(dp);
	assert_nothing_live();
}

static void registered_payload_goes_zero_copy(void **state)
{
	(void)state;
	struct mrc_dp_cfg c = cfg2(NULL);
	struct mrc_dp *dp = open_fake(&c);
	static uint8_t region[8192 + 512];   /* the last 512 bytes unregistered */
	int id = mrc__dp_verbs_reg(dp, region, 8192, -1, 0);
	assert_true(id >= 0);
	struct mrc__dp_verbs_dp *v = (struct mrc__dp_verbs_dp *)dp;
	struct in6_addr a = A("fc00::2");
	mrc__dp_verbs_set_peer(dp, 1, &a, 7);
	uint8_t hdr[8] = "hdr....", tr[4] = "CRC";
	memset(region + 4000, 0x33, 500);
	struct mrc_dp_out o = { .plane = 1, .dst = a, .iovcnt = 3,
		.iov = { { hdr, 8 }, { region + 4000, 500 }, { tr, 4 } } };
	assert_int_equal(mrc_dp_send(dp, &o, 1), 1);
	const struct sent *s = &F.log[0];
	assert_int_equal(s->num_sge, 3);          /* header | payload in place | trailer */
	assert_int_equal(s->addr1, (uintptr_t)(region + 4000));
	assert_int_equal(s->lkey1, v->reg[id].mr[1]->lkey);  /* plane 1's registration */
	assert_int_equal(s->len, 512);
	assert_memory_equal(s->data + 8, region + 4000, 500);
	assert_memory_equal(s->data + 508, tr, 4);
	/* a payload straddling the region's end is copied */
	o.iov[1] = (struct iovec){ region + 8000, 300 };
	assert_int_equal(mrc_dp_send(dp, &o, 1), 1);
	assert_int_equal(F.log[1].num_sge, 1);
	struct mrc__dp_verbs_xstats x;
	mrc__dp_verbs_xstats(dp, &x);
	assert_int_equal(x.zero_copy, 1);
	assert_int_equal(x.copied, 1);
	/* GPU memory: a dmabuf registration, addressed by its iova */
	int g = mrc__dp_verbs_reg(dp, (void *)(uintptr_t)0x7f0000000000ull, 1 << 20, 99, 0);
	assert_true(g >= 0 && g != id);
	mrc__dp_verbs_unreg(dp, id);
	mrc_dp_close(dp);
	assert_nothing_live();
}

static void receive_reports_src_len_plane_ecn(void **state)
{
	(void)state;
	struct mrc_dp_cfg c = cfg2("rx_depth=100");
	struct mrc_dp *dp = open_fake(&c);
	int fd = mrc_dp_fd(dp, 1);
	assert_false(readable(fd));
	struct mrc_dp_in in[MRC_DP_BATCH];
	assert_int_equal(mrc_dp_recv(dp, 1, in, MRC_DP_BATCH), 0);
	deliver(dp, 1, "fd00::7", 0x02, "hello", 5, 0x77, IBV_WC_SUCCESS);
	deliver(dp, 1, "fd00::8", 0x03, "congested", 9, 0x88, IBV_WC_SUCCESS);
	deliver(dp, 1, "fd00::9", 0x02, "bad", 3, 0x99, IBV_WC_LOC_LEN_ERR);
	assert_true(readable(fd));                /* the channel woke the loop */
	int n = mrc_dp_recv(dp, 1, in, MRC_DP_BATCH);
	assert_int_equal(n, 2);
	assert_false(readable(fd));               /* event consumed, CQ re-armed */
	assert_int_equal(in[0].len, 5);
	assert_memory_equal(in[0].buf, "hello", 5);
	struct in6_addr s7 = A("fd00::7"), s8 = A("fd00::8");
	assert_memory_equal(&in[0].src, &s7, 16);
	assert_int_equal(in[0].plane, 1);
	assert_int_equal(in[0].ecn_ce, 0);
	assert_int_equal(in[0].sport, 4791);
	assert_int_equal(in[1].len, 9);
	assert_memory_equal(&in[1].src, &s8, 16);
	assert_int_equal(in[1].ecn_ce, 1);
	struct mrc__dp_verbs_xstats x;
	mrc__dp_verbs_xstats(dp, &x);
	assert_int_equal(x.rx_wc_err, 1);
	struct mrc_dp_stats st;
	mrc_dp_get_stats(dp, &st);
	assert_int_equal(st.rx_pkts, 2);
	assert_int_equal(st.rx_bytes, 14);
	/* The three buffers go back to the NIC on the next recv (the two
	 * handed out stayed valid until then). */
	assert_int_equal(posted(dp, 1), 97);
	assert_int_equal(mrc_dp_recv(dp, 1, in, MRC_DP_BATCH), 0);
	assert_int_equal(posted(dp, 1), 100);
	/* A reply to fd00::8 goes to the QP it came from. */
	struct mrc_dp_out o = { .plane = 1, .dst = s8, .iovcnt = 1, .iov = { { "r", 1 } } };
	assert_int_equal(mrc_dp_send(dp, &o, 1), 1);
	assert_int_equal(F.log[0].qpn, 0x88);
	mrc_dp_close(dp);
	assert_nothing_live();
}

static void send_errors_and_full_queue_counted(void **state)
{
	(void)state;
	struct mrc_dp_cfg c = cfg2("tx_depth=2");
	struct mrc_dp *dp = open_fake(&c);
	struct in6_addr a = A("fc00::3");
	mrc__dp_verbs_set_peer(dp, 0, &a, 5);
	struct mrc_dp_out o[3];
	for (int i = 0; i < 3; i++)
		o[i] = (struct mrc_dp_out){ .plane = 0, .dst = a, .iovcnt = 1, .iov = { { "x", 1 } } };
	/* Completions held back: two slots, the third packet finds none. */
	F.complete_sends = 0;
	assert_int_equal(mrc_dp_send(dp, o, 3), 2);
	struct mrc_dp_stats st;
	mrc_dp_get_stats(dp, &st);
	assert_int_equal(st.tx_eagain, 1);
	/* The NIC completes them, with an error for one. */
	struct mrc__dp_verbs_dp *v = (struct mrc__dp_verbs_dp *)dp;
	struct fcq *scq = (struct fcq *)v->pl[0].scq;
	struct ibv_wc ok = { .wr_id = 0, .status = IBV_WC_SUCCESS },
		      err = { .wr_id = 1, .status = IBV_WC_RETRY_EXC_ERR };
	cq_push(scq, &ok);
	cq_push(scq, &err);
	F.complete_sends = 1;
	assert_int_equal(mrc_dp_send(dp, o, 2), 2);
	struct mrc__dp_verbs_xstats x;
	mrc__dp_verbs_xstats(dp, &x);
	assert_int_equal(x.tx_wc_err, 1);
	mrc_dp_get_stats(dp, &st);
	assert_int_equal(st.tx_errs, 1);
	assert_int_equal(st.tx_pkts, 4);
	/* post_send refusing the second WR of a chain: one handed over. */
	F.fail = "post_send";
	F.fail_after = 1;
	F.calls = 0;
	assert_int_equal(mrc_dp_send(dp, o, 2), 1);
	mrc_dp_get_stats(dp, &st);
	assert_int_equal(st.tx_errs, 2);
	F.fail = NULL;
	mrc_dp_close(dp);
	assert_nothing_live();
}

static void no_device_says_so(void **state)
{
	(void)state;
	struct mrc_dp_cfg c = cfg2(NULL);
	F.ndev = 0;
	struct mrc_dp *dp = NULL;
	char why[256] = "";
	assert_int_equal(mrc__dp_verbs_open_ops(&dp, &c, &fake_ops, why, sizeof(why)), -EOPNOTSUPP);
	assert_non_null(strstr(why, "no RDMA device: ibv_get_device_list found none"));
	assert_non_null(strstr(why, "use datapath=udp"));
	assert_null(dp);
	/* devices, but none with a RoCEv2 GID equal to the plane's address
	 * on its netdev (device 1's GID on lo is another address) */
	c = cfg2(NULL);
	planes[1].local = A("fd00::99");
	assert_int_equal(mrc__dp_verbs_open_ops(&dp, &c, &fake_ops, why, sizeof(why)), -ENODEV);
	assert_non_null(strstr(why, "plane 1: no RoCEv2 GID fd00::99 on lo on any of 2"));
	assert_nothing_live();
	/* the address on another netdev does not count */
	c = cfg2(NULL);
	snprintf(planes[0].ifname, sizeof(planes[0].ifname), "%s", "nonexistent0");
	assert_int_equal(mrc__dp_verbs_open_ops(&dp, &c, &fake_ops, why, sizeof(why)), -ENODEV);
	assert_non_null(strstr(why, "plane 0: no interface nonexistent0"));
	/* bad options */
	c = cfg2("ah_max=0");
	assert_int_equal(mrc__dp_verbs_open_ops(&dp, &c, &fake_ops, why, sizeof(why)), -EINVAL);
	c = cfg2("colour=3");
	assert_int_equal(mrc__dp_verbs_open_ops(&dp, &c, &fake_ops, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "colour"));
	assert_nothing_live();
}

/* Every call open makes, failed in turn on plane 0 and on plane 1: open
 * says which step failed, and nothing it made is left alive. */
static void each_open_failure_releases_all(void **state)
{
	(void)state;
	/* each op, its calls per plane, and which of them fails: reg_mr
	 * twice (receive pool, send pool), post_recv rx_depth times (the
	 * last fails), the rest once.  A failed call fails every later one
	 * too, so open_device fails on both devices. */
	static const struct { const char *op; int per, which; } ops[] = {
		{ "open_device", 1, 0 }, { "query_port", 1, 0 }, { "alloc_pd", 1, 0 },
		{ "create_comp_channel", 1, 0 }, { "create_cq(recv)", 1, 0 },
		{ "create_cq(send)", 1, 0 }, { "create_qp(UD)", 1, 0 }, { "modify_qp(INIT)", 1, 0 },
		{ "modify_qp(RTR)", 1, 0 }, { "modify_qp(RTS)", 1, 0 }, { "reg_mr", 2, 0 },
		{ "reg_mr", 2, 1 }, { "post_recv", 80, 79 }, { "req_notify_cq", 1, 0 } };
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		for (int plane = 0; plane < 2; plane++) {
			struct mrc_dp_cfg c = cfg2("rx_depth=80");
			F.fail = ops[i].op;
			F.fail_after = plane * ops[i].per + ops[i].which;
			struct mrc_dp *dp = NULL;
			char why[256] = "";
			int rc = mrc__dp_verbs_open_ops(&dp, &c, &fake_ops, why, sizeof(why));
			if (rc == 0 || F.calls <= F.fail_after) {
				print_error("%s on plane %d: rc %d, %d calls (%s)\n", ops[i].op, plane,
					    rc, F.calls, why);
				fail();
			}
			assert_null(dp);
			char want[64];
			snprintf(want, sizeof(want), "plane %d", plane);
			assert_non_null(strstr(why, want));
			if (strcmp(ops[i].op, "open_device"))
				assert_non_null(strstr(why, ops[i].op));
			for (int k = 0; k < NK; k++)
				if (F.live[k]) {
					print_error("%s on plane %d: %d %s left alive\n", ops[i].op,
						    plane, F.live[k], kname[k]);
					fail();
				}
		}
}

int main(void)
{
	const struct CMUnitTest t[] = {
		cmocka_unit_test(open_makes_a_ud_qp_per_plane),
		cmocka_unit_test(send_builds_sges_ah_and_qpn),
		cmocka_unit_test(ah_cache_is_bounded),
		cmocka_unit_test(registered_payload_goes_zero_copy),
		cmocka_unit_test(receive_reports_src_len_plane_ecn),
		cmocka_unit_test(send_errors_and_full_queue_counted),
		cmocka_unit_test(no_device_says_so),
		cmocka_unit_test(each_open_failure_releases_all),
	};
	return cmocka_run_group_tests(t, NULL, NULL);
}

#else
#include "datapath/datapath.h"

static void not_built(void **state)
{
	(void)state;
	MRC_SKIP("built without libibverbs-dev: the verbs datapath is not built in");
}

int main(void)
{
	const struct CMUnitTest t[] = { cmocka_unit_test(not_built) };
	return cmocka_run_group_tests(t, NULL, NULL);
}
#endif
