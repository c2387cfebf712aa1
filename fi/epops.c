/* The endpoint's ops tables (msg, tagged, CM; RMA and atomic are
 * fi/epops_rma.c) and the endpoint object itself (open, bind, enable,
 * close); the data path they call is fi/ep_tx.c and fi/ep_rx.c. */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fi/mrcfi.h"

#define EP(e) container_of(e, struct mrcfi_ep, ep)

/* ---- msg ------------------------------------------------------------- */
static uint64_t txdef(struct mrcfi_ep *ep)
{
	return ep->op_flags_tx;
}

static ssize_t m_recv(struct fid_ep *e, void *buf, size_t len, void *desc, fi_addr_t src,
		      void *ctx)
{
	struct iovec v = { buf, len };
	return mrcfi_do_recv(EP(e), &v, 1, src, 0, 0, EP(e)->op_flags_rx, ctx);
}

static ssize_t m_recvv(struct fid_ep *e, const struct iovec *iov, void **desc, size_t count,
		       fi_addr_t src, void *ctx)
{
	return mrcfi_do_recv(EP(e), iov, count, src, 0, 0, EP(e)->op_flags_rx, ctx);
}

static ssize_t m_recvmsg(struct fid_ep *e, const struct fi_msg *m, uint64_t flags)
{
	return mrcfi_do_recv(EP(e), m->msg_iov, m->iov_count, m->addr, 0, 0, flags & ~FI_TAGGED,
		       m->context);
}

static ssize_t m_send(struct fid_ep *e, const void *buf, size_t len, void *desc, fi_addr_t dest,
		      void *ctx)
{
	struct iovec v = { (void *)buf, len };
	return mrcfi_do_send(EP(e), &v, 1, dest, 0, 0, txdef(EP(e)), ctx);
}

static ssize_t m_sendv(struct fid_ep *e, const struct iovec *iov, void **desc, size_t count,
		       fi_addr_t dest, void *ctx)
{
	return mrcfi_do_send(EP(e), iov, count, dest, 0, 0, txdef(EP(e)), ctx);
}

static ssize_t m_sendmsg(struct fid_ep *e, const struct fi_msg *m, uint64_t flags)
{
	return mrcfi_do_send(EP(e), m->msg_iov, m->iov_count, m->addr, 0, m->data, flags & ~FI_TAGGED,
		       m->context);
}

static ssize_t m_inject(struct fid_ep *e, const void *buf, size_t len, fi_addr_t dest)
{
	struct iovec v = { (void *)buf, len };
	return mrcfi_do_send(EP(e), &v, 1, dest, 0, 0, FI_INJECT, NULL);
}

static ssize_t m_senddata(struct fid_ep *e, const void *buf, size_t len, void *desc, uint64_t data,
			  fi_addr_t dest, void *ctx)
{
	struct iovec v = { (void *)buf, len };
	return mrcfi_do_send(EP(e), &v, 1, dest, 0, data, txdef(EP(e)) | FI_REMOTE_CQ_DATA, ctx);
}

static ssize_t m_injectdata(struct fid_ep *e, const void *buf, size_t len, uint64_t data,
			    fi_addr_t dest)
{
	struct iovec v = { (void *)buf, len };
	return mrcfi_do_send(EP(e), &v, 1, dest, 0, data, FI_INJECT | FI_REMOTE_CQ_DATA, NULL);
}

static struct fi_ops_msg msg_ops = {
	.size = sizeof(struct fi_ops_msg), .recv = m_recv, .recvv = m_recvv,
	.recvmsg = m_recvmsg, .send = m_send, .sendv = m_sendv, .sendmsg = m_sendmsg,
	.inject = m_inject, .senddata = m_senddata, .injectdata = m_injectdata,
};

/* ---- tagged ---------------------------------------------------------- */
static ssize_t t_recv(struct fid_ep *e, void *buf, size_t len, void *desc, fi_addr_t src,
		      uint64_t tag, uint64_t ignore, void *ctx)
{
	struct iovec v = { buf, len };
	return mrcfi_do_recv(EP(e), &v, 1, src, tag, ignore, EP(e)->op_flags_rx | FI_TAGGED, ctx);
}

static ssize_t t_recvv(struct fid_ep *e, const struct iovec *iov, void **desc, size_t count,
		       fi_addr_t src, uint64_t tag, uint64_t ignore, void *ctx)
{
	return mrcfi_do_recv(EP(e), iov, count, src, tag, ignore, EP(e)->op_flags_rx | FI_TAGGED, ctx);
}

static ssize_t t_recvmsg(struct fid_ep *e, const struct fi_msg_tagged *m, uint64_t flags)
{
	return mrcfi_do_recv(EP(e), m->msg_iov, m->iov_count, m->addr, m->tag, m->ignore,
		       flags | FI_TAGGED, m->context);
}

static ssize_t t_send(struct fid_ep *e, const void *buf, size_t len, void *desc, fi_addr_t dest,
		      uint64_t tag, void *ctx)
{
	struct iovec v = { (void *)buf, len };
	return mrcfi_do_send(EP(e), &v, 1, dest, tag, 0, txdef(EP(e)) | FI_TAGGED, ctx);
}

static ssize_t t_sendv(struct fid_ep *e, const struct iovec *iov, void **desc, size_t count,
		       fi_addr_t dest, uint64_t tag, void *ctx)
{
	return mrcfi_do_send(EP(e), iov, count, dest, tag, 0, txdef(EP(e)) | FI_TAGGED, ctx);
}

static ssize_t t_sendmsg(struct fid_ep *e, const struct fi_msg_tagged *m, uint64_t flags)
{
	return mrcfi_do_send(EP(e), m->msg_iov, m->iov_count, m->addr, m->tag, m->data,
		       flags | FI_TAGGED, m->context);
}

static ssize_t t_inject(struct fid_ep *e, const void *buf, size_t len, fi_addr_t dest,
			uint64_t tag)
{
	struct iovec v = { (void *)buf, len };
	return mrcfi_do_send(EP(e), &v, 1, dest, tag, 0, FI_INJECT | FI_TAGGED, NULL);
}

static ssize_t t_senddata(struct fid_ep *e, const void *buf, size_t len, void *desc,
			  uint64_t data, fi_addr_t dest, uint64_t tag, void *ctx)
{
	struct iovec v = { (void *)buf, len };
	return mrcfi_do_send(EP(e), &v, 1, dest, tag, data,
		       txdef(EP(e)) | FI_TAGGED | FI_REMOTE_CQ_DATA, ctx);
}

static ssize_t t_injectdata(struct fid_ep *e, const void *buf, size_t len, uint64_t data,
			    fi_addr_t dest, uint64_t tag)
{
	struct iovec v = { (void *)buf, len };
	return mrcfi_do_send(EP(e), &v, 1, dest, tag, data, FI_INJECT | FI_TAGGED | FI_REMOTE_CQ_DATA,
		       NULL);
}

static struct fi_ops_tagged tagged_ops = {
	.size = sizeof(struct fi_ops_tagged), .recv = t_recv, .recvv = t_recvv,
	.recvmsg = t_recvmsg, .send = t_send, .sendv = t_sendv, .sendmsg = t_sendmsg,
	.inject = t_inject, .senddata = t_senddata, .injectdata = t_injectdata,
};

/* ---- cm -------------------------------------------------------------- */
static int cm_setname(fid_t fid, void *addr, size_t addrlen)
{
	return -FI_ENOSYS;
}

static int cm_getname(fid_t fid, void *addr, size_t *addrlen)
{
	struct mrcfi_ep *ep = container_of(fid, struct mrcfi_ep, ep.fid);
	size_t have = *addrlen;
	*addrlen = sizeof(ep->name);
	if (have < sizeof(ep->name))
		return -FI_ETOOSMALL;
	memcpy(addr, &ep->name, sizeof(ep->name));
	return 0;
}

static int cm_getpeer(struct fid_ep *ep, void *addr, size_t *addrlen)
{
	return -FI_ENOSYS;
}

static int cm_connect(struct fid_ep *ep, const void *addr, const void *param, size_t paramlen)
{
	return -FI_ENOSYS;
}

static int cm_listen(struct fid_pep *pep)
{
	return -FI_ENOSYS;
}

static int cm_accept(struct fid_ep *ep, const void *param, size_t paramlen)
{
	return -FI_ENOSYS;
}

static int cm_reject(struct fid_pep *pep, fid_t handle, const void *param, size_t paramlen)
{
	return -FI_ENOSYS;
}

static int cm_shutdown(struct fid_ep *ep, uint64_t flags)
{
	return -FI_ENOSYS;
}

static int cm_join(struct fid_ep *ep, const void *addr, uint64_t flags, struct fid_mc **mc,
		   void *context)
{
	return -FI_ENOSYS;
}

static struct fi_ops_cm cm_ops = {
	.size = sizeof(struct fi_ops_cm), .setname = cm_setname, .getname = cm_getname,
	.getpeer = cm_getpeer, .connect = cm_connect, .listen = cm_listen,
	.accept = cm_accept, .reject = cm_reject, .shutdown = cm_shutdown, .join = cm_join,
};

/* ---- endpoint object ------------------------------------------------- */
static ssize_t ep_cancel(fid_t fid, void *context)
{
	struct mrcfi_ep *ep = container_of(fid, struct mrcfi_ep, ep.fid);
	pthread_mutex_lock(&ep->d->lock);
	ssize_t r = mrcfi_cancel(ep, context);
	pthread_mutex_unlock(&ep->d->lock);
	return r;
}

static int ep_getopt(fid_t fid, int level, int optname, void *optval, size_t *optlen)
{
	struct mrcfi_ep *ep = container_of(fid, struct mrcfi_ep, ep.fid);
	if (level == FI_OPT_ENDPOINT && optname == FI_OPT_MIN_MULTI_RECV) {
		if (*optlen < sizeof(size_t))
			return -FI_ETOOSMALL;
		pthread_mutex_lock(&ep->d->lock);
		memcpy(optval, &ep->min_multi_recv, sizeof(size_t));
		pthread_mutex_unlock(&ep->d->lock);
		*optlen = sizeof(size_t);
		return 0;
	}
	if (level != FI_OPT_ENDPOINT ||
	    (optname != MRCFI_OPT_PROTO_ERRORS && optname != MRCFI_OPT_UNEXP_HELD &&
	     optname != MRCFI_OPT_PROGRESS_ARMED && optname != MRCFI_OPT_RX_GROWN &&
	     optname != MRCFI_OPT_COMPACT_SENT && optname != MRCFI_OPT_IDLE_SLEEPS))
		return -FI_ENOPROTOOPT;
	if (*optlen < sizeof(uint64_t))
		return -FI_ETOOSMALL;
	pthread_mutex_lock(&ep->d->lock);
	memcpy(optval, optname == MRCFI_OPT_UNEXP_HELD ? &ep->unexp_held :
		       optname == MRCFI_OPT_PROGRESS_ARMED ? &ep->d->st_armed_sleeps :
		       optname == MRCFI_OPT_RX_GROWN ? &ep->rx_grown :
		       optname == MRCFI_OPT_COMPACT_SENT ? &ep->compact_sent :
		       optname == MRCFI_OPT_IDLE_SLEEPS ? &ep->d->st_idle_sleeps :
		       &ep->proto_errors, sizeof(uint64_t));
	pthread_mutex_unlock(&ep->d->lock);
	*optlen = sizeof(uint64_t);
	return 0;
}

static int ep_setopt(fid_t fid, int level, int optname, const void *optval, size_t optlen)
{
	struct mrcfi_ep *ep = container_of(fid, struct mrcfi_ep, ep.fid);
	if (level != FI_OPT_ENDPOINT || optname != FI_OPT_MIN_MULTI_RECV)
		return -FI_ENOPROTOOPT;
	if (optlen != sizeof(size_t))
		return -FI_EINVAL;
	pthread_mutex_lock(&ep->d->lock);
	memcpy(&ep->min_multi_recv, optval, sizeof(size_t));
	pthread_mutex_unlock(&ep->d->lock);
	return 0;
}

static int no_tx_ctx(struct fid_ep *sep, int index, struct fi_tx_attr *attr, struct fid_ep **tx,
		     void *context)
{
	return -FI_ENOSYS;
}

static int no_rx_ctx(struct fid_ep *sep, int index, struct fi_rx_attr *attr, struct fid_ep **rx,
		     void *context)
{
	return -FI_ENOSYS;
}

static ssize_t rx_size_left(struct fid_ep *e)
{
	return MRCFI_MAX_REQS;
}

static ssize_t tx_size_left(struct fid_ep *e)
{
	struct mrcfi_ep *ep = EP(e);
	pthread_mutex_lock(&ep->d->lock);
	ssize_t n = ep->d->side[1].tx.nfree < ep->d->side[0].tx.nfree ? ep->d->side[1].tx.nfree :
		    ep->d->side[0].tx.nfree;
	pthread_mutex_unlock(&ep->d->lock);
	return n;
}

static struct fi_ops_ep ep_ops = {
	.size = sizeof(struct fi_ops_ep), .cancel = ep_cancel, .getopt = ep_getopt,
	.setopt = ep_setopt, .tx_ctx = no_tx_ctx, .rx_ctx = no_rx_ctx,
	.rx_size_left = rx_size_left, .tx_size_left = tx_size_left,
};

/* Sends reported done early (inject-complete: the bytes sit in our
 * slot) and those still connecting go out before the QPs go: a client
 * that sends and closes (fabtests' fi_rdm, fi_cq_data) lost its message.
 * Bounded by FI_MRC_LINGER_MS; what is left then is dropped and logged. */
static void ep_linger(struct mrcfi_ep *ep)
{
	struct mrcfi_domain *d = ep->d;
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		pthread_mutex_lock(&d->lock);
		mrcfi_progress(d, 0);
		unsigned n = d->dead || !ep->enabled ? 0 : mrcfi_ep_tx_pending(ep);
		pthread_mutex_unlock(&d->lock);
		if (!n)
			return;
		clock_gettime(CLOCK_MONOTONIC, &t);
		int64_t ms = (t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000;
		if (ms >= d->linger_ms) {
			MRCFI_WARN(FI_LOG_EP_CTRL, "fi_close: %u transmit(s) not over after %u ms: "
				   "dropped\n", n, d->linger_ms);
			return;
		}
		/* the progress thread moves them too: this only waits */
		struct timespec nap = { 0, 200000 };
		nanosleep(&nap, NULL);
	}
}

static int ep_close(struct fid *fid)
{
	struct mrcfi_ep *ep = container_of(fid, struct mrcfi_ep, ep.fid);
	struct mrcfi_domain *d = ep->d;
	ep_linger(ep);
	pthread_mutex_lock(&d->lock);
	for (struct mrcfi_ep **p = &d->eps; *p; p = &(*p)->next)
		if (*p == ep) {
			*p = ep->next;
			break;
		}
	pthread_mutex_lock(&d->sidlock);
	for (unsigned i = 0; i < d->nsids; i++)
		if (d->sids[i] == ep->name.sid)
			d->sids[i] = d->sids[--d->nsids];
	pthread_mutex_unlock(&d->sidlock);
	(void)mrc_unlisten(d->side[0].ctx, ep->name.sid);
	mrcfi_ep_teardown(ep);
	if (ep->av)
		ep->av->refs--;
	if (ep->txcq)
		ep->txcq->refs--;
	if (ep->rxcq)
		ep->rxcq->refs--;
	struct mrcfi_cntr *cs[] = { ep->c_send, ep->c_recv, ep->c_write, ep->c_read };
	for (int k = 0; k < 4; k++)
		if (cs[k])
			cs[k]->refs--;
	pthread_mutex_unlock(&d->lock);
	fi_freeinfo(ep->info);
	free(ep);
	return 0;
}

static int ep_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct mrcfi_ep *ep = container_of(fid, struct mrcfi_ep, ep.fid);
	int r = 0;
	pthread_mutex_lock(&ep->d->lock);
	switch (bfid->fclass) {
	case FI_CLASS_AV: {
		struct mrcfi_av *av = container_of(bfid, struct mrcfi_av, av.fid);
		if (ep->av || av->d != ep->d) {
			r = -FI_EINVAL;
			break;
		}
		ep->av = av;
		av->refs++;
		break;
	}
	case FI_CLASS_CQ: {
		struct mrcfi_cq *cq = container_of(bfid, struct mrcfi_cq, cq.fid);
		if (flags & ~(uint64_t)(FI_TRANSMIT | FI_RECV | FI_SELECTIVE_COMPLETION) ||
		    !(flags & (FI_TRANSMIT | FI_RECV))) {
			r = -FI_EBADFLAGS;
			break;
		}
		if (flags & FI_TRANSMIT) {
			ep->txcq = cq;
			ep->txflags = flags & FI_SELECTIVE_COMPLETION;
			cq->refs++;
		}
		if (flags & FI_RECV) {
			ep->rxcq = cq;
			ep->rxflags = flags & FI_SELECTIVE_COMPLETION;
			cq->refs++;
		}
		break;
	}
	case FI_CLASS_CNTR: {
		struct mrcfi_cntr *c = container_of(bfid, struct mrcfi_cntr, c.fid);
		if (flags & (FI_REMOTE_WRITE | FI_REMOTE_READ)) {
			r = -FI_ENOSYS;   /* no FI_RMA_EVENT */
			break;
		}
		if (flags & ~(uint64_t)(FI_SEND | FI_RECV | FI_WRITE | FI_READ | FI_TRANSMIT)) {
			r = -FI_EBADFLAGS;
			break;
		}
		if (flags & (FI_SEND | FI_TRANSMIT)) { ep->c_send = c; c->refs++; }
		if (flags & FI_RECV) { ep->c_recv = c; c->refs++; }
		if (flags & FI_WRITE) { ep->c_write = c; c->refs++; }
		if (flags & FI_READ) { ep->c_read = c; c->refs++; }
		break;
	}
	case FI_CLASS_EQ:
		ep->eq = container_of(bfid, struct mrcfi_eq, eq.fid);
		break;
	default:
		r = -FI_EINVAL;
	}
	pthread_mutex_unlock(&ep->d->lock);
	return r;
}

static int ep_control(struct fid *fid, int command, void *arg)
{
	struct mrcfi_ep *ep = container_of(fid, struct mrcfi_ep, ep.fid);
	switch (command) {
	case FI_ENABLE:
		if (!ep->av)
			return -FI_ENOAV;
		ep->enabled = 1;
		return 0;
	case FI_GETOPSFLAG: {
		uint64_t *f = arg;
		*f = (*f & FI_TRANSMIT) ? ep->op_flags_tx : ep->op_flags_rx;
		return 0;
	}
	case FI_SETOPSFLAG: {
		uint64_t *f = arg;
		if (*f & FI_TRANSMIT)
			ep->op_flags_tx = *f & ~(uint64_t)FI_TRANSMIT;
		else
			ep->op_flags_rx = *f & ~(uint64_t)FI_RECV;
		return 0;
	}
	default:
		return -FI_ENOSYS;
	}
}

static struct fi_ops ep_fi_ops = {
	.size = sizeof(struct fi_ops), .close = ep_close, .bind = ep_bind, .control = ep_control,
	.ops_open = mrcfi_no_ops_open, .tostr = mrcfi_no_tostr, .ops_set = mrcfi_no_ops_set,
};

int mrcfi_ep_open(struct fid_domain *dom, struct fi_info *info, struct fid_ep **out, void *ctx)
{
	struct mrcfi_domain *d = container_of(dom, struct mrcfi_domain, d);
	if (info && info->ep_attr && info->ep_attr->type != FI_EP_RDM &&
	    info->ep_attr->type != FI_EP_UNSPEC)
		return -FI_EINVAL;
	struct mrcfi_ep *ep = calloc(1, sizeof(*ep));
	if (!ep)
		return -FI_ENOMEM;
	ep->d = d;
	ep->info = info ? fi_dupinfo(info) : NULL;
	ep->caps = info && info->caps ? info->caps : MRCFI_CAPS;
	if (info && info->tx_attr)
		ep->op_flags_tx = info->tx_attr->op_flags;
	if (info && info->rx_attr)
		ep->op_flags_rx = info->rx_attr->op_flags;
	/* a multi-receive buffer goes when less than one eager message fits */
	ep->min_multi_recv = MRCFI_EAGER_MAX;
	ep->ep.fid.fclass = FI_CLASS_EP;
	ep->ep.fid.context = ctx;
	ep->ep.fid.ops = &ep_fi_ops;
	ep->ep.ops = &ep_ops;
	ep->ep.cm = &cm_ops;
	ep->ep.msg = &msg_ops;
	ep->ep.tagged = &tagged_ops;
	ep->ep.rma = &mrcfi_rma_ops;
	ep->ep.atomic = &mrcfi_atomic_ops;
	/* A service id of our own: random, the next one when taken. */
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	uint32_t x = (uint32_t)(t.tv_nsec ^ (getpid() << 8));
	int r = -EADDRINUSE;
	for (int k = 0; k < 64 && r == -EADDRINUSE; k++) {
		ep->name.sid = MRCFI_SID_BASE + ((x + (uint32_t)k * 7919u) & 0xffff);
		r = mrc_listen(d->side[0].ctx, ep->name.sid, 64);
	}
	if (r) {
		MRCFI_WARN(FI_LOG_EP_CTRL, "cannot listen: %s (%s)\n", mrc_strerror(r),
			   mrc_last_error(d->side[0].ctx));
		fi_freeinfo(ep->info);
		free(ep);
		return r;
	}
	ep->name.host = d->host;
	pthread_mutex_lock(&d->sidlock);
	int full = d->nsids == sizeof(d->sids) / sizeof(d->sids[0]);
	if (!full)
		d->sids[d->nsids++] = ep->name.sid;
	pthread_mutex_unlock(&d->sidlock);
	if (full) {
		(void)mrc_unlisten(d->side[0].ctx, ep->name.sid);
		fi_freeinfo(ep->info);
		free(ep);
		return -FI_ENOSPC;   /* domain_attr->ep_cnt */
	}
	pthread_mutex_lock(&d->lock);
	ep->next = d->eps;
	d->eps = ep;
	pthread_mutex_unlock(&d->lock);
	*out = &ep->ep;
	return 0;
}
