/* What the parts of the endpoint's data path (fi/ep*.c) share; all of
 * it runs under d->lock. */
#ifndef MRC_FI_EP_INT_H
#define MRC_FI_EP_INT_H

#include "fi/mrcfi.h"
#include "fi/trace.h"

/* wr_id: kind in the top 4 bits, the side in bit 59, then an index (slot,
 * chunk) or, for atomics, the request's address. */
enum { WR_RX = 1, WR_TX = 2, WR_CHW = 3, WR_ATOM = 4 };
#define WR(k, s, v) ((uint64_t)(k) << 60 | (uint64_t)(s) << 59 | (uint64_t)(v))
#define WR_KIND(w)  ((unsigned)((w) >> 60))
#define WR_SIDE(w)  ((int)(((w) >> 59) & 1))
#define WR_VAL(w)   ((w) & ((1ull << 59) - 1))

static inline void *slot_addr(struct mrcfi_side *s, struct mrcfi_pool *p, uint32_t i)
{
	return s->base + p->off + (uint64_t)i * p->size;
}

/* Receive slot i of side s posted on qp (set up, grown or given back). */
static inline int rx_slot_post(struct mrcfi_side *sd, struct mrc_qp *qp, int s, uint32_t i)
{
	return mrc_post_recv(qp, WR(WR_RX, s, i), sd->key, sd->rx.off + (uint64_t)i * MRCFI_SLOT,
			     MRCFI_SLOT);
}

struct mrcfi_req *mrcfi_req_new(struct mrcfi_ep *ep, enum mrcfi_kind kind, void *context);
void mrcfi_req_free(struct mrcfi_req *r);
struct mrcfi_req *mrcfi_req_find(struct mrcfi_ep *ep, uint32_t id, enum mrcfi_kind kind,
				  struct mrcfi_peer *peer);
void mrcfi_list_del(struct mrcfi_req **head, struct mrcfi_req *r);
int mrcfi_on_list(struct mrcfi_req *head, struct mrcfi_req *r);
void mrcfi_list_add_tail(struct mrcfi_req **head, struct mrcfi_req *r);
size_t mrcfi_iov_copy_to(const struct iovec *iov, size_t niov, size_t off, const void *src,
			  size_t len);
size_t mrcfi_iov_copy_from(const struct iovec *iov, size_t niov, size_t off, void *dst, size_t len);
void mrcfi_cq_put(struct mrcfi_cq *cq, struct mrcfi_req *r, uint64_t flags, size_t len,
		   void *buf, uint64_t data, uint64_t tag, fi_addr_t src, int err, size_t olen,
		   int prov_errno);
uint64_t mrcfi_tx_flags(const struct mrcfi_req *r);
void mrcfi_tx_done(struct mrcfi_req *r);
void mrcfi_tx_check(struct mrcfi_req *r);
fi_addr_t mrcfi_src_of(struct mrcfi_ep *ep, struct mrcfi_peer *p);
void mrcfi_rx_done(struct mrcfi_req *r, size_t len, uint64_t total, int err);
struct mrcfi_peer *mrcfi_peer_get(struct mrcfi_ep *ep, const struct mrcfi_name *n);
void mrcfi_unexp_free(struct mrcfi_ep *ep, struct mrcfi_unexp *u);
void mrcfi_qp_detach(struct mrcfi_ep *ep, struct mrcfi_peer *p, int s);
void mrcfi_qp_grow(struct mrcfi_ep *ep, struct mrcfi_peer *p, int s);
int mrcfi_peer_tx(struct mrcfi_ep *ep, struct mrcfi_peer *p);
void mrcfi_mark_dead(struct mrcfi_domain *d);
int mrcfi_post_ctl(struct mrcfi_ep *ep, struct mrcfi_peer *p, const struct mrcfi_hdr *h,
		    const struct iovec *iov, size_t niov, struct mrcfi_req *owner);
void mrcfi_ctl_send(struct mrcfi_ep *ep, struct mrcfi_peer *p, const struct mrcfi_hdr *h);
void mrcfi_hdr_init(struct mrcfi_hdr *h, uint8_t op);
void mrcfi_rz_start(struct mrcfi_req *r, struct mrcfi_peer *p, int side,
		     const struct mrcfi_hdr *h);
int mrcfi_tx_pump(struct mrcfi_req *r);
void mrcfi_pump(struct mrcfi_ep *ep);
void mrcfi_proto_error(struct mrcfi_ep *ep, struct mrcfi_peer *p, const char *what);
void mrcfi_on_cts(struct mrcfi_ep *ep, struct mrcfi_peer *p, const struct mrcfi_hdr *h);
void mrcfi_on_rzdata(struct mrcfi_ep *ep, struct mrcfi_peer *p, int side,
		      const struct mrcfi_hdr *h);
void mrcfi_on_recv(struct mrcfi_ep *ep, struct mrcfi_peer *p, int side, const void *buf,
		    size_t n, int has_imm, uint32_t imm);
void mrcfi_pools_release(struct mrcfi_side *sd, const void *owner);
void mrcfi_peer_reset(struct mrcfi_ep *ep, struct mrcfi_peer *p, int s);
size_t mrcfi_iov_len(const struct iovec *iov, size_t n);

#endif
