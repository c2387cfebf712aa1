/* A fake libibverbs that carries UD datagrams between processes over
 * kernel UDP, linked into a test build of mrcd (build/tests/mrcd-fakeverbs,
 * tests/verbs.mk) in place of datapath/verbs_ops.c's mrc__dp_verbs_real, so
 * that tests/root/verbs_fake.sh runs two real mrcd on the verbs provider
 * on the emulated fabric: this machine class has no RDMA device and no
 * kernel RDMA support (no Soft-RoCE either).  The "NIC":
 *   - the GID table is every global IPv6 address of the namespace on every
 *     interface (as if each plane NIC carried the host's address);
 *   - a UD QP numbered n is a UDP socket on port 30000 + n; numbers start
 *     from the process id, so a restarted daemon gets new ones;
 *   - a send goes to (the AH's destination GID, 30000 + remote QPN) from
 *     the AH's source GID out of that GID's interface (IPV6_PKTINFO), with
 *     a 12-byte header: source QPN, Q_Key, traffic class;
 *   - a receive lands in the oldest posted buffer behind a 40-byte IPv6
 *     header (source address, traffic class from IPV6_RECVTCLASS) and is
 *     dropped when the Q_Key differs, as a UD QP does;
 *   - the completion channel's descriptor is the QP's socket (readable
 *     while datagrams wait), so no events are ever raised.
 * It checks nothing a real NIC checks beyond that; what it shows is that
 * mrcd's first contact, side channel and endpoint wiring work end to end. */
#ifdef MRC_HAVE_VERBS
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "datapath/verbs.h"

#define PORT_BASE 30000
#define RING 8192
#define NGID 64
#define HDR 12

struct nqp;
struct ncq {
	struct ibv_cq cq;
	struct ibv_comp_channel *ch;   /* recv CQ: its channel */
	struct nqp *qp;
	uint64_t done[RING];           /* send CQ: completed wr_ids */
	uint32_t head, tail;
};
struct nqp {
	struct ibv_qp qp;
	int fd;
	struct ncq *scq, *rcq;
	uint64_t rid[RING], raddr[RING];
	uint32_t rlen[RING], rhead, rtail;
	uint32_t qkey;
};
struct nah {
	struct ibv_ah ah;
	struct ibv_ah_attr attr;
};

static struct ibv_gid_entry gids[NGID];
static int ngid;
static struct ibv_device dev;
static struct ibv_device *devs[2] = { &dev, NULL };
static uint32_t next_qpn, next_key;

static struct ibv_device **n_get_device_list(int *n)
{
	*n = 1;
	return devs;
}
static void n_free_device_list(struct ibv_device **l) { (void)l; }
static const char *n_get_device_name(struct ibv_device *d) { (void)d; return "fakenet0"; }
static struct ibv_context *n_open_device(struct ibv_device *d)
{
	struct ibv_context *c = calloc(1, sizeof(*c));
	if (c)
		c->device = d;
	return c;
}
static int n_close_device(struct ibv_context *c) { free(c); return 0; }

static ssize_t n_query_gid_table(struct ibv_context *c, struct ibv_gid_entry *e, size_t max)
{
	(void)c;
	struct ifaddrs *ifa, *i, *j;
	if (getifaddrs(&ifa))
		return -errno;
	ngid = 0;
	for (i = ifa; i; i = i->ifa_next) {
		if (!i->ifa_addr || (i->ifa_flags & IFF_LOOPBACK))
			continue;
		unsigned ix = if_nametoindex(i->ifa_name);
		for (j = ifa; j && ngid < NGID && (size_t)ngid < max; j = j->ifa_next) {
			if (!j->ifa_addr || j->ifa_addr->sa_family != AF_INET6)
				continue;
			const struct in6_addr *a = &((struct sockaddr_in6 *)j->ifa_addr)->sin6_addr;
			if (IN6_IS_ADDR_LINKLOCAL(a) || IN6_IS_ADDR_LOOPBACK(a))
				continue;
			int dup = 0;
			for (int k = 0; k < ngid; k++)
				dup |= gids[k].ndev_ifindex == ix && !memcmp(gids[k].gid.raw, a, 16);
			if (dup)
				continue;
			gids[ngid] = (struct ibv_gid_entry){ .gid_index = (uint32_t)ngid, .port_num = 1,
				.gid_type = IBV_GID_TYPE_ROCE_V2, .ndev_ifindex = ix };
			memcpy(gids[ngid].gid.raw, a, 16);
			ngid++;
		}
	}
	freeifaddrs(ifa);
	memcpy(e, gids, (size_t)ngid * sizeof(*e));
	return ngid;
}
static int n_query_port(struct ibv_context *c, uint8_t port, struct ibv_port_attr *a)
{
	(void)c;
	(void)port;
	a->active_mtu = IBV_MTU_4096;
	a->state = IBV_PORT_ACTIVE;
	return 0;
}
static struct ibv_pd *n_alloc_pd(struct ibv_context *c)
{
	struct ibv_pd *p = calloc(1, sizeof(*p));
	if (p)
		p->context = c;
	return p;
}
static int n_dealloc_pd(struct ibv_pd *p) { free(p); return 0; }
static struct ibv_mr *n_reg_mr(struct ibv_pd *pd, void *addr, size_t len, int access)
{
	(void)access;
	struct ibv_mr *m = calloc(1, sizeof(*m));
	if (m)
		*m = (struct ibv_mr){ .pd = pd, .addr = addr, .length = len, .lkey = ++next_key };
	return m;
}
static struct ibv_mr *n_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t off, size_t len, uint64_t iova,
				      int fd, int access)
{
	(void)pd, (void)off, (void)len, (void)iova, (void)fd, (void)access;
	errno = EOPNOTSUPP;
	return NULL;
}
static int n_dereg_mr(struct ibv_mr *m) { free(m); return 0; }
static struct ibv_comp_channel *n_create_comp_channel(struct ibv_context *c)
{
	struct ibv_comp_channel *ch = calloc(1, sizeof(*ch));
	if (!ch)
		return NULL;
	ch->context = c;
	ch->fd = socket(AF_INET6, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (ch->fd < 0) {
		free(ch);
		return NULL;
	}
	return ch;
}
static int n_destroy_comp_channel(struct ibv_comp_channel *ch)
{
	close(ch->fd);
	free(ch);
	return 0;
}
static struct ibv_cq *n_create_cq(struct ibv_context *c, int cqe, void *cctx,
				  struct ibv_comp_channel *ch, int vec)
{
	(void)cqe, (void)cctx, (void)vec;
	struct ncq *q = calloc(1, sizeof(*q));
	if (!q)
		return NULL;
	q->cq.context = c;
	q->ch = ch;
	return &q->cq;
}
static int n_destroy_cq(struct ibv_cq *cq) { free(cq); return 0; }
static int n_req_notify_cq(struct ibv_cq *cq, int sol) { (void)cq, (void)sol; return 0; }
static int n_get_cq_event(struct ibv_comp_channel *ch, struct ibv_cq **cq, void **cctx)
{
	(void)ch, (void)cq, (void)cctx;
	errno = EAGAIN;
	return -1;
}
static void n_ack_cq_events(struct ibv_cq *cq, unsigned n) { (void)cq, (void)n; }

/* One datagram from the QP's socket into its oldest posted buffer. */
static int rx_one(struct nqp *q, struct ibv_wc *wc)
{
	static uint8_t buf[HDR + 65536];
	struct sockaddr_in6 from;
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { buf, sizeof(buf) };
	struct msghdr mh = { .msg_name = &from, .msg_namelen = sizeof(from), .msg_iov = &iov,
		.msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
	ssize_t n = recvmsg(q->fd, &mh, MSG_DONTWAIT);
	if (n < 0)
		return 0;
	uint32_t h[3];
	if (n < HDR)
		return -1;
	memcpy(h, buf, HDR);
	if (ntohl(h[1]) != q->qkey)
		return -1;                      /* a UD QP drops another Q_Key */
	int tclass = 0;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
		if (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_TCLASS)
			memcpy(&tclass, CMSG_DATA(c), sizeof(tclass));
	uint32_t i = q->rhead++ % RING;
	uint8_t *b = (uint8_t *)(uintptr_t)q->raddr[i];
	size_t plen = (size_t)n - HDR;
	*wc = (struct ibv_wc){ .wr_id = q->rid[i], .opcode = IBV_WC_RECV, .wc_flags = IBV_WC_GRH,
		.src_qp = ntohl(h[0]), .byte_len = (uint32_t)(40 + plen) };
	if (40 + plen > q->rlen[i]) {
		wc->status = IBV_WC_LOC_LEN_ERR;
		return 1;
	}
	memset(b, 0, 40);
	b[0] = (uint8_t)(0x60 | (tclass & 0xff) >> 4);
	b[1] = (uint8_t)((tclass & 0x0f) << 4);
	memcpy(b + 8, &from.sin6_addr, 16);
	memcpy(b + 40, buf + HDR, plen);
	wc->status = IBV_WC_SUCCESS;
	return 1;
}

static int n_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
	struct ncq *q = (struct ncq *)cq;
	int k = 0;
	if (!q->ch) {
		while (k < n && q->head != q->tail)
			wc[k++] = (struct ibv_wc){ .wr_id = q->done[q->head++ % RING],
				.status = IBV_WC_SUCCESS, .opcode = IBV_WC_SEND };
		return k;
	}
	for (int guard = 0; k < n && q->qp && q->qp->rhead != q->qp->rtail && guard < 4 * n; guard++) {
		int r = rx_one(q->qp, &wc[k]);
		if (!r)
			break;
		k += r > 0;
	}
	return k;
}
static struct ibv_qp *n_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *a)
{
	struct nqp *q = calloc(1, sizeof(*q));
	if (!q)
		return NULL;
	if (!next_qpn)
		next_qpn = 2 + (uint32_t)getpid() % 20000;
	q->qp.pd = pd;
	q->qp.context = pd->context;
	q->qp.qp_num = next_qpn++;
	q->scq = (struct ncq *)a->send_cq;
	q->rcq = (struct ncq *)a->recv_cq;
	q->rcq->qp = q;
	q->fd = q->rcq->ch->fd;
	int one = 1, tc = 0x02;
	struct sockaddr_in6 sa = { .sin6_family = AF_INET6,
		.sin6_port = htons((uint16_t)(PORT_BASE + q->qp.qp_num)) };
	if (setsockopt(q->fd, IPPROTO_IPV6, IPV6_RECVTCLASS, &one, sizeof(one)) ||
	    setsockopt(q->fd, IPPROTO_IPV6, IPV6_TCLASS, &tc, sizeof(tc)) ||
	    bind(q->fd, (struct sockaddr *)&sa, sizeof(sa))) {
		free(q);
		return NULL;
	}
	return &q->qp;
}
static int n_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *a, int mask)
{
	if ((mask & IBV_QP_QKEY))
		((struct nqp *)qp)->qkey = a->qkey;
	return 0;
}
static int n_destroy_qp(struct ibv_qp *qp) { free(qp); return 0; }
static struct ibv_ah *n_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *a)
{
	struct nah *h = calloc(1, sizeof(*h));
	if (!h)
		return NULL;
	h->ah.pd = pd;
	h->attr = *a;
	return &h->ah;
}
static int n_destroy_ah(struct ibv_ah *ah) { free(ah); return 0; }

static int n_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	struct nqp *q = (struct nqp *)qp;
	for (; wr; wr = wr->next) {
		static uint8_t buf[HDR + 65536];
		const struct nah *h = (const struct nah *)wr->wr.ud.ah;
		uint32_t hd[3] = { htonl(qp->qp_num), htonl(wr->wr.ud.remote_qkey),
			htonl(h->attr.grh.traffic_class) };
		size_t len = HDR;
		memcpy(buf, hd, HDR);
		for (int i = 0; i < wr->num_sge; i++) {
			if (len + wr->sg_list[i].length > sizeof(buf)) {
				*bad = wr;
				return EINVAL;
			}
			memcpy(buf + len, (void *)(uintptr_t)wr->sg_list[i].addr, wr->sg_list[i].length);
			len += wr->sg_list[i].length;
		}
		struct sockaddr_in6 to = { .sin6_family = AF_INET6,
			.sin6_port = htons((uint16_t)(PORT_BASE + wr->wr.ud.remote_qpn)) };
		memcpy(&to.sin6_addr, h->attr.grh.dgid.raw, 16);
		/* From the source GID, out of its interface. */
		char cbuf[CMSG_SPACE(sizeof(struct in6_pktinfo))];
		memset(cbuf, 0, sizeof(cbuf));
		struct iovec iov = { buf, len };
		struct msghdr mh = { .msg_name = &to, .msg_namelen = sizeof(to), .msg_iov = &iov,
			.msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
		struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = IPPROTO_IPV6;
		c->cmsg_type = IPV6_PKTINFO;
		c->cmsg_len = CMSG_LEN(sizeof(struct in6_pktinfo));
		struct in6_pktinfo pi = { .ipi6_ifindex = 0 };
		uint8_t sg = h->attr.grh.sgid_index;
		if (sg < ngid) {
			memcpy(&pi.ipi6_addr, gids[sg].gid.raw, 16);
			pi.ipi6_ifindex = gids[sg].ndev_ifindex;
		}
		memcpy(CMSG_DATA(c), &pi, sizeof(pi));
		/* A UD send completes whether or not anyone receives it. */
		(void)sendmsg(q->fd, &mh, 0);
		q->scq->done[q->scq->tail++ % RING] = wr->wr_id;
	}
	return 0;
}
static int n_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	struct nqp *q = (struct nqp *)qp;
	for (; wr; wr = wr->next) {
		if (q->rtail - q->rhead >= RING) {
			*bad = wr;
			return ENOMEM;
		}
		uint32_t i = q->rtail++ % RING;
		q->rid[i] = wr->wr_id;
		q->raddr[i] = wr->sg_list[0].addr;
		q->rlen[i] = wr->sg_list[0].length;
	}
	return 0;
}

const struct mrc__dp_verbs_ops mrc__dp_verbs_real = {
	n_get_device_list, n_free_device_list, n_get_device_name, n_open_device,
	n_close_device, n_query_gid_table, n_query_port, n_alloc_pd, n_dealloc_pd, n_reg_mr,
	n_reg_dmabuf_mr, n_dereg_mr, n_create_comp_channel, n_destroy_comp_channel,
	n_create_cq, n_destroy_cq, n_req_notify_cq, n_get_cq_event, n_ack_cq_events,
	n_poll_cq, n_create_qp, n_modify_qp, n_destroy_qp, n_create_ah, n_destroy_ah,
	n_post_send, n_post_recv,
};
#endif
