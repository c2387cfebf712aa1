/* The verbs datapath's state, shared by verbs.c (open, close, the event
 * descriptor) and verbs_io.c (send, receive, address handles, peers,
 * registered regions).  See verbs.h. */
#ifndef MRC_DATAPATH_VERBS_INT_H
#define MRC_DATAPATH_VERBS_INT_H

#include "datapath/verbs.h"

/* Address handles and peer QP numbers are cached set-associatively: a
 * lookup hashes the address to one set and compares its ways, so a send
 * costs O(1) however many paths there are, and a full set evicts its
 * least recently used way. */
#define MRC__VERBS_WAYS 4
#define MRC__VERBS_MAX_REGIONS 32

struct mrc__vent {
	struct in6_addr key;
	uint64_t used;            /* LRU clock */
	uint64_t last_seq;        /* AH: last send posted with it */
	struct ibv_ah *ah;        /* AH cache */
	uint32_t qpn;             /* peer table */
	uint8_t valid;
};

struct mrc__vregion {
	uintptr_t addr;
	size_t len;
	struct ibv_mr *mr[MRC_DP_MAX_PLANES];
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
	struct mrc__vent *ah, *peer;
};

/* A send WR chain for one plane, posted as one ibv_post_send. */
struct mrc__vchain {
	struct ibv_send_wr wr[MRC_DP_BATCH];
	struct ibv_sge sge[MRC_DP_BATCH][3];
	uint32_t n;
};

struct mrc__verbs_dp {
	struct mrc_dp base;
	const struct mrc__verbs_ops *ops;
	uint32_t n;
	uint16_t port;
	uint32_t rx_depth, tx_depth, sets; /* sets * WAYS: AH and peer capacity */
	uint64_t clock;
	struct mrc__vplane pl[MRC_DP_MAX_PLANES];
	struct mrc__vregion reg[MRC__VERBS_MAX_REGIONS];
	struct mrc__vchain chain[MRC_DP_MAX_PLANES]; /* empty between send calls */
	struct mrc_dp_stats st;
	struct mrc__verbs_xstats x;
};

/* verbs_io.c */
int mrc__verbs_send(struct mrc_dp *dp, const struct mrc_dp_out *pkts, uint32_t n);
int mrc__verbs_recv(struct mrc_dp *dp, uint32_t plane, struct mrc_dp_in *in, uint32_t max);
/* Destroys every AH of the plane (close). */
void mrc__verbs_drop_ahs(struct mrc__verbs_dp *dp, struct mrc__vplane *p);

#endif
