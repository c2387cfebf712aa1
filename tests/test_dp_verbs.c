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
#include "datapath/verbs_int.h"

/* ---- the fake ------------------------------------------------------- */

enum { K_CTX, K_PD, K_CH, K_CQ, K_QP, K_MR, K_AH, NK };
static const char *const kname[NK] = { "ctx", "pd", "ch", "cq", "qp", "mr", "ah" };

#define QDEPTH 4096
struct fcq {
	struct ibv_cq cq;
	struct ibv_wc q[QDEPTH];
	uint32_t head, tail;
	int armed;
	struct ibv_comp_channel *ch;
};
struct fah {
	struct ibv_ah ah;
	struct ibv_ah_attr attr;
};
struct fqp {
	struct ibv_qp qp;
	struct fcq *scq, *rcq;
	uint64_t rwr[QDEPTH], raddr[QDEPTH]; /* posted receives, FIFO */
	uint32_t rhead, rtail;
	int state;
};
struct sent {
	uint32_t qpn, qkey, num_sge, lkey1;
	uint64_t addr1;
	struct in6_addr dgid;
	uint8_t tclass;
	uint8_t data[MRC_DP_MAX_DGRAM];
	size_t len;
};

static struct fake {
	int ndev;
	struct ibv_device dev[2];
	struct in6_addr gid;      /* the RoCEv2 GID the devices report */
	int live[NK], made[NK];
	const char *fail;         /* the op to fail ... */
	int fail_after;           /* ... after this many successful calls */
	int calls;
	int complete_sends;       /* 0: send completions are held back */
	enum ibv_wc_status send_status;
	uint32_t next_qpn, next_key;
	struct sent log[256];
	uint32_t nlog;
} F;

/* Whether call op should fail now (F.fail names it). */
static int fails(const char *op)
{
	if (!F.fail || strcmp(F.fail, op))
		return 0;
	if (F.calls++ < F.fail_after)
		return 0;
	errno = ENOMEM;
	return 1;
}

static void *mk(int k, size_t sz)
{
	F.live[k]++;
	F.made[k]++;
	return calloc(1, sz);
}

static void rm(int k, void *p)
{
	F.live[k]--;
	free(p);
}

static struct ibv_device *list_[3];
static struct ibv_device **f_get_device_list(int *n)
{
	*n = F.ndev;
	for (int i = 0; i < F.ndev; i++)
		list_[i] = &F.dev[i];
	list_[F.ndev] = NULL;
	return list_;
}
static void f_free_device_list(struct ibv_device **l) { (void)l; }
static const char *f_get_device_name(struct ibv_device *d)
{
	return d == &F.dev[0] ? "fake0" : "fake1";
}
static struct ibv_context *f_open_device(struct ibv_device *d)
{
	if (fails("open_device"))
		return NULL;
	struct ibv_context *c = mk(K_CTX, sizeof(*c));
	c->device = d;
	return c;
}
static int f_close_device(struct ibv_context *c) { rm(K_CTX, c); return 0; }
static ssize_t f_query_gid_table(struct ibv_context *c, struct ibv_gid_entry *e, size_t max)
{
	(void)max;
	/* Device 0: a RoCEv1 GID and the RoCEv2 GID on lo (index 3);
	 * device 1: a RoCEv2 GID of another address. */
	memset(e, 0, 2 * sizeof(*e));
	e[0] = (struct ibv_gid_entry){ .gid_index = 2, .port_num = 1, .ndev_ifindex = 1,
		.gid_type = IBV_GID_TYPE_ROCE_V1 };
	memcpy(e[0].gid.raw, &F.gid, 16);
	e[1] = (struct ibv_gid_entry){ .gid_index = 3, .port_num = 1, .ndev_ifindex = 1,
		.gid_type = IBV_GID_TYPE_ROCE_V2 };
	memcpy(e[1].gid.raw, &F.gid, 16);
	if (c->device == &F.dev[1])
		e[1].gid.raw[15] ^= 0xff;
	return 2;
}
static int f_query_port(struct ibv_context *c, uint8_t port, struct ibv_port_attr *a)
{
	(void)c;
	if (fails("query_port"))
		return ENOMEM;
	assert_int_equal(port, 1);
	a->active_mtu = IBV_MTU_1024;
	a->state = IBV_PORT_ACTIVE;
	return 0;
}
static struct ibv_pd *f_alloc_pd(struct ibv_context *c)
{
	if (fails("alloc_pd"))
		return NULL;
	struct ibv_pd *p = mk(K_PD, sizeof(*p));
	p->context = c;
	return p;
}
static int f_dealloc_pd(struct ibv_pd *p) { rm(K_PD, p); return 0; }
static struct ibv_mr *f_reg_mr(struct ibv_pd *pd, void *addr, size_t len, int access)
{
	(void)access;
	if (fails("reg_mr"))
		return NULL;
	struct ibv_mr *m = mk(K_MR, sizeof(*m));
	*m = (struct ibv_mr){ .pd = pd, .addr = addr, .length = len, .lkey = ++F.next_key };
	return m;
}
static struct ibv_mr *f_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t off, size_t len, uint64_t iova,
				      int fd, int access)
{
	(void)off;
	(void)fd;
	return f_reg_mr(pd, (void *)(uintptr_t)iova, len, access);
}
static int f_dereg_mr(struct ibv_mr *m) { rm(K_MR, m); return 0; }
static struct ibv_comp_channel *f_create_comp_channel(struct ibv_context *c)
{
	if (fails("create_comp_channel"))
		return NULL;
	struct ibv_comp_channel *ch = mk(K_CH, sizeof(*ch));
	ch->context = c;
	ch->fd = eventfd(0, EFD_CLOEXEC);   /* readable while events wait */
	assert_true(ch->fd >= 0);
	return ch;
}
static int f_destroy_comp_channel(struct ibv_comp_channel *ch)
{
	close(ch->fd);
	rm(K_CH, ch);
	return 0;
}
static struct ibv_cq *f_create_cq(struct ibv_context *c, int cqe, void *cctx,
				  struct ibv_comp_channel *ch, int vec)
{
	(void)cqe;
	(void)cctx;
	(void)vec;
	if (fails(ch ? "create_cq(recv)" : "create_cq(send)"))
		return NULL;
	struct fcq *q = mk(K_CQ, sizeof(*q));
	q->cq.context = c;
	q->ch = ch;
	return &q->cq;
}
static int f_destroy_cq(struct ibv_cq *cq) { rm(K_CQ, cq); return 0; }
static int f_req_notify_cq(struct ibv_cq *cq, int sol)
{
	(void)sol;
	if (fails("req_notify_cq"))
		return ENOMEM;
	((struct fcq *)cq)->armed = 1;
	return 0;
}
static int f_get_cq_event(struct ibv_comp_channel *ch, struct ibv_cq **cq, void **cctx)
{
	uint64_t v;
	(void)cq;
	(void)cctx;
	/* one event per read: the fd is an eventfd counter */
	return read(ch->fd, &v, sizeof(v)) == sizeof(v) ? 0 : -1;
}
static void f_ack_cq_events(struct ibv_cq *cq, unsigned n) { (void)cq; (void)n; }
static int f_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
	struct fcq *q = (struct fcq *)cq;
	int k = 0;
	while (k < n && q->head != q->tail)
		wc[k++] = q->q[q->head++ % QDEPTH];
	return k;
}
static void cq_push(struct fcq *q, const struct ibv_wc *wc)
{
	q->q[q->tail++ % QDEPTH] = *wc;
	if (q->armed && q->ch) {
		uint64_t one = 1;
		assert_int_equal(write(q->ch->fd, &one, sizeof(one)), sizeof(one));
		q->armed = 0;
	}
}
static struct ibv_qp *f_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *a)
{
	if (fails("create_qp(UD)"))
		return NULL;
	assert_int_equal(a->qp_type, IBV_QPT_UD);
	struct fqp *q = mk(K_QP, sizeof(*q));
	q->qp.pd = pd;
	q->qp.qp_num = ++F.next_qpn;
	q->scq = (struct fcq *)a->send_cq;
	q->rcq = (struct fcq *)a->recv_cq;
	return &q->qp;
}
static int f_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *a, int mask)
{
	static const char *const st[] = { [IBV_QPS_INIT] = "modify_qp(INIT)",
		[IBV_QPS_RTR] = "modify_qp(RTR)", [IBV_QPS_RTS] = "modify_qp(RTS)" };
	assert_true(mask & IBV_QP_STATE);
	if (fails(st[a->qp_state]))
		return ENOMEM;
	if (a->qp_state == IBV_QPS_INIT)
		assert_int_equal(a->qkey, MRC__VERBS_QKEY);
	((struct fqp *)qp)->state = a->qp_state;
	return 0;
}
static int f_destroy_qp(struct ibv_qp *qp) { rm(K_QP, qp); return 0; }
static struct ibv_ah *f_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *a)
{
	(void)pd;
	if (fails("create_ah"))
		return NULL;
	struct fah *h = mk(K_AH, sizeof(*h));
	h->attr = *a;
	return &h->ah;
}
static int f_destroy_ah(struct ibv_ah *ah) { rm(K_AH, ah); return 0; }
static int f_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	struct fqp *q = (struct fqp *)qp;
	assert_int_equal(q->state, IBV_QPS_RTS);
	for (; wr; wr = wr->next) {
		if (fails("post_send")) {
			*bad = wr;
			return ENOMEM;
		}
		struct sent *s = &F.log[F.nlog++ % 256];
		const struct fah *h = (const struct fah *)wr->wr.ud.ah;
		*s = (struct sent){ .qpn = wr->wr.ud.remote_qpn, .qkey = wr->wr.ud.remote_qkey,
			.num_sge = (uint32_t)wr->num_sge, .tclass = h->attr.grh.traffic_class };
		memcpy(&s->dgid, h->attr.grh.dgid.raw, 16);
		for (int i = 0; i < wr->num_sge; i++) {
			memcpy(s->data + s->len, (void *)(uintptr_t)wr->sg_list[i].addr,
			       wr->sg_list[i].length);
			s->len += wr->sg_list[i].length;
		}
		if (wr->num_sge > 1) {
			s->addr1 = wr->sg_list[1].addr;
			s->lkey1 = wr->sg_list[1].lkey;
		}
		if (F.complete_sends) {
			struct ibv_wc wc = { .wr_id = wr->wr_id, .status = F.send_status,
				.opcode = IBV_WC_SEND };
			cq_push(q->scq, &wc);
		}
	}
	return 0;
}
static int f_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	struct fqp *q = (struct fqp *)qp;
	for (; wr; wr = wr->next) {
		if (fails("post_recv")) {
			*bad = wr;
			return ENOMEM;
		}
		assert_int_equal(wr->num_sge, 1);
		q->rwr[q->rtail % QDEPTH] = wr->wr_id;
		q->raddr[q->rtail++ % QDEPTH] = wr->sg_list[0].addr;
	}
	return 0;
}

static const struct mrc__verbs_ops fake_ops = {
	f_get_device_list, f_free_device_list, f_get_device_name, f_open_device,
	f_close_device, f_query_gid_table, f_query_port, f_alloc_pd, f_dealloc_pd, f_reg_mr,
	f_reg_dmabuf_mr, f_dereg_mr, f_create_comp_channel, f_destroy_comp_channel,
	f_create_cq, f_destroy_cq, f_req_notify_cq, f_get_cq_event, f_ack_cq_events,
	f_poll_cq, f_create_qp, f_modify_qp, f_destroy_qp, f_create_ah, f_destroy_ah,
	f_post_send, f_post_recv,
};

/* Delivers a datagram to plane's QP: takes the oldest posted receive,
 * writes an IPv6 GRH and the bytes, completes it. */
static void deliver(struct mrc_dp *dp, uint32_t plane, const char *src, uint8_t tclass,
		    const void *data, size_t len, uint32_t src_qp, enum ibv_wc_status status)
{
	struct fqp *q = (struct fqp *)((struct mrc__verbs_dp *)dp)->pl[plane].qp;
	assert_true(q->rhead != q->rtail);     /* a receive is posted */
	uint32_t i = q->rhead++ % QDEPTH;
	uint8_t *b = (uint8_t *)(uintptr_t)q->raddr[i];
	memset(b, 0, MRC__VERBS_GRH);
	b[0] = (uint8_t)(0x60 | tclass >> 4);
	b[1] = (uint8_t)(tclass << 4);
	assert_int_equal(inet_pton(AF_INET6, src, b + 8), 1);
	memcpy(b + MRC__VERBS_GRH, data, len);
	struct ibv_wc wc = { .wr_id = q->rwr[i], .status = status, .opcode = IBV_WC_RECV,
		.byte_len = (uint32_t)(MRC__VERBS_GRH + len), .wc_flags = IBV_WC_GRH,
		.src_qp = src_qp };
	cq_push(q->rcq, &wc);
}

static uint32_t posted(struct mrc_dp *dp, uint32_t plane)
{
	struct fqp *q = (struct fqp *)((struct mrc__verbs_dp *)dp)->pl[plane].qp;
	return q->rtail - q->rhead;
}

static int readable(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	return poll(&p, 1, 0) == 1;
}

static struct in6_addr A(const char *s)
{
	struct in6_addr a;
	assert_int_equal(inet_pton(AF_INET6, s, &a), 1);
	return a;
}

static struct mrc_dp_plane planes[2];
static struct mrc_dp_cfg cfg2(const char *args)
{
	memset(&F, 0, sizeof(F));
	F.ndev = 2;
	F.complete_sends = 1;
	F.gid = A("fd00::1");
	for (int i = 0; i < 2; i++)
		planes[i] = (struct mrc_dp_plane){ .ifname = "lo", .local = F.gid };
	return (struct mrc_dp_cfg){ .planes = planes, .nplanes = 2, .port = 4791, .args = args };
}

static void assert_nothing_live(void)
{
	for (int k = 0; k < NK; k++)
		if (F.live[k]) {
			print_error("%d %s left alive\n", F.live[k], kname[k]);
			fail();
		}
}

static struct mrc_dp *open_fake(struct mrc_dp_cfg *c)
{
	struct mrc_dp *dp = NULL;
	char why[256] = "";
	int rc = mrc__dp_verbs_open_ops(&dp, c, &fake_ops, why, sizeof(why));
	if (rc)
		print_error("open: %s\n", why);
	assert_int_equal(rc, 0);
	return dp;
}

/* ---- tests ---------------------------------------------------------- */

static void open_makes_a_ud_qp_per_plane(void **state)
{
	(void)state;
	struct mrc_dp_cfg c = cfg2("rx_depth=128,tx_depth=16");
	struct mrc_dp *dp = open_fake(&c);
	struct mrc__verbs_dp *v = (struct mrc__verbs_dp *)dp;
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
	struct mrc__verbs_xstats x;
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
	struct mrc__verbs_xstats x;
	mrc__dp_verbs_xstats(dp, &x);
	assert_int_equal(x.ah_created, 6);
	assert_int_equal(x.ah_evicted, 2);
	assert_int_equal(F.live[K_AH], 4);
	/* The peer table has the same bound: d[0] and d[1] were evicted
	 * from it too; set again, d[0] needs a new handle. */
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
	struct mrc__verbs_dp *v = (struct mrc__verbs_dp *)dp;
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
	struct mrc__verbs_xstats x;
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
	struct mrc__verbs_xstats x;
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
	struct mrc__verbs_dp *v = (struct mrc__verbs_dp *)dp;
	struct fcq *scq = (struct fcq *)v->pl[0].scq;
	struct ibv_wc ok = { .wr_id = 0, .status = IBV_WC_SUCCESS },
		      err = { .wr_id = 1, .status = IBV_WC_RETRY_EXC_ERR };
	cq_push(scq, &ok);
	cq_push(scq, &err);
	F.complete_sends = 1;
	assert_int_equal(mrc_dp_send(dp, o, 2), 2);
	struct mrc__verbs_xstats x;
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
