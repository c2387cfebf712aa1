/* The verbs datapath: open, close, descriptors, link state (see verbs.h;
 * the packet path is verbs_io.c).  Each plane is one UD QP on the RoCEv2
 * GID of the plane's NIC, with its own protection domain, a receive CQ on
 * a completion channel (whose descriptor is the plane's fd), a send CQ
 * polled when slots run out, a registered receive pool and a registered
 * send bounce pool.  docs/datapaths.md, "verbs", gives the design. */
#include "datapath/datapath.h"

#ifdef MRC_HAVE_VERBS
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "datapath/verbs_int.h"

#define MAX_GIDS 256

const struct mrc_dp_ops mrc__dp_verbs_ops;

/* rdma-core reports failure as NULL with errno, or as an errno value
 * returned directly (positive) or as -1 with errno set. */
static int verr(int r)
{
	if (r > 0)
		return -r;
	return errno > 0 ? -errno : -EIO;
}

/* datapath_args: comma-separated key=value (docs/datapaths.md). */
static int parse_args(struct mrc__dp_verbs_dp *dp, const char *args, char *why, size_t whylen)
{
	char buf[256];
	if (!args || !args[0])
		return 0;
	if (strlen(args) >= sizeof(buf)) {
		snprintf(why, whylen, "datapath_args too long");
		return -EINVAL;
	}
	strcpy(buf, args);
	char *save = NULL;
	for (char *kv = strtok_r(buf, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(kv, '='), *end = NULL;
		unsigned long v = eq ? strtoul(eq + 1, &end, 0) : 0;
		if (!eq || end == eq + 1 || *end || v == 0 || v > (1u << 20)) {
			snprintf(why, whylen, "datapath_args: '%s': want key=N (N 1..%u)", kv, 1u << 20);
			return -EINVAL;
		}
		*eq = 0;
		if (!strcmp(kv, "rx_depth") && v > MRC_DP_BATCH)
			dp->rx_depth = (uint32_t)v;
		else if (!strcmp(kv, "tx_depth"))
			dp->tx_depth = (uint32_t)v;
		else if (!strcmp(kv, "ah_max"))
			dp->sets = (uint32_t)((v + MRC__VERBS_WAYS - 1) / MRC__VERBS_WAYS);
		else {
			snprintf(why, whylen, "datapath_args: unknown or out-of-range key '%s' "
				 "(rx_depth > %d, tx_depth, ah_max)", kv, MRC_DP_BATCH);
			return -EINVAL;
		}
	}
	return 0;
}

/* The device, port and GID index of plane pl: the RoCEv2 GID equal to the
 * plane's address, on the plane's netdev when it names one.  Only that
 * GID will do: it is the source address of every packet, and peers check
 * sources.  The kernel fills the GID table from the netdev's IPv6
 * addresses, so the plane NIC must carry the address. */
static int find_gid(struct mrc__dp_verbs_dp *dp, struct mrc__vplane *p, const struct mrc_dp_plane *pl,
		    struct ibv_device **devs, int ndev, char *why, size_t whylen)
{
	unsigned ifindex = 0;
	if (pl->ifname[0] && !(ifindex = if_nametoindex(pl->ifname))) {
		snprintf(why, whylen, "no interface %s", pl->ifname);
		return -ENODEV;
	}
	static struct ibv_gid_entry e[MAX_GIDS];   /* one thread opens */
	for (int d = 0; d < ndev && !p->ctx; d++) {
		struct ibv_context *ctx = dp->ops->open_device(devs[d]);
		if (!ctx)
			continue;
		ssize_t n = dp->ops->query_gid_table(ctx, e, MAX_GIDS);
		for (ssize_t i = 0; i < n && !p->ctx; i++)
			if (e[i].gid_type == IBV_GID_TYPE_ROCE_V2 &&
			    !memcmp(e[i].gid.raw, &pl->local, 16) &&
			    (!ifindex || e[i].ndev_ifindex == ifindex)) {
				p->ctx = ctx;
				p->port = (uint8_t)e[i].port_num;
				p->gid_index = e[i].gid_index;
				snprintf(p->dev, sizeof(p->dev), "%s",
					 dp->ops->get_device_name(devs[d]));
			}
		if (!p->ctx)
			dp->ops->close_device(ctx);
	}
	if (!p->ctx) {
		char a[INET6_ADDRSTRLEN];
		inet_ntop(AF_INET6, &pl->local, a, sizeof(a));
		snprintf(why, whylen, "no RoCEv2 GID %s%s%s on any of %d RDMA device(s) "
			 "(the plane NIC must carry the address; ibv_devinfo -v lists GIDs)", a,
			 ifindex ? " on " : "", ifindex ? pl->ifname : "", ndev);
		return -ENODEV;
	}
	return 0;
}

/* INIT, RTR, RTS: a UD QP needs no peer to reach them. */
static int ud_ready(struct mrc__dp_verbs_dp *dp, struct mrc__vplane *p, const char **what)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .pkey_index = 0,
		.port_num = p->port, .qkey = MRC__VERBS_QKEY };
	int rc;
	*what = "modify_qp(INIT)";
	if ((rc = dp->ops->modify_qp(p->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
				     IBV_QP_PORT | IBV_QP_QKEY)))
		return verr(rc);
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTR };
	*what = "modify_qp(RTR)";
	if ((rc = dp->ops->modify_qp(p->qp, &a, IBV_QP_STATE)))
		return verr(rc);
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTS, .sq_psn = 0 };
	*what = "modify_qp(RTS)";
	if ((rc = dp->ops->modify_qp(p->qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN)))
		return verr(rc);
	return 0;
}

static int post_all_recvs(struct mrc__dp_verbs_dp *dp, struct mrc__vplane *p)
{
	for (uint32_t i = 0; i < dp->rx_depth; i++) {
		struct ibv_sge sge = { .addr = (uintptr_t)(p->rbuf + (size_t)i * p->rslot),
			.length = p->rslot, .lkey = p->rmr->lkey };
		struct ibv_recv_wr wr = { .wr_id = i, .sg_list = &sge, .num_sge = 1 }, *bad;
		int rc = dp->ops->post_recv(p->qp, &wr, &bad);
		if (rc)
			return verr(rc);
		p->nposted++;
	}
	return 0;
}

/* Creates plane i's resources in order; on failure says which step failed
 * and leaves what it made for close_plane. */
static int open_plane(struct mrc__dp_verbs_dp *dp, uint32_t i, const struct mrc_dp_plane *pl,
		      struct ibv_device **devs, int ndev, char *why, size_t whylen)
{
	struct mrc__vplane *p = &dp->pl[i];
	const struct mrc__dp_verbs_ops *o = dp->ops;
	char sub[320] = "";
	int rc = find_gid(dp, p, pl, devs, ndev, sub, sizeof(sub));
	const char *what = "";
	if (rc) {
		snprintf(why, whylen, "plane %u: %s", i, sub);
		return rc;
	}
	struct ibv_port_attr pa;
	memset(&pa, 0, sizeof(pa));
#define STEP(cond, w) do { if (!rc && (cond)) { rc = verr(rc); what = (w); } } while (0)
	STEP((rc = o->query_port(p->ctx, p->port, &pa)) != 0, "query_port");
	if (!rc) {
		/* UD carries one message per packet: the port's MTU bounds it. */
		p->mtu = 128u << pa.active_mtu;
		p->rslot = MRC__VERBS_GRH + p->mtu;
	}
	STEP(!(p->pd = o->alloc_pd(p->ctx)), "alloc_pd");
	STEP(!(p->ch = o->create_comp_channel(p->ctx)), "create_comp_channel");
	/* get_cq_event must not block the event loop. */
	STEP(fcntl(p->ch->fd, F_SETFL, fcntl(p->ch->fd, F_GETFL) | O_NONBLOCK) < 0,
	     "fcntl(O_NONBLOCK) on the completion channel");
	STEP(!(p->rcq = o->create_cq(p->ctx, (int)dp->rx_depth, NULL, p->ch, 0)), "create_cq(recv)");
	STEP(!(p->scq = o->create_cq(p->ctx, (int)dp->tx_depth, NULL, NULL, 0)), "create_cq(send)");
	struct ibv_qp_init_attr qa = { .send_cq = p->scq, .recv_cq = p->rcq, .qp_type = IBV_QPT_UD,
		.cap = { .max_send_wr = dp->tx_depth, .max_recv_wr = dp->rx_depth,
			 .max_send_sge = 3, .max_recv_sge = 1 } };
	STEP(!(p->qp = o->create_qp(p->pd, &qa)), "create_qp(UD)");
	if (!rc)
		rc = ud_ready(dp, p, &what);
	size_t rbytes = (size_t)dp->rx_depth * p->rslot, sbytes = (size_t)dp->tx_depth * p->mtu;
	STEP(!(p->rbuf = aligned_alloc(4096, (rbytes + 4095) & ~(size_t)4095)) && (errno = ENOMEM),
	     "receive pool");
	STEP(!(p->rmr = o->reg_mr(p->pd, p->rbuf, rbytes, IBV_ACCESS_LOCAL_WRITE)), "reg_mr(receive pool)");
	STEP(!(p->sbuf = aligned_alloc(4096, (sbytes + 4095) & ~(size_t)4095)) && (errno = ENOMEM),
	     "send pool");
	STEP(!(p->smr = o->reg_mr(p->pd, p->sbuf, sbytes, 0)), "reg_mr(send pool)");
	size_t tab = (size_t)dp->sets * MRC__VERBS_WAYS;
	STEP(!(p->ah = calloc(tab, sizeof(*p->ah))) && (errno = ENOMEM), "address handle cache");
	STEP((errno = -mrc__dp_verbs_peers_init(&p->peers)) != 0, "peer table");
	if (!rc && (rc = post_all_recvs(dp, p)))
		what = "post_recv";
	/* Armed before the first recv, so the first packet wakes the loop. */
	STEP((rc = o->req_notify_cq(p->rcq, 0)) != 0, "req_notify_cq");
#undef STEP
	if (rc)
		snprintf(why, whylen, "plane %u (%s port %u): %s: %s", i, p->dev, p->port,
			 what, strerror(-rc));
	return rc;
}

static void close_plane(struct mrc__dp_verbs_dp *dp, struct mrc__vplane *p)
{
	const struct mrc__dp_verbs_ops *o = dp->ops;
	if (p->ah)
		mrc__dp_verbs_drop_ahs(dp, p);
	free(p->ah);
	free(p->peers.t);
	if (p->qp)
		o->destroy_qp(p->qp);
	if (p->smr)
		o->dereg_mr(p->smr);
	if (p->rmr)
		o->dereg_mr(p->rmr);
	free(p->sbuf);
	free(p->rbuf);
	if (p->scq)
		o->destroy_cq(p->scq);
	if (p->rcq)
		o->destroy_cq(p->rcq);
	if (p->ch)
		o->destroy_comp_channel(p->ch);
	if (p->pd)
		o->dealloc_pd(p->pd);
	if (p->ctx)
		o->close_device(p->ctx);
}

static void verbs_close(struct mrc_dp *base)
{
	struct mrc__dp_verbs_dp *dp = (struct mrc__dp_verbs_dp *)base;
	for (int r = 0; r < MRC__VERBS_MAX_REGIONS; r++)
		mrc__dp_verbs_unreg(base, r);
	for (uint32_t i = 0; i < dp->n; i++)
		close_plane(dp, &dp->pl[i]);
	free(dp);
}

int mrc__dp_verbs_open_ops(struct mrc_dp **out, const struct mrc_dp_cfg *cfg,
			   const struct mrc__dp_verbs_ops *ops, char *why, size_t whylen)
{
	char scratch[8];
	if (!why)
		why = scratch, whylen = sizeof(scratch);
	int rc = mrc__dp_check_cfg(cfg, why, whylen);
	if (rc)
		return rc;
	struct mrc__dp_verbs_dp *dp = calloc(1, sizeof(*dp));
	if (!dp)
		return -ENOMEM;
	dp->base.ops = &mrc__dp_verbs_ops;
	dp->ops = ops;
	dp->port = cfg->port;
	dp->rx_depth = 1024;
	dp->tx_depth = 512;
	dp->sets = 1024 / MRC__VERBS_WAYS;
	if ((rc = parse_args(dp, cfg->args, why, whylen))) {
		free(dp);
		return rc;
	}
	int ndev = 0;
	errno = 0;
	struct ibv_device **devs = ops->get_device_list(&ndev);
	if (!devs || ndev <= 0) {
		/* libibverbs says ENOSYS when the kernel has no RDMA support at
		 * all, and an empty list when it has no device. */
		snprintf(why, whylen, "no RDMA device: ibv_get_device_list found none%s; "
			 "use datapath=udp", !devs && errno ? " (the kernel has no RDMA support)" : "");
		if (devs)
			ops->free_device_list(devs);
		free(dp);
		return -EOPNOTSUPP;
	}
	for (uint32_t i = 0; i < cfg->nplanes && !rc; i++) {
		dp->n = i + 1;
		rc = open_plane(dp, i, &cfg->planes[i], devs, ndev, why, whylen);
	}
	/* Contexts stay valid once the list is freed (ibv_get_device_list(3)). */
	ops->free_device_list(devs);
	if (rc) {
		verbs_close(&dp->base);
		return rc;
	}
	*out = &dp->base;
	return 0;
}

static int verbs_open(struct mrc_dp **out, const struct mrc_dp_cfg *cfg, char *why, size_t whylen)
{
	return mrc__dp_verbs_open_ops(out, cfg, &mrc__dp_verbs_real, why, whylen);
}

static int verbs_fd(const struct mrc_dp *base, uint32_t plane)
{
	const struct mrc__dp_verbs_dp *dp = (const struct mrc__dp_verbs_dp *)base;
	return plane < dp->n ? dp->pl[plane].ch->fd : -EINVAL;
}

static int verbs_link_up(const struct mrc_dp *base, uint32_t plane)
{
	const struct mrc__dp_verbs_dp *dp = (const struct mrc__dp_verbs_dp *)base;
	if (plane >= dp->n)
		return -EINVAL;
	struct ibv_port_attr pa;
	memset(&pa, 0, sizeof(pa));
	int rc = dp->ops->query_port(dp->pl[plane].ctx, dp->pl[plane].port, &pa);
	return rc ? verr(rc) : pa.state == IBV_PORT_ACTIVE;
}

static void verbs_get_stats(const struct mrc_dp *base, struct mrc_dp_stats *st)
{
	*st = ((const struct mrc__dp_verbs_dp *)base)->st;
}

void mrc__dp_verbs_xstats(const struct mrc_dp *base, struct mrc__dp_verbs_xstats *x)
{
	*x = ((const struct mrc__dp_verbs_dp *)base)->x;
}

const struct mrc_dp_ops mrc__dp_verbs_ops = {
	.name = "verbs",
	.open = verbs_open,
	.close = verbs_close,
	.fd = verbs_fd,
	.send = mrc__dp_verbs_send,
	.recv = mrc__dp_verbs_recv,
	.get_stats = verbs_get_stats,
	.link_up = verbs_link_up,
	.ep_local = mrc__dp_verbs_ep_local,
	.ep_set = mrc__dp_verbs_ep_set,
	.mem_reg = mrc__dp_verbs_mem_reg,
	.mem_unreg = mrc__dp_verbs_mem_unreg,
};

#else
MRC__DP_UNBUILT(mrc__dp_verbs_ops, "verbs",
		"built without libibverbs-dev (rdma-core); install it (scripts/deps.sh does) and rebuild");
#endif
