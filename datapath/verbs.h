/* The verbs (rdma-core) datapath's internals: one UD queue pair per plane
 * on a RoCEv2 NIC (docs/datapaths.md, "verbs").  Every libibverbs call
 * goes through a const ops table, so the provider runs unchanged against
 * the real library (mrc__dp_verbs_real) or against a fake in the unit tests
 * (tests/test_dp_verbs.c): this machine class has no RDMA device, and a
 * provider that is only ever compiled is not tested.  Built only when
 * libibverbs-dev is installed (MRC_HAVE_VERBS; datapath/datapath.mk). */
#ifndef MRC_DATAPATH_VERBS_H
#define MRC_DATAPATH_VERBS_H

#include <infiniband/verbs.h>

#include "datapath/datapath.h"

/* rdma-core's entry points the provider uses.  Those that are inline
 * functions or macros in <infiniband/verbs.h> (post_send, poll_cq,
 * query_port, reg_mr, ...) are wrapped as plain functions in
 * datapath/verbs_ops.c. */
struct mrc__dp_verbs_ops {
	struct ibv_device **(*get_device_list)(int *n);
	void (*free_device_list)(struct ibv_device **list);
	const char *(*get_device_name)(struct ibv_device *dev);
	struct ibv_context *(*open_device)(struct ibv_device *dev);
	int (*close_device)(struct ibv_context *ctx);
	ssize_t (*query_gid_table)(struct ibv_context *ctx, struct ibv_gid_entry *e, size_t max);
	int (*query_port)(struct ibv_context *ctx, uint8_t port, struct ibv_port_attr *attr);
	struct ibv_pd *(*alloc_pd)(struct ibv_context *ctx);
	int (*dealloc_pd)(struct ibv_pd *pd);
	struct ibv_mr *(*reg_mr)(struct ibv_pd *pd, void *addr, size_t len, int access);
	struct ibv_mr *(*reg_dmabuf_mr)(struct ibv_pd *pd, uint64_t off, size_t len,
					uint64_t iova, int fd, int access);
	int (*dereg_mr)(struct ibv_mr *mr);
	struct ibv_comp_channel *(*create_comp_channel)(struct ibv_context *ctx);
	int (*destroy_comp_channel)(struct ibv_comp_channel *ch);
	struct ibv_cq *(*create_cq)(struct ibv_context *ctx, int cqe, void *cq_ctx,
				    struct ibv_comp_channel *ch, int vector);
	int (*destroy_cq)(struct ibv_cq *cq);
	int (*req_notify_cq)(struct ibv_cq *cq, int solicited_only);
	int (*get_cq_event)(struct ibv_comp_channel *ch, struct ibv_cq **cq, void **cq_ctx);
	void (*ack_cq_events)(struct ibv_cq *cq, unsigned int n);
	int (*poll_cq)(struct ibv_cq *cq, int n, struct ibv_wc *wc);
	struct ibv_qp *(*create_qp)(struct ibv_pd *pd, struct ibv_qp_init_attr *attr);
	int (*modify_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask);
	int (*destroy_qp)(struct ibv_qp *qp);
	struct ibv_ah *(*create_ah)(struct ibv_pd *pd, struct ibv_ah_attr *attr);
	int (*destroy_ah)(struct ibv_ah *ah);
	int (*post_send)(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad);
	int (*post_recv)(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);
};

/* The real one: libibverbs. */
extern const struct mrc__dp_verbs_ops mrc__dp_verbs_real;

/* Bytes of the Global Routing Header a UD receive buffer begins with (for
 * RoCEv2 over IPv6: the packet's IPv6 header). */
#define MRC__VERBS_GRH 40
/* The Q_Key every mrc UD QP uses (high bit clear: not a privileged key). */
#define MRC__VERBS_QKEY 0x4d524331u

/* open with a given ops table (the provider's open passes the real one). */
int mrc__dp_verbs_open_ops(struct mrc_dp **out, const struct mrc_dp_cfg *cfg,
			   const struct mrc__dp_verbs_ops *ops, char *why, size_t whylen);

/* Tells plane's QP the peer QP number behind destination address dst (a
 * UD send names the remote QP).  The provider also learns it from every
 * packet received (the completion's source QP and the GRH's source
 * address); a send to an address with no known QP number is dropped and
 * counted (no_qpn).  See docs/datapaths.md, "Finding the peer's QP". */
int mrc__dp_verbs_set_peer(struct mrc_dp *dp, uint32_t plane, const struct in6_addr *dst,
			   uint32_t qpn);

/* Registers [addr, addr+len) with every plane's protection domain, so a
 * payload piece inside it is sent straight from it (its own SGE with the
 * region's lkey) instead of through the bounce buffer.  With dmabuf_fd >=
 * 0 the range is GPU memory exported as a dmabuf (ibv_reg_dmabuf_mr; addr
 * is then the device address, used as the iova, and off is the range's
 * offset in the dmabuf).  Returns a region id >= 0 or a negative errno. */
int mrc__dp_verbs_reg(struct mrc_dp *dp, void *addr, size_t len, int dmabuf_fd, uint64_t off);
void mrc__dp_verbs_unreg(struct mrc_dp *dp, int id);

/* What the generic counters do not say. */
struct mrc__dp_verbs_xstats {
	uint64_t no_qpn;          /* sends dropped: peer QP number unknown */
	uint64_t too_big;         /* sends dropped: larger than the port MTU */
	uint64_t tx_wc_err, rx_wc_err; /* error completions */
	uint64_t ah_created, ah_evicted;
	uint64_t zero_copy, copied; /* payloads sent from a region, or bounced */
	uint64_t unreg_busy;      /* regions released with a send still on them */
};
void mrc__dp_verbs_xstats(const struct mrc_dp *dp, struct mrc__dp_verbs_xstats *x);

#endif
