/* Event queues: FI_AV_COMPLETE, FI_MR_COMPLETE and fi_eq_write. */
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
		mrcfi_efd_ring(eq->efd);
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
	int64_t end = timeout >= 0 ? mrcfi_now_ms() + timeout : 0;
	for (;;) {
		ssize_t r = eq_read(feq, event, buf, len, flags);
		if (r != -FI_EAGAIN)
			return r;
		int w = mrcfi_efd_sleep(eq->efd, end, timeout);
		if (w)
			return w;
	}
}

static const char *eq_strerror(struct fid_eq *eq, int prov_errno, const void *err_data, char *buf,
			       size_t len)
{
	return mrcfi_strerror(prov_errno, buf, len);
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
	return mrcfi_getwait(eq->efd, command, arg);
}

static struct fi_ops eq_fi_ops = {
	.size = sizeof(struct fi_ops), .close = eq_close, .bind = mrcfi_no_bind,
	.control = eq_control, .ops_open = mrcfi_no_ops_open, .tostr = mrcfi_no_tostr,
	.ops_set = mrcfi_no_ops_set,
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
