/* The verbs datapath's state, shared by verbs.c (open, close, the event
 * descriptor) and verbs_io.c (send, receive, address handles, peers,
 * registered regions).  See verbs.h. */
#ifndef MRC_DATAPATH_VERBS_INT_H
#define MRC_DATAPATH_VERBS_INT_H

#include "datapath/verbs.h"

/* Address handles are cached set-associatively: a lookup hashes the
 * address to one set and compares its ways, so a send costs O(1) however
 * many paths there are, and a full set evicts its least recently used
 * way (a handle can be made again). */
#define MRC__VERBS_WAYS 4
#define MRC__VERBS_MAX_REGIONS 32

struct mrc__vent {
	struct in6_addr key;
	uint64_t used;            /* LRU clock */
	uint64_t last_seq;        /* AH: last send posted with it */
	struct ibv_ah *ah;
	uint8_t valid;
};

/* Peer QP numbers by destination address: an open-addressing table
 * (linear probing, grown at half load) that never evicts what mrcd set,
 * since a QP number, unlike a handle, cannot be made again here.  Those
 * learned from received packets are capped at ah_max per plane (any
 * source can send one) and never replace one mrcd set (which came
 * sealed with the cluster key). */
struct mrc__vpeer {
	struct in6_addr key;
	uint32_t qpn;             /* 0: none (forgotten) */
	uint8_t used, set;        /* set: by mrcd (ep_set), not learned */
};
struct mrc__vpeers {
	struct mrc__vpeer *t;
	uint32_t cap, n, learned; /* cap: a power of two */
};

struct mrc__vregion {
	uintptr_t addr;
	size_t len;
	struct ibv_mr *mr[MRC_DP_MAX_PLANES];
	uint64_t last_seq[MRC_DP_MAX_PLANES]; /* last send reading it, per plane */
	uint8_t used;
};

struct mrc__vplane {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_comp_channel *ch;
	struct ibv_cq *rcq, *scq;
	struct ibv_qp *qp;
	struct ibv_mr *rmr, *smr;
	uint8_t *rbuf, *sbuf;     /* receive pool, send bounce slots */
	char dev[64];             /* device name, for messages */
	uint8_t port;
	uint32_t gid_index;
	uint32_t mtu;             /* UD message limit: the port's active MTU */
	uint32_t rslot;           /* bytes per receive slot: GRH + mtu */
	uint32_t nposted;         /* receives posted at open */
	uint64_t tx_posted, tx_done; /* every send is signalled, completed in order */
	uint32_t repost[MRC_DP_BATCH], nrepost; /* handed out by the last recv */
	struct mrc__vent *ah;
	struct mrc__vpeers peers;
};

/* A send WR chain for one plane, posted as one ibv_post_send. */
struct mrc__vchain {
	struct ibv_send_wr wr[MRC_DP_BATCH];
	struct ibv_sge sge[MRC_DP_BATCH][3];
	uint32_t n;
};

struct mrc__dp_verbs_dp {
	struct mrc_dp base;
	const struct mrc__dp_verbs_ops *ops;
	uint32_t n;
	uint16_t port;
	uint32_t rx_depth, tx_depth, sets; /* sets * WAYS: AH and peer capacity */
	uint64_t clock;
	struct mrc__vplane pl[MRC_DP_MAX_PLANES];
	struct mrc__vregion reg[MRC__VERBS_MAX_REGIONS];
	struct mrc__vchain chain[MRC_DP_MAX_PLANES]; /* empty between send calls */
	struct mrc_dp_stats st;
	struct mrc__dp_verbs_xstats x;
};

/* verbs_io.c */
int mrc__dp_verbs_send(struct mrc_dp *dp, const struct mrc_dp_out *pkts, uint32_t n);
int mrc__dp_verbs_recv(struct mrc_dp *dp, uint32_t plane, struct mrc_dp_in *in, uint32_t max);
/* Destroys every AH of the plane (close). */
void mrc__dp_verbs_drop_ahs(struct mrc__dp_verbs_dp *dp, struct mrc__vplane *p);
/* The datapath ops ep_local, ep_set, mem_reg, mem_unreg (datapath.h). */
int mrc__dp_verbs_ep_local(const struct mrc_dp *dp, uint32_t plane, uint32_t *ep);
int mrc__dp_verbs_ep_set(struct mrc_dp *dp, uint32_t plane, const struct in6_addr *dst, uint32_t ep);
int mrc__dp_verbs_mem_reg(struct mrc_dp *dp, void *addr, size_t len, int dmabuf_fd, uint64_t off);
void mrc__dp_verbs_mem_unreg(struct mrc_dp *dp, int id);
/* An empty peer table (open); free(t->t) releases it. */
int mrc__dp_verbs_peers_init(struct mrc__vpeers *t);

#endif
