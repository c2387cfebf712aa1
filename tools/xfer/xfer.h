/* mrc-xfer internals: see xfer.c. */
#ifndef MRC_TOOLS_XFER_H
#define MRC_TOOLS_XFER_H

#include "daemon/core/mrcd.h"

#define XFER_MAX_QPS 1024

struct xqp {                      /* one connection */
	uint32_t qpn;
	uint64_t off, end, posted, done;   /* this QP's slice of the buffer */
	uint32_t outstanding;
	struct mrcd_qp_addr remote;
	int up;
};

struct xfer {
	struct mrcd *d;
	struct mrcd_cfg cfg;
	int server, pin, pingpong;
	uint32_t peer_host, sid, nqps, accepted, imms;
	uint64_t bytes, chunk, done_bytes, seed, iters, iter;
	uint8_t *buf;
	uint32_t key;
	struct xqp q[XFER_MAX_QPS];
	uint64_t t0, t_last, max_gap, t_ping, *stamps, *rtts;
	uint32_t nstamps, report_ms, progress, next_pct;
	int rc;
	ev_timer linger;
};

/* The one transfer of this process (callbacks get a QP as context). */
extern struct xfer *xfer_self;

/* flow.c */
void xfer_on_wc(void *ctx, const struct mrce_wc *wc);
void xfer_on_connected(void *ctx, int err, const struct mrcd_qp_addr *remote);
void xfer_on_req(void *ctx, const struct mrcd_cm_req *req);
void xfer_finish(struct xfer *x, int rc);
int xfer_qp_create(struct xfer *x, uint32_t *qpn);

#endif
