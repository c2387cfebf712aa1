/* Counters (FI_SEND, FI_RECV, FI_WRITE), waited on with a condition
 * variable of the domain's lock. */
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
	.control = mrcfi_no_control, .ops_open = mrcfi_no_ops_open, .tostr = mrcfi_no_tostr,
	.ops_set = mrcfi_no_ops_set,
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
