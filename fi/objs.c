/* Address vectors, completion queues, counters and event queues. */
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

static int no_tostr(const struct fid *fid, char *buf, size_t len)
{
	return -FI_ENOSYS;
}

static int no_ops_set(struct fid *fid, const char *name, uint64_t flags, void *ops, void *ctx)
{
	return -FI_ENOSYS;
}

static void efd_ring(int fd)
{
	uint64_t one = 1;
	(void)!write(fd, &one, sizeof(one));
}

static void efd_drain(int fd)
{
	uint64_t v;
	(void)!read(fd, &v, sizeof(v));
}

/* Waits on fd up to timeout_ms (< 0: forever) or the deadline. */
static int efd_wait(int fd, int timeout_ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	int r = poll(&p, 1, timeout_ms);
	return r < 0 ? -errno : r;
}

static int64_t now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* ---- address vector -------------------------------------------------- */
#define MAP_ADDR(n) ((fi_addr_t)(n)->host << 32 | (n)->sid)

int mrcfi_av_get(struct mrcfi_av *av, fi_addr_t a, struct mrcfi_name *out)
{
	if (a == FI_ADDR_NOTAVAIL || a == FI_ADDR_UNSPEC)
		return -FI_EINVAL;
	if (av->type == FI_AV_MAP) {
		out->host = (uint32_t)(a >> 32);
		out->sid = (uint32_t)a;
		return 0;
	}
	if (a >= av->n || !av->used[a])
		return -FI_EINVAL;
	*out = av->names[a];
	return 0;
}

fi_addr_t mrcfi_av_rev(struct mrcfi_av *av, const struct mrcfi_name *n)
{
	if (!av)
		return FI_ADDR_NOTAVAIL;
	if (av->type == FI_AV_MAP)
		return MAP_ADDR(n);
	for (size_t i = 0; i < av->n; i++)
		if (av->used[i] && av->names[i].host == n->host && av->names[i].sid == n->sid)
			return i;
	return FI_ADDR_NOTAVAIL;
}

static int av_insert(struct fid_av *fav, const void *addr, size_t count, fi_addr_t *fi_addr,
		     uint64_t flags, void *context)
{
	struct mrcfi_av *av = container_of(fav, struct mrcfi_av, av);
	if (flags & ~(uint64_t)(FI_MORE | FI_SYNC_ERR))
		return -FI_EINVAL;
	if (count && !addr)
		return -FI_EINVAL;
	pthread_mutex_lock(&av->d->lock);
	int done = 0;
	for (size_t i = 0; i < count; i++) {
		struct mrcfi_name n;
		memcpy(&n, (const char *)addr + i * sizeof(n), sizeof(n));
		fi_addr_t a;
		if (av->type == FI_AV_MAP) {
			a = MAP_ADDR(&n);
		} else {
			if (av->n == av->cap) {
				size_t cap = av->cap ? av->cap * 2 : 64;
				void *nn = realloc(av->names, cap * sizeof(*av->names));
				if (nn)
					av->names = nn;
				void *nu = realloc(av->used, cap);
				if (nu)
					av->used = nu;
				if (!nn || !nu) {
					if (fi_addr)
						fi_addr[i] = FI_ADDR_NOTAVAIL;
					continue;
				}
				av->cap = cap;
			}
			a = av->n++;
			av->names[a] = n;
			av->used[a] = 1;
		}
		if (fi_addr)
			fi_addr[i] = a;
		done++;
	}
	pthread_mutex_unlock(&av->d->lock);
	if (av->eq) {
		/* bound to an EQ: the insert completes by an event */
		struct fi_eq_entry e = { .fid = &av->av.fid, .context = context,
					 .data = (uint64_t)done };
		(void)mrcfi_eq_post(av->eq, FI_AV_COMPLETE, &e, sizeof(e), 0);
		return 0;
	}
	return done;
}

/* node: the mrcd host index, service: the service id (decimal or 0x). */
static int av_insertsvc(struct fid_av *fav, const char *node, const char *service,
			fi_addr_t *fi_addr, uint64_t flags, void *context)
{
	if (!node || !service)
		return -FI_EINVAL;
	char *e1, *e2;
	unsigned long h = strtoul(node, &e1, 0), s = strtoul(service, &e2, 0);
	if (*e1 || *e2 || h > UINT32_MAX || s > UINT32_MAX)
		return -FI_EINVAL;
	struct mrcfi_name n = { (uint32_t)h, (uint32_t)s };
	return av_insert(fav, &n, 1, fi_addr, flags, context);
}

static int av_insertsym(struct fid_av *av, const char *node, size_t nodecnt, const char *service,
			size_t svccnt, fi_addr_t *fi_addr, uint64_t flags, void *context)
{
	return -FI_ENOSYS;
}

static int av_remove(struct fid_av *fav, fi_addr_t *fi_addr, size_t count, uint64_t flags)
{
	struct mrcfi_av *av = container_of(fav, struct mrcfi_av, av);
	if (flags)
		return -FI_EINVAL;
	int r = 0;
	pthread_mutex_lock(&av->d->lock);
	for (size_t i = 0; i < count; i++) {
		if (av->type == FI_AV_MAP)
			continue;   /* the address is the name: nothing held */
		if (fi_addr[i] >= av->n || !av->used[fi_addr[i]])
			r = -FI_EINVAL;
		else
			av->used[fi_addr[i]] = 0;
	}
	pthread_mutex_unlock(&av->d->lock);
	return r;
}

static int av_lookup(struct fid_av *fav, fi_addr_t fi_addr, void *addr, size_t *addrlen)
{
	struct mrcfi_av *av = container_of(fav, struct mrcfi_av, av);
	struct mrcfi_name n;
	pthread_mutex_lock(&av->d->lock);
	int r = mrcfi_av_get(av, fi_addr, &n);
	pthread_mutex_unlock(&av->d->lock);
	if (r)
		return r;
	memcpy(addr, &n, *addrlen < sizeof(n) ? *addrlen : sizeof(n));
	*addrlen = sizeof(n);
	return 0;
}

static const char *av_straddr(struct fid_av *av, const void *addr, char *buf, size_t *len)
{
	struct mrcfi_name n;
	memcpy(&n, addr, sizeof(n));
	char tmp[64];
	int k = snprintf(tmp, sizeof(tmp), "mrc://%u:%u", n.host, n.sid);
	if (buf && *len)
		snprintf(buf, *len, "%s", tmp);
	*len = (size_t)k + 1;
	return buf;
}

static int no_av_set(struct fid_av *av, struct fi_av_set_attr *attr, struct fid_av_set **s,
		     void *context)
{
	return -FI_ENOSYS;
}

static int av_close(struct fid *fid)
{
	struct mrcfi_av *av = container_of(fid, struct mrcfi_av, av.fid);
	if (av->refs)
		return -FI_EBUSY;
	free(av->names);
	free(av->used);
	free(av);
	return 0;
}

static int av_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct mrcfi_av *av = container_of(fid, struct mrcfi_av, av.fid);
	if (bfid->fclass != FI_CLASS_EQ || flags)
		return -FI_EINVAL;
	av->eq = container_of(bfid, struct mrcfi_eq, eq.fid);
	return 0;
}

static struct fi_ops av_fi_ops = {
	.size = sizeof(struct fi_ops), .close = av_close, .bind = av_bind,
	.control = mrcfi_no_control, .ops_open = mrcfi_no_ops_open, .tostr = no_tostr,
	.ops_set = no_ops_set,
};

static struct fi_ops_av av_ops = {
	.size = sizeof(struct fi_ops_av), .insert = av_insert, .insertsvc = av_insertsvc,
	.insertsym = av_insertsym, .remove = av_remove, .lookup = av_lookup,
	.straddr = av_straddr, .av_set = no_av_set,
};

int mrcfi_av_open(struct fid_domain *dom, struct fi_av_attr *attr, struct fid_av **out, void *ctx)
{
	struct mrcfi_domain *d = container_of(dom, struct mrcfi_domain, d);
	if (!attr)
		return -FI_EINVAL;
	if (attr->type != FI_AV_UNSPEC && attr->type != FI_AV_MAP && attr->type != FI_AV_TABLE)
		return -FI_EINVAL;
	if (attr->name || attr->rx_ctx_bits || (attr->flags & ~(uint64_t)(FI_EVENT)))
		return -FI_ENOSYS;   /* no shared or named AVs, no scalable eps */
	struct mrcfi_av *av = calloc(1, sizeof(*av));
	if (!av)
		return -FI_ENOMEM;
	av->d = d;
	av->type = attr->type == FI_AV_UNSPEC ? FI_AV_TABLE : attr->type;
	attr->type = av->type;
	av->av.fid.fclass = FI_CLASS_AV;
	av->av.fid.context = ctx;
	av->av.fid.ops = &av_fi_ops;
	av->av.ops = &av_ops;
	*out = &av->av;
	return 0;
}

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
		efd_ring(cq->efd);
}

static ssize_t cq_readfrom(struct fid_cq *fcq, void *buf, size_t count, fi_addr_t *src)
{
	struct mrcfi_cq *cq = container_of(fcq, struct mrcfi_cq, cq);
	struct mrcfi_domain *d = cq->d;
	/* An application polling an empty CQ drives progress itself: no
	 * wait for the progress thread to be woken and scheduled, which
	 * meanwhile stays asleep (mrcfi_domain.poll_grace_ns). */
	if (d->poll_grace_ns)
		__atomic_store_n(&d->app_poll_ns, mrcfi_now_ns(), __ATOMIC_RELAXED);
	pthread_mutex_lock(&d->lock);
	if (!cq->cnt)
		mrcfi_progress(d, 0);
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
	int yield = 0;
	if (!n) {
		n = cq->cnt ? -FI_EAVAIL : -FI_EAGAIN;
		d->st_empty_reads++;
		if (d->yield_empty && ++d->empty_reads >= d->yield_empty) {
			d->empty_reads = 0;
			yield = 1;
		}
	}
	pthread_mutex_unlock(&d->lock);
	if (yield)
		sched_yield();
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
	int64_t end = timeout >= 0 ? now_ms() + timeout : 0;
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
		int left = -1;
		if (timeout >= 0) {
			int64_t l = end - now_ms();
			if (l <= 0)
				return -FI_EAGAIN;
			left = (int)l;
		}
		mrcfi_app_sleeps(cq->d);
		int w = efd_wait(cq->efd, left);
		if (w < 0 && w != -EINTR)
			return w;
		efd_drain(cq->efd);
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
		efd_ring(cq->efd);
	return 0;
}

static const char *cq_strerror(struct fid_cq *cq, int prov_errno, const void *err_data, char *buf,
			       size_t len)
{
	const char *s = mrc_strerror(-prov_errno);
	if (buf && len)
		snprintf(buf, len, "%s", s);
	return buf && len ? buf : s;
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
	if (command != FI_GETWAIT)
		return -FI_ENOSYS;
	if (cq->efd < 0)
		return -FI_ENODATA;
	*(int *)arg = cq->efd;
	return 0;
}

static struct fi_ops cq_fi_ops = {
	.size = sizeof(struct fi_ops), .close = cq_close, .bind = mrcfi_no_bind,
	.control = cq_control, .ops_open = mrcfi_no_ops_open, .tostr = no_tostr,
	.ops_set = no_ops_set,
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

/* ---- counters -------------------------------------------------------- */
void mrcfi_cntr_inc(struct mrcfi_cntr *c, int err)
{
	if (!c)
		return;
	if (err)
		c->err++;
	else
		c->val++;
	pthread_cond_broadcast(&c->cond);
}

#define CNTR(f) container_of(f, struct mrcfi_cntr, c)

static uint64_t cntr_read(struct fid_cntr *f)
{
	struct mrcfi_cntr *c = CNTR(f);
	pthread_mutex_lock(&c->d->lock);
	uint64_t v = c->val;
	pthread_mutex_unlock(&c->d->lock);
	return v;
}

static uint64_t cntr_readerr(struct fid_cntr *f)
{
	struct mrcfi_cntr *c = CNTR(f);
	pthread_mutex_lock(&c->d->lock);
	uint64_t v = c->err;
	pthread_mutex_unlock(&c->d->lock);
	return v;
}

static int cntr_upd(struct fid_cntr *f, uint64_t v, int err, int add)
{
	struct mrcfi_cntr *c = CNTR(f);
	pthread_mutex_lock(&c->d->lock);
	uint64_t *p = err ? &c->err : &c->val;
	*p = add ? *p + v : v;
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->d->lock);
	return 0;
}

static int cntr_add(struct fid_cntr *f, uint64_t v) { return cntr_upd(f, v, 0, 1); }
static int cntr_set(struct fid_cntr *f, uint64_t v) { return cntr_upd(f, v, 0, 0); }
static int cntr_adderr(struct fid_cntr *f, uint64_t v) { return cntr_upd(f, v, 1, 1); }
static int cntr_seterr(struct fid_cntr *f, uint64_t v) { return cntr_upd(f, v, 1, 0); }

/* Until the count reaches threshold (0), an error is counted
 * (-FI_EAVAIL), or timeout_ms passes (-FI_ETIMEDOUT). */
static int cntr_wait(struct fid_cntr *f, uint64_t threshold, int timeout)
{
	struct mrcfi_cntr *c = CNTR(f);
	struct timespec end;
	clock_gettime(CLOCK_MONOTONIC, &end);
	if (timeout >= 0) {
		end.tv_sec += timeout / 1000;
		end.tv_nsec += (long)(timeout % 1000) * 1000000;
		if (end.tv_nsec >= 1000000000) {
			end.tv_sec++;
			end.tv_nsec -= 1000000000;
		}
	}
	mrcfi_app_sleeps(c->d);
	pthread_mutex_lock(&c->d->lock);
	uint64_t err0 = c->err;
	int r = 0;
	while (c->val < threshold) {
		if (c->err != err0 || c->d->dead) {
			r = -FI_EAVAIL;
			break;
		}
		if (timeout < 0) {
			pthread_cond_wait(&c->cond, &c->d->lock);
		} else if (pthread_cond_timedwait(&c->cond, &c->d->lock, &end) == ETIMEDOUT) {
			r = c->val >= threshold ? 0 : -FI_ETIMEDOUT;
			break;
		}
	}
	pthread_mutex_unlock(&c->d->lock);
	return r;
}

static int cntr_close(struct fid *fid)
{
	struct mrcfi_cntr *c = container_of(fid, struct mrcfi_cntr, c.fid);
	if (c->refs)
		return -FI_EBUSY;
	pthread_cond_destroy(&c->cond);
	free(c);
	return 0;
}

static struct fi_ops cntr_fi_ops = {
	.size = sizeof(struct fi_ops), .close = cntr_close, .bind = mrcfi_no_bind,
	.control = mrcfi_no_control, .ops_open = mrcfi_no_ops_open, .tostr = no_tostr,
	.ops_set = no_ops_set,
};

static struct fi_ops_cntr cntr_ops = {
	.size = sizeof(struct fi_ops_cntr), .read = cntr_read, .readerr = cntr_readerr,
	.add = cntr_add, .set = cntr_set, .wait = cntr_wait, .adderr = cntr_adderr,
	.seterr = cntr_seterr,
};

int mrcfi_cntr_open(struct fid_domain *dom, struct fi_cntr_attr *attr, struct fid_cntr **out,
		    void *ctx)
{
	struct mrcfi_domain *d = container_of(dom, struct mrcfi_domain, d);
	if (attr) {
		if (attr->events != FI_CNTR_EVENTS_COMP || attr->flags)
			return -FI_EINVAL;
		if (attr->wait_obj != FI_WAIT_NONE && attr->wait_obj != FI_WAIT_UNSPEC &&
		    attr->wait_obj != FI_WAIT_MUTEX_COND)
			return -FI_ENOSYS;
	}
	struct mrcfi_cntr *c = calloc(1, sizeof(*c));
	if (!c)
		return -FI_ENOMEM;
	c->d = d;
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&c->cond, &ca);
	pthread_condattr_destroy(&ca);
	c->c.fid.fclass = FI_CLASS_CNTR;
	c->c.fid.context = ctx;
	c->c.fid.ops = &cntr_fi_ops;
	c->c.ops = &cntr_ops;
	*out = &c->c;
	return 0;
}

/* ---- event queue ----------------------------------------------------- */
int mrcfi_eq_post(struct mrcfi_eq *eq, uint32_t event, const void *buf, size_t len, int err)
{
	if (len > sizeof(((struct mrcfi_eq_ev *)0)->u))
		return -FI_EINVAL;
	pthread_mutex_lock(&eq->lock);
	if (eq->cnt == eq->cap) {
		size_t cap = eq->cap ? eq->cap * 2 : 64;
		struct mrcfi_eq_ev *q = malloc(cap * sizeof(*q));
		if (!q) {
			pthread_mutex_unlock(&eq->lock);
			return -FI_ENOMEM;
		}
		for (size_t i = 0; i < eq->cnt; i++)
			q[i] = eq->q[(eq->head + i) % eq->cap];
		free(eq->q);
		eq->q = q;
		eq->head = 0;
		eq->cap = cap;
	}
	struct mrcfi_eq_ev *e = &eq->q[(eq->head + eq->cnt++) % eq->cap];
	memset(e, 0, sizeof(*e));
	e->event = event;
	e->err = err;
	e->len = len;
	memcpy(e->u.raw, buf, len);
	pthread_mutex_unlock(&eq->lock);
	if (eq->efd >= 0)
		efd_ring(eq->efd);
	return 0;
}

static ssize_t eq_read(struct fid_eq *feq, uint32_t *event, void *buf, size_t len, uint64_t flags)
{
	struct mrcfi_eq *eq = container_of(feq, struct mrcfi_eq, eq);
	if (flags & ~(uint64_t)FI_PEEK)
		return -FI_EINVAL;
	pthread_mutex_lock(&eq->lock);
	ssize_t r = -FI_EAGAIN;
	if (eq->cnt) {
		struct mrcfi_eq_ev *e = &eq->q[eq->head];
		if (e->err) {
			r = -FI_EAVAIL;
		} else if (len < e->len) {
			r = -FI_ETOOSMALL;
		} else {
			if (event)
				*event = e->event;
			memcpy(buf, e->u.raw, e->len);
			r = (ssize_t)e->len;
			if (!(flags & FI_PEEK)) {
				eq->head = (eq->head + 1) % eq->cap;
				eq->cnt--;
			}
		}
	}
	pthread_mutex_unlock(&eq->lock);
	return r;
}

static ssize_t eq_readerr(struct fid_eq *feq, struct fi_eq_err_entry *buf, uint64_t flags)
{
	struct mrcfi_eq *eq = container_of(feq, struct mrcfi_eq, eq);
	pthread_mutex_lock(&eq->lock);
	ssize_t r = -FI_EAGAIN;
	if (eq->cnt && eq->q[eq->head].err) {
		struct mrcfi_eq_ev *e = &eq->q[eq->head];
		memcpy(buf, &e->u.ee, sizeof(*buf));
		r = sizeof(*buf);
		if (!(flags & FI_PEEK)) {
			eq->head = (eq->head + 1) % eq->cap;
			eq->cnt--;
		}
	}
	pthread_mutex_unlock(&eq->lock);
	return r;
}

static ssize_t eq_write(struct fid_eq *feq, uint32_t event, const void *buf, size_t len,
			uint64_t flags)
{
	struct mrcfi_eq *eq = container_of(feq, struct mrcfi_eq, eq);
	if (flags)
		return -FI_EINVAL;
	int r = mrcfi_eq_post(eq, event, buf, len, 0);
	return r ? r : (ssize_t)len;
}

static ssize_t eq_sread(struct fid_eq *feq, uint32_t *event, void *buf, size_t len, int timeout,
			uint64_t flags)
{
	struct mrcfi_eq *eq = container_of(feq, struct mrcfi_eq, eq);
	if (eq->efd < 0)
		return -FI_ENOSYS;
	int64_t end = timeout >= 0 ? now_ms() + timeout : 0;
	for (;;) {
		ssize_t r = eq_read(feq, event, buf, len, flags);
		if (r != -FI_EAGAIN)
			return r;
		int left = -1;
		if (timeout >= 0) {
			int64_t l = end - now_ms();
			if (l <= 0)
				return -FI_EAGAIN;
			left = (int)l;
		}
		int w = efd_wait(eq->efd, left);
		if (w < 0 && w != -EINTR)
			return w;
		efd_drain(eq->efd);
	}
}

static const char *eq_strerror(struct fid_eq *eq, int prov_errno, const void *err_data, char *buf,
			       size_t len)
{
	const char *s = mrc_strerror(-prov_errno);
	if (buf && len)
		snprintf(buf, len, "%s", s);
	return buf && len ? buf : s;
}

static int eq_close(struct fid *fid)
{
	struct mrcfi_eq *eq = container_of(fid, struct mrcfi_eq, eq.fid);
	if (eq->efd >= 0)
		close(eq->efd);
	free(eq->q);
	pthread_mutex_destroy(&eq->lock);
	free(eq);
	return 0;
}

static int eq_control(struct fid *fid, int command, void *arg)
{
	struct mrcfi_eq *eq = container_of(fid, struct mrcfi_eq, eq.fid);
	if (command != FI_GETWAIT)
		return -FI_ENOSYS;
	if (eq->efd < 0)
		return -FI_ENODATA;
	*(int *)arg = eq->efd;
	return 0;
}

static struct fi_ops eq_fi_ops = {
	.size = sizeof(struct fi_ops), .close = eq_close, .bind = mrcfi_no_bind,
	.control = eq_control, .ops_open = mrcfi_no_ops_open, .tostr = no_tostr,
	.ops_set = no_ops_set,
};

static struct fi_ops_eq eq_ops = {
	.size = sizeof(struct fi_ops_eq), .read = eq_read, .readerr = eq_readerr,
	.write = eq_write, .sread = eq_sread, .strerror = eq_strerror,
};

int mrcfi_eq_open(struct fid_fabric *fab, struct fi_eq_attr *attr, struct fid_eq **out, void *ctx)
{
	if (!attr || attr->flags & ~(uint64_t)FI_WRITE)
		return -FI_EINVAL;
	switch (attr->wait_obj) {
	case FI_WAIT_NONE: case FI_WAIT_UNSPEC: case FI_WAIT_FD:
		break;
	default:
		return -FI_ENOSYS;
	}
	struct mrcfi_eq *eq = calloc(1, sizeof(*eq));
	if (!eq)
		return -FI_ENOMEM;
	pthread_mutex_init(&eq->lock, NULL);
	eq->wait = attr->wait_obj;
	eq->efd = attr->wait_obj == FI_WAIT_NONE ? -1 : eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (attr->wait_obj != FI_WAIT_NONE && eq->efd < 0) {
		free(eq);
		return -FI_ENOMEM;
	}
	eq->eq.fid.fclass = FI_CLASS_EQ;
	eq->eq.fid.context = ctx;
	eq->eq.fid.ops = &eq_fi_ops;
	eq->eq.ops = &eq_ops;
	*out = &eq->eq;
	return 0;
}
