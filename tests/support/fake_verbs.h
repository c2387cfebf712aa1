/* A fake libibverbs for the verbs datapath's unit tests (an ops table of
 * mocks, struct mrc__dp_verbs_ops): it counts every object it creates, can
 * fail any call (F.fail, F.fail_after), logs every send, and, with F.wire
 * set, carries each send to the fake QP it names (by QP number and Q_Key,
 * as a NIC demultiplexes; the GRH source is the sending device's GID), so
 * two providers opened on it talk to each other.  Device 0 reports F.gid
 * as its RoCEv2 GID, device 1 F.gid with the last byte flipped (fake_gid).
 * Used by tests/test_dp_verbs.c and tests/test_dp_verbs_peer.c. */
#ifndef MRC_TESTS_FAKE_VERBS_H
#define MRC_TESTS_FAKE_VERBS_H

#include "datapath/verbs_int.h"

enum { K_CTX, K_PD, K_CH, K_CQ, K_QP, K_MR, K_AH, NK };
extern const char *const kname[NK];

#define QDEPTH 4096
#define FAKE_MAX_QPS 64
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
	uint32_t qkey;
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

struct fake {
	int ndev;
	struct ibv_device dev[2];
	struct in6_addr gid;      /* the RoCEv2 GID device 0 reports */
	int live[NK], made[NK];
	const char *fail;         /* the op to fail ... */
	int fail_after;           /* ... after this many successful calls */
	int calls;
	int complete_sends;       /* 0: send completions are held back */
	enum ibv_wc_status send_status;
	uint32_t next_qpn, next_key;
	struct sent log[256];
	uint32_t nlog;
	/* wire mode */
	int wire;
	struct fqp *qps[FAKE_MAX_QPS]; /* live QPs */
	uint32_t wire_delivered, wire_no_qp, wire_bad_qkey;
};
extern struct fake F;
extern const struct mrc__dp_verbs_ops fake_ops;
extern struct mrc_dp_plane planes[2];     /* cfg2's */

/* Whether call op should fail now (F.fail names it); sets errno. */
int fails(const char *op);
void cq_push(struct fcq *q, const struct ibv_wc *wc);
/* Delivers a datagram to plane's QP: takes the oldest posted receive,
 * writes an IPv6 GRH and the bytes, completes it. */
void deliver(struct mrc_dp *dp, uint32_t plane, const char *src, uint8_t tclass,
	     const void *data, size_t len, uint32_t src_qp, enum ibv_wc_status status);
/* Receives posted and not yet completed on plane's QP. */
uint32_t posted(struct mrc_dp *dp, uint32_t plane);
int readable(int fd);
struct in6_addr A(const char *s);
/* The RoCEv2 GID of fake device d (0 or 1). */
struct in6_addr fake_gid(int d);
/* Resets F (two devices, sends completed) and returns a two-plane
 * configuration on device 0's address. */
struct mrc_dp_cfg cfg2(const char *args);
void assert_nothing_live(void);
/* Opens the provider on the fake; fails the test when it cannot. */
struct mrc_dp *open_fake(struct mrc_dp_cfg *c);

#endif
