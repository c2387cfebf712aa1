/* The fake libibverbs: see fake_verbs.h. */
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

#ifdef MRC_HAVE_VERBS
#include "tests/support/fake_verbs.h"

const char *const kname[NK] = { "ctx", "pd", "ch", "cq", "qp", "mr", "ah" };
struct fake F;
/* Whether call op should fail now (F.fail names it). */
int fails(const char *op)
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
void cq_push(struct fcq *q, const struct ibv_wc *wc)
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
	/* 0 and 1 are every port's SMI and GSI QPs: a UD QP gets a higher one. */
	q->qp.qp_num = 0x40 + ++F.next_qpn;
	q->scq = (struct fcq *)a->send_cq;
	q->rcq = (struct fcq *)a->recv_cq;
	for (int i = 0; i < FAKE_MAX_QPS; i++)
		if (!F.qps[i]) {
			F.qps[i] = q;
			break;
		}
	return &q->qp;
}
static int f_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *a, int mask)
{
	static const char *const st[] = { [IBV_QPS_INIT] = "modify_qp(INIT)",
		[IBV_QPS_RTR] = "modify_qp(RTR)", [IBV_QPS_RTS] = "modify_qp(RTS)" };
	assert_true(mask & IBV_QP_STATE);
	if (fails(st[a->qp_state]))
		return ENOMEM;
	if (a->qp_state == IBV_QPS_INIT) {
		assert_int_equal(a->qkey, MRC__VERBS_QKEY);
		((struct fqp *)qp)->qkey = a->qkey;
	}
	((struct fqp *)qp)->state = a->qp_state;
	return 0;
}
static int f_destroy_qp(struct ibv_qp *qp)
{
	for (int i = 0; i < FAKE_MAX_QPS; i++)
		if (F.qps[i] == (struct fqp *)qp)
			F.qps[i] = NULL;
	rm(K_QP, qp);
	return 0;
}
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
static void carry(const struct fqp *from, const struct sent *s);
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
		if (F.wire)
			carry(q, s);
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

const struct mrc__dp_verbs_ops fake_ops = {
	f_get_device_list, f_free_device_list, f_get_device_name, f_open_device,
	f_close_device, f_query_gid_table, f_query_port, f_alloc_pd, f_dealloc_pd, f_reg_mr,
	f_reg_dmabuf_mr, f_dereg_mr, f_create_comp_channel, f_destroy_comp_channel,
	f_create_cq, f_destroy_cq, f_req_notify_cq, f_get_cq_event, f_ack_cq_events,
	f_poll_cq, f_create_qp, f_modify_qp, f_destroy_qp, f_create_ah, f_destroy_ah,
	f_post_send, f_post_recv,
};

/* Completes the oldest posted receive of q with a GRH from src and the
 * bytes. */
static void deliver_qp(struct fqp *q, const struct in6_addr *src, uint8_t tclass,
		       const void *data, size_t len, uint32_t src_qp, enum ibv_wc_status status)
{
	assert_true(q->rhead != q->rtail);     /* a receive is posted */
	uint32_t i = q->rhead++ % QDEPTH;
	uint8_t *b = (uint8_t *)(uintptr_t)q->raddr[i];
	memset(b, 0, MRC__VERBS_GRH);
	b[0] = (uint8_t)(0x60 | tclass >> 4);
	b[1] = (uint8_t)(tclass << 4);
	memcpy(b + 8, src, 16);
	memcpy(b + MRC__VERBS_GRH, data, len);
	struct ibv_wc wc = { .wr_id = q->rwr[i], .status = status, .opcode = IBV_WC_RECV,
		.byte_len = (uint32_t)(MRC__VERBS_GRH + len), .wc_flags = IBV_WC_GRH,
		.src_qp = src_qp };
	cq_push(q->rcq, &wc);
}

void deliver(struct mrc_dp *dp, uint32_t plane, const char *src, uint8_t tclass,
	     const void *data, size_t len, uint32_t src_qp, enum ibv_wc_status status)
{
	struct in6_addr a = A(src);
	deliver_qp((struct fqp *)((struct mrc__dp_verbs_dp *)dp)->pl[plane].qp, &a, tclass, data, len,
		   src_qp, status);
}

struct in6_addr fake_gid(int d)
{
	struct in6_addr g = F.gid;
	if (d)
		g.s6_addr[15] ^= 0xff;
	return g;
}

/* Wire mode: the NIC of the QP numbered qpn takes the datagram when the
 * Q_Key matches (a UD QP drops others); nothing answers otherwise. */
static void carry(const struct fqp *from, const struct sent *s)
{
	for (int i = 0; i < FAKE_MAX_QPS; i++) {
		struct fqp *q = F.qps[i];
		if (!q || q->qp.qp_num != s->qpn)
			continue;
		if (q->qkey != s->qkey) {
			F.wire_bad_qkey++;
			return;
		}
		struct in6_addr src = fake_gid(from->qp.pd->context->device == &F.dev[1]);
		deliver_qp(q, &src, s->tclass, s->data, s->len, from->qp.qp_num, IBV_WC_SUCCESS);
		F.wire_delivered++;
		return;
	}
	F.wire_no_qp++;
}

uint32_t posted(struct mrc_dp *dp, uint32_t plane)
{
	struct fqp *q = (struct fqp *)((struct mrc__dp_verbs_dp *)dp)->pl[plane].qp;
	return q->rtail - q->rhead;
}

int readable(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	return poll(&p, 1, 0) == 1;
}

struct in6_addr A(const char *s)
{
	struct in6_addr a;
	assert_int_equal(inet_pton(AF_INET6, s, &a), 1);
	return a;
}

struct mrc_dp_plane planes[2];
struct mrc_dp_cfg cfg2(const char *args)
{
	memset(&F, 0, sizeof(F));
	F.ndev = 2;
	F.complete_sends = 1;
	F.gid = A("fd00::1");
	for (int i = 0; i < 2; i++)
		planes[i] = (struct mrc_dp_plane){ .ifname = "lo", .local = F.gid };
	return (struct mrc_dp_cfg){ .planes = planes, .nplanes = 2, .port = 4791, .args = args };
}

void assert_nothing_live(void)
{
	for (int k = 0; k < NK; k++)
		if (F.live[k]) {
			print_error("%d %s left alive\n", F.live[k], kname[k]);
			fail();
		}
}

struct mrc_dp *open_fake(struct mrc_dp_cfg *c)
{
	struct mrc_dp *dp = NULL;
	char why[256] = "";
	int rc = mrc__dp_verbs_open_ops(&dp, c, &fake_ops, why, sizeof(why));
	if (rc)
		print_error("open: %s\n", why);
	assert_int_equal(rc, 0);
	return dp;
}
#endif
