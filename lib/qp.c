/* libmrc: queue pairs: creation (mapping the daemon's rings), addresses,
 * connection. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "lib/internal.h"

/* The daemon wrote the headers; still check them, so a mismatched daemon
 * gives a clean error instead of stray stores.  A new ring starts empty
 * at its base (ring.h "Index base"): head and tail there (a CQ may hold
 * at most entries completions already). */
static int ring_attach(struct mrc_ring *r, struct mrc_qp *qp, uint64_t off, uint32_t kind,
		       uint32_t desc_size)
{
	if (off > qp->map_len || qp->map_len - off < sizeof(struct mrc_ring_hdr) || (off & 63))
		return -EBADMSG;
	struct mrc_ring_hdr *h = (struct mrc_ring_hdr *)((char *)qp->map + off);
	if (h->magic != MRC_RING_MAGIC || h->version != MRC_RING_VERSION)
		return -EPROTONOSUPPORT;
	uint32_t n = h->entries;
	if (h->kind != kind || h->desc_size != desc_size || n < MRC_RING_MIN_ENTRIES ||
	    n > MRC_RING_MAX_ENTRIES || (n & (n - 1)) || h->qpn != qp->qpn)
		return -EBADMSG;
	if (h->desc_off < sizeof(*h) || h->desc_off > qp->map_len - off ||
	    (qp->map_len - off - h->desc_off) / desc_size < n)
		return -EBADMSG;
	uint64_t head = h->head, tail = mrc_ring_tail_load(h);
	if (tail != h->base || head - tail > (kind == MRC_RING_SQ ? 0 : n))
		return -EBADMSG;
	r->hdr = h;
	r->desc = (char *)h + h->desc_off;
	r->mask = n - 1;
	r->idx = kind == MRC_RING_SQ ? head : tail;
	r->tail = tail;
	return 0;
}

/* The QP's pending byte (hdr.notify_slot) must lie inside the context's
 * notify page. */
static int notify_attach(struct mrc_qp *qp, int polled)
{
	struct mrc_notify *n = qp->ctx->notify;
	if (qp->sq.hdr->notify_slot >= n->slots ||
	    !!(qp->sq.hdr->flags & MRC_RING_F_POLLED) != polled)
		return -EBADMSG;
	qp->notify = n;
	qp->notify_slot = qp->sq.hdr->notify_slot;
	qp->polled = polled;
	return 0;
}

MRC__API int mrc_create_qp(struct mrc_ctx *ctx, const struct mrc_qp_cfg *cfg,
			   struct mrc_qp **out)
{
	*out = NULL;
	struct mrc_cli_create_qp q = { .sq_entries = 256, .cq_entries = 0 };
	if (cfg) {
		if (cfg->flags & ~(MRC_QP_PIN | MRC_QP_POLLED | MRC_QP_URGENT | MRC_QP_BULK) ||
		    (cfg->flags & MRC_QP_URGENT && cfg->flags & MRC_QP_BULK) ||
		    cfg->plane_mask >> MRC_QP_MAX_PLANES)
			return -EINVAL;
		q.plane_mask = cfg->plane_mask;
		q.index_base = cfg->index_base;
		if (cfg->sq_entries)
			q.sq_entries = cfg->sq_entries;
		q.cq_entries = cfg->cq_entries;
		q.flags = (cfg->flags & MRC_QP_PIN ? MRC_CLI_QP_PIN_EV : 0) |
			  (cfg->flags & MRC_QP_POLLED ? MRC_CLI_QP_POLLED : 0) |
			  (cfg->flags & MRC_QP_URGENT ? MRC_CLI_QP_URGENT : 0) |
			  (cfg->flags & MRC_QP_BULK ? MRC_CLI_QP_BULK : 0);
		q.pin_ev = cfg->flags & MRC_QP_PIN ? cfg->pin_ev : 0;
	}
	if (!q.cq_entries)
		q.cq_entries = q.sq_entries * 2;
	struct mrc_cli_create_qp_rep rep;
	int fds[1] = { -1 };
	int r = mrc__lib_call(ctx, MRC_CLI_CREATE_QP, &q, sizeof(q), -1, &rep, sizeof(rep), fds, 1);
	if (r)
		return r;
	struct mrc_qp *qp = calloc(1, sizeof(*qp));
	if (!qp) {
		r = -ENOMEM;
		goto fail;
	}
	qp->ctx = ctx;
	qp->qpn = rep.qpn;
	qp->map_len = rep.map_len;
	qp->map = mmap(NULL, rep.map_len, PROT_READ | PROT_WRITE, MAP_SHARED, fds[0], 0);
	if (qp->map == MAP_FAILED) {
		r = -errno;
		goto fail;
	}
	r = ring_attach(&qp->sq, qp, rep.sq_off, MRC_RING_SQ, sizeof(struct mrc_sqe));
	if (!r)
		r = ring_attach(&qp->cq, qp, rep.cq_off, MRC_RING_CQ, sizeof(struct mrc_cqe));
	if (!r && qp->sq.hdr->base != q.index_base)
		r = -EBADMSG;
	if (!r)
		r = notify_attach(qp, !!(q.flags & MRC_CLI_QP_POLLED));
	if (r) {
		munmap(qp->map, qp->map_len);
		goto fail;
	}
	close(fds[0]);
	pthread_mutex_init(&qp->sq_lock, NULL);
	pthread_mutex_init(&qp->cq_lock, NULL);
	pthread_mutex_lock(&ctx->lock);
	qp->next = ctx->qps;
	ctx->qps = qp;
	pthread_mutex_unlock(&ctx->lock);
	*out = qp;
	return 0;
fail:
	free(qp);
	close(fds[0]);
	struct mrc_cli_qpn d = { .qpn = rep.qpn };
	mrc__lib_call(ctx, MRC_CLI_DESTROY_QP, &d, sizeof(d), -1, NULL, 0, NULL, 0);
	return r;
}

MRC__API int mrc_destroy_qp(struct mrc_qp *qp)
{
	if (!qp)
		return 0;
	struct mrc_cli_qpn d = { .qpn = qp->qpn };
	int r = mrc__lib_call(qp->ctx, MRC_CLI_DESTROY_QP, &d, sizeof(d), -1, NULL, 0, NULL, 0);
	mrc__lib_unlink_qp(qp);
	munmap(qp->map, qp->map_len);
	pthread_mutex_destroy(&qp->sq_lock);
	pthread_mutex_destroy(&qp->cq_lock);
	free(qp);
	return r == -EPIPE || r == -ECONNRESET ? 0 : r;
}

MRC__API uint32_t mrc_qp_num(const struct mrc_qp *qp) { return qp->qpn; }
/* The context's CQ doorbell: one per context (client protocol 4). */
MRC__API int mrc_qp_fd(const struct mrc_qp *qp) { return qp->ctx->cq_bell; }

MRC__API int mrc_qp_info_get(struct mrc_qp *qp, struct mrc_qp_addr *local)
{
	struct mrc_cli_qpn q = { .qpn = qp->qpn };
	struct mrc_cli_qp_info_rep rep;
	int r = mrc__lib_call(qp->ctx, MRC_CLI_QP_INFO, &q, sizeof(q), -1, &rep, sizeof(rep), NULL, 0);
	if (r)
		return r;
	*local = (struct mrc_qp_addr){ .host = rep.local.host, .qpn = rep.local.qpn,
				       .psn = rep.local.psn };
	return 0;
}

MRC__API int mrc_connect_oob(struct mrc_qp *qp, const struct mrc_qp_addr *remote)
{
	struct mrc_cli_connect_oob q = {
		.qpn = qp->qpn,
		.remote = { .host = remote->host, .qpn = remote->qpn, .psn = remote->psn,
			    .priv = remote->priv },
	};
	return mrc__lib_call(qp->ctx, MRC_CLI_CONNECT_OOB, &q, sizeof(q), -1, NULL, 0, NULL, 0);
}

MRC__API int mrc_listen(struct mrc_ctx *ctx, uint32_t sid, uint32_t backlog)
{
	struct mrc_cli_listen q = { .sid = sid, .backlog = backlog };
	return mrc__lib_call(ctx, MRC_CLI_LISTEN, &q, sizeof(q), -1, NULL, 0, NULL, 0);
}

/* The public record (mrc.h, stable) to the protocol's (codec/climsg.h,
 * free to change with the daemon). */
MRC__API int mrc_straggler_file(struct mrc_ctx *ctx, const struct mrc_straggler_rec *rec)
{
	if (!ctx || !rec || rec->size < sizeof(*rec))
		return -EINVAL;
	struct mrc_cli_straggler m = {
		.comm = rec->comm, .call = rec->call, .cause = rec->cause, .rank = rec->rank,
		.host = rec->host, .peer_rank = rec->peer_rank, .peer_host = rec->peer_host,
		.qpn = rec->qpn, .plane = rec->plane, .rank_sends = rec->rank_sends,
		.call_us = rec->call_us, .late_us = rec->late_us, .typical_us = rec->typical_us };
	return mrc__lib_call(ctx, MRC_CLI_STRAGGLER, &m, sizeof(m), -1, NULL, 0, NULL, 0);
}

static struct mrc_qp_stats stats_of(const struct mrc_cli_qp_stats_rep *r)
{
	return (struct mrc_qp_stats){ .tx_pkts = r->tx_pkts, .retx = r->retx,
				      .rto_fires = r->rto_fires, .nacks_rx = r->nacks_rx };
}

MRC__API int mrc_qp_stats(struct mrc_qp *qp, struct mrc_qp_stats *out)
{
	if (!qp || !out)
		return -EINVAL;
	struct mrc_cli_qpn q = { .qpn = qp->qpn };
	struct mrc_cli_qp_stats_rep rep;
	int r = mrc__lib_call(qp->ctx, MRC_CLI_QP_STATS, &q, sizeof(q), -1, &rep, sizeof(rep), NULL, 0);
	if (!r)
		*out = stats_of(&rep);
	return r;
}

/* One QP_STATS_N round trip for n <= MRC_CLI_QP_STATS_N_MAX QPs of ctx:
 * the reply must name the request's QPs, in order (the codec has checked
 * its count and sizes). */
static int qp_stats_chunk(struct mrc_ctx *ctx, struct mrc_qp *const *qps, uint32_t n,
			  struct mrc_qp_stats *out, int *st)
{
	struct mrc_cli_qp_stats_n q = { .n = n };
	struct mrc_cli_qp_stats_n_rep rep;
	for (uint32_t i = 0; i < n; i++)
		q.qpn[i] = qps[i]->qpn;
	int r = mrc__lib_call(ctx, MRC_CLI_QP_STATS_N, &q, sizeof(q), -1, &rep, sizeof(rep), NULL, 0);
	if (r)
		return r;
	if (rep.n != n)
		return -EBADMSG;
	for (uint32_t i = 0; i < n; i++) {
		const struct mrc_cli_qp_stats_n_rec *k = &rep.rec[i];
		if (k->qpn != q.qpn[i])
			return -EBADMSG;
		st[i] = k->status;
		out[i] = stats_of(&k->s);
	}
	return 0;
}

MRC__API int mrc_qp_stats_n(struct mrc_qp *const *qps, size_t n, struct mrc_qp_stats *out, int *st)
{
	if (!qps || !n || !out || !st)
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		if (!qps[i] || qps[i]->ctx != qps[0]->ctx)
			return -EINVAL;
	for (size_t i = 0; i < n; i += MRC_CLI_QP_STATS_N_MAX) {
		uint32_t k = n - i < MRC_CLI_QP_STATS_N_MAX ? (uint32_t)(n - i) : MRC_CLI_QP_STATS_N_MAX;
		int r = qp_stats_chunk(qps[0]->ctx, qps + i, k, out + i, st + i);
		if (r)
			return r;
	}
	return 0;
}

MRC__API int mrc_unlisten(struct mrc_ctx *ctx, uint32_t sid)
{
	struct mrc_cli_listen q = { .sid = sid };
	return mrc__lib_call(ctx, MRC_CLI_UNLISTEN, &q, sizeof(q), -1, NULL, 0, NULL, 0);
}

static void set_addr(struct mrc_qp_addr *a, const struct mrc_cli_addr_rep *rep)
{
	if (a)
		*a = (struct mrc_qp_addr){ .host = rep->remote.host, .qpn = rep->remote.qpn,
					   .psn = rep->remote.psn, .priv = rep->remote.priv };
}

MRC__API int mrc_accept(struct mrc_qp *qp, uint32_t sid, uint32_t priv, int timeout_ms,
			struct mrc_qp_addr *remote)
{
	struct mrc_cli_accept q = { .sid = sid, .qpn = qp->qpn, .priv = priv,
				    .timeout_ms = timeout_ms > 0 ? (uint32_t)timeout_ms : 0 };
	struct mrc_cli_addr_rep rep;
	int r = mrc__lib_call(qp->ctx, MRC_CLI_ACCEPT, &q, sizeof(q), -1, &rep, sizeof(rep), NULL, 0);
	if (!r)
		set_addr(remote, &rep);
	return r;
}

MRC__API int mrc_connect(struct mrc_qp *qp, uint32_t host, uint32_t sid, uint32_t priv,
			 struct mrc_qp_addr *remote)
{
	struct mrc_cli_connect q = { .host = host, .sid = sid, .qpn = qp->qpn, .priv = priv };
	struct mrc_cli_addr_rep rep;
	int r = mrc__lib_call(qp->ctx, MRC_CLI_CONNECT, &q, sizeof(q), -1, &rep, sizeof(rep), NULL, 0);
	if (!r)
		set_addr(remote, &rep);
	return r;
}

MRC__API int mrc_qp_rings(struct mrc_qp *qp, struct mrc_qp_rings *out)
{
	if (!qp || !out)
		return -EINVAL;
	*out = (struct mrc_qp_rings){ .sq = qp->sq.hdr, .cq = qp->cq.hdr, .map = qp->map,
				      .map_len = qp->map_len,
				      .notify = qp->polled ? qp->notify : NULL,
				      .notify_len = qp->polled ? qp->ctx->notify_len : 0 };
	return 0;
}
