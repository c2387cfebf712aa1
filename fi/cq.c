/* Completion queues: every format, read, readfrom, readerr, sread with
 * an eventfd (docs/libfabric.md "Completions"). */
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "fi/mrcfi.h"

/* ---- completion queue ------------------------------------------------ */
void mrcfi_cq_add(struct mrcfi_cq *cq, const struct mrcfi_cqe *c)
{
	if (cq->cnt == cq->cap) {
		/* grow: completions are never dropped */
		size_t cap = cq->cap * 2;
		struct mrcfi_cqe *q = malloc(cap * sizeof(*q));
		if (!q) {
			MRCFI_WARN(FI_LOG_CQ, "CQ full and out of memory: completion lost\n");
			return;
		}
		for (size_t i = 0; i < cq->cnt; i++)
			q[i] = cq->q[(cq->head + i) % cq->cap];
		free(cq->q);
		cq->q = q;
		cq->head = 0;
		cq->cap = cap;
	}
	cq->q[(cq->head + cq->cnt++) % cq->cap] = *c;
	if (cq->efd >= 0)
		mrcfi_efd_ring(cq->efd);
}

static ssize_t cq_readfrom(struct fid_cq *fcq, void *buf, size_t count, fi_addr_t *src)
{
	struct mrcfi_cq *cq = container_of(fcq, struct mrcfi_cq, cq);
	struct mrcfi_domain *d = cq->d;
	/* An application polling an empty CQ drives progress itself: no
	 * wait for the progress thread to be woken and scheduled, which
	 * meanwhile stays asleep (mrcfi_domain.poll_grace_ns).  Only a read
	 * that progressed counts: one of a CQ that always holds entries
	 * would leave the domain's other CQs without progress. */
	pthread_mutex_lock(&d->lock);
	if (!cq->cnt) {
		if (d->poll_grace_ns)
			__atomic_store_n(&d->app_poll_ns, mrcfi_now_ns(), __ATOMIC_RELAXED);
		mrcfi_progress(d, 0);
	}
	d->st_reads++;
	ssize_t n = 0;
	while ((size_t)n < count && cq->cnt) {
		struct mrcfi_cqe *c = &cq->q[cq->head];
		if (c->err)
			break;
		memcpy((char *)buf + (size_t)n * cq->esize, &c->e, cq->esize);
		if (src)
			src[n] = c->src;
		cq->head = (cq->head + 1) % cq->cap;
		cq->cnt--;
		n++;
	}
	int yield = 0, idle = 0;
	if (n || cq->cnt)   /* an error entry waits for fi_cq_readerr */
		d->idle_run = 0;
	else if (d->idle_ns && d->idle_run++ == 0)
		d->idle_since = mrcfi_now_ns();
	else if (d->idle_ns && d->idle_run > MRCFI_IDLE_AFTER &&
		 mrcfi_now_ns() - d->idle_since >= d->idle_spin_ns) {
		idle = 1;
		d->st_idle_sleeps++;
	}
	if (!n) {
		n = cq->cnt ? -FI_EAVAIL : -FI_EAGAIN;
		d->st_empty_reads++;
		if (d->yield_empty && ++d->empty_reads >= d->yield_empty) {
			d->empty_reads = 0;
			yield = 1;
		}
	}
	pthread_mutex_unlock(&d->lock);
	if (idle) {
		struct timespec ts = { 0, (long)d->idle_ns };
		nanosleep(&ts, NULL);
	} else if (yield) {
		sched_yield();
	}
	return n;
}

static ssize_t cq_read(struct fid_cq *cq, void *buf, size_t count)
{
	return cq_readfrom(cq, buf, count, NULL);
}

static ssize_t cq_readerr(struct fid_cq *fcq, struct fi_cq_err_entry *buf, uint64_t flags)
{
	struct mrcfi_cq *cq = container_of(fcq, struct mrcfi_cq, cq);
	pthread_mutex_lock(&cq->d->lock);
	ssize_t r = -FI_EAGAIN;
	if (cq->cnt && cq->q[cq->head].err) {
		struct mrcfi_cqe *c = &cq->q[cq->head];
		struct fi_cq_err_entry e = {
			.op_context = c->e.op_context, .flags = c->e.flags, .len = c->e.len,
			.buf = c->e.buf, .data = c->e.data, .tag = c->e.tag, .olen = c->olen,
			.err = c->err, .prov_errno = c->prov_errno,
		};
		/* Before 1.5 err_data_size did not exist: copy only what the
		 * caller's version knows (we have no err_data). */
		size_t sz = FI_VERSION_GE(cq->d->fab->f.api_version, FI_VERSION(1, 5)) ?
			    sizeof(e) : offsetof(struct fi_cq_err_entry, err_data_size);
		if (sz == sizeof(e) && buf->err_data_size) {
			e.err_data = buf->err_data;
			e.err_data_size = 0;
		}
		memcpy(buf, &e, sz);
		cq->head = (cq->head + 1) % cq->cap;
		cq->cnt--;
		r = 1;
	}
	pthread_mutex_unlock(&cq->d->lock);
	return r;
}

static ssize_t cq_sreadfrom(struct fid_cq *fcq, void *buf, size_t count, fi_addr_t *src,
			    const void *cond, int timeout)
{
	struct mrcfi_cq *cq = container_of(fcq, struct mrcfi_cq, cq);
	if (cq->efd < 0)
		return -FI_ENOSYS;   /* FI_WAIT_NONE */
	int64_t end = timeout >= 0 ? mrcfi_now_ms() + timeout : 0;
	for (;;) {
		ssize_t r = cq_readfrom(fcq, buf, count, src);
		if (r != -FI_EAGAIN)
			return r;
		pthread_mutex_lock(&cq->d->lock);
		int sig = cq->signaled;
		cq->signaled = 0;
		pthread_mutex_unlock(&cq->d->lock);
		if (sig)
			return -FI_EAGAIN;
		mrcfi_app_sleeps(cq->d);
		int w = mrcfi_efd_sleep(cq->efd, end, timeout);
		if (w)
			return w;
	}
}

static ssize_t cq_sread(struct fid_cq *cq, void *buf, size_t count, const void *cond, int timeout)
{
	return cq_sreadfrom(cq, buf, count, NULL, cond, timeout);
}

static int cq_signal(struct fid_cq *fcq)
{
	struct mrcfi_cq *cq = container_of(fcq, struct mrcfi_cq, cq);
	pthread_mutex_lock(&cq->d->lock);
	cq->signaled = 1;
	pthread_mutex_unlock(&cq->d->lock);
	if (cq->efd >= 0)
		mrcfi_efd_ring(cq->efd);
	return 0;
}

static const char *cq_strerror(struct fid_cq *cq, int prov_errno, const void *err_data, char *buf,
			       size_t len)
{
	return mrcfi_strerror(prov_errno, buf, len);
}

static int cq_close(struct fid *fid)
{
	struct mrcfi_cq *cq = container_of(fid, struct mrcfi_cq, cq.fid);
	if (cq->refs)
		return -FI_EBUSY;
	if (cq->efd >= 0)
		close(cq->efd);
	free(cq->q);
	free(cq);
	return 0;
}

static int cq_control(struct fid *fid, int command, void *arg)
{
	struct mrcfi_cq *cq = container_of(fid, struct mrcfi_cq, cq.fid);
	return mrcfi_getwait(cq->efd, command, arg);
}

static struct fi_ops cq_fi_ops = {
	.size = sizeof(struct fi_ops), .close = cq_close, .bind = mrcfi_no_bind,
	.control = cq_control, .ops_open = mrcfi_no_ops_open, .tostr = mrcfi_no_tostr,
	.ops_set = mrcfi_no_ops_set,
};

static struct fi_ops_cq cq_ops = {
	.size = sizeof(struct fi_ops_cq), .read = cq_read, .readfrom = cq_readfrom,
	.readerr = cq_readerr, .sread = cq_sread, .sreadfrom = cq_sreadfrom,
	.signal = cq_signal, .strerror = cq_strerror,
};

int mrcfi_cq_open(struct fid_domain *dom, struct fi_cq_attr *attr, struct fid_cq **out, void *ctx)
{
	struct mrcfi_domain *d = container_of(dom, struct mrcfi_domain, d);
	static const size_t sizes[] = {
		[FI_CQ_FORMAT_UNSPEC] = sizeof(struct fi_cq_tagged_entry),
		[FI_CQ_FORMAT_CONTEXT] = sizeof(struct fi_cq_entry),
		[FI_CQ_FORMAT_MSG] = sizeof(struct fi_cq_msg_entry),
		[FI_CQ_FORMAT_DATA] = sizeof(struct fi_cq_data_entry),
		[FI_CQ_FORMAT_TAGGED] = sizeof(struct fi_cq_tagged_entry),
	};
	if (!attr || attr->format > FI_CQ_FORMAT_TAGGED)
		return -FI_EINVAL;
	if (attr->flags & ~(uint64_t)FI_AFFINITY)
		return -FI_EINVAL;
	switch (attr->wait_obj) {
	case FI_WAIT_NONE: case FI_WAIT_UNSPEC: case FI_WAIT_FD:
		break;
	case FI_WAIT_SET: case FI_WAIT_MUTEX_COND: case FI_WAIT_YIELD: case FI_WAIT_POLLFD:
	default:
		return -FI_ENOSYS;
	}
	if (attr->wait_cond != FI_CQ_COND_NONE && attr->wait_cond != FI_CQ_COND_THRESHOLD)
		return -FI_EINVAL;
	struct mrcfi_cq *cq = calloc(1, sizeof(*cq));
	if (!cq)
		return -FI_ENOMEM;
	cq->d = d;
	cq->fmt = attr->format == FI_CQ_FORMAT_UNSPEC ? FI_CQ_FORMAT_TAGGED : attr->format;
	cq->esize = sizes[cq->fmt];
	cq->wait = attr->wait_obj;
	cq->cap = attr->size ? attr->size : 1024;
	cq->q = calloc(cq->cap, sizeof(*cq->q));
	cq->efd = attr->wait_obj == FI_WAIT_NONE ? -1 : eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (!cq->q || (attr->wait_obj != FI_WAIT_NONE && cq->efd < 0)) {
		free(cq->q);
		if (cq->efd >= 0)
			close(cq->efd);
		free(cq);
		return -FI_ENOMEM;
	}
	cq->cq.fid.fclass = FI_CLASS_CQ;
	cq->cq.fid.context = ctx;
	cq->cq.fid.ops = &cq_fi_ops;
	cq->cq.ops = &cq_ops;
	*out = &cq->cq;
	return 0;
}
