/* The provider's entry (fi_prov_ini), the fabric, the domain with its two
 * mrcd clients, its progress and accept threads, and the bounce pools;
 * fi_getinfo is fi/info.c, memory registration fi/mr.c. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "fi/mrcfi.h"
#include "fi/trace.h"

static uint64_t env_u64(const char *name, uint64_t def, uint64_t lo, uint64_t hi)
{
	const char *s = getenv(name);
	if (!s || !*s)
		return def;
	char *end;
	unsigned long long v = strtoull(s, &end, 0);
	if (*end || v < lo || v > hi) {
		MRCFI_WARN(FI_LOG_CORE, "%s=%s is not in [%llu, %llu]; using %llu\n", name, s,
			   (unsigned long long)lo, (unsigned long long)hi,
			   (unsigned long long)def);
		return def;
	}
	return v;
}

/* ---- fabric ---------------------------------------------------------- */
static int fabric_close(struct fid *fid)
{
	free(container_of(fid, struct mrcfi_fabric, f.fid));
	return 0;
}

int mrcfi_no_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	return -FI_ENOSYS;
}

int mrcfi_no_control(struct fid *fid, int command, void *arg)
{
	return -FI_ENOSYS;
}

int mrcfi_no_ops_open(struct fid *fid, const char *name, uint64_t flags, void **ops, void *ctx)
{
	return -FI_ENOSYS;
}

static struct fi_ops fabric_fi_ops = {
	.size = sizeof(struct fi_ops), .close = fabric_close, .bind = mrcfi_no_bind,
	.control = mrcfi_no_control, .ops_open = mrcfi_no_ops_open, .tostr = mrcfi_no_tostr,
	.ops_set = mrcfi_no_ops_set,
};

static int no_pep(struct fid_fabric *f, struct fi_info *i, struct fid_pep **p, void *c)
{
	return -FI_ENOSYS;
}

static int no_wait_open(struct fid_fabric *f, struct fi_wait_attr *a, struct fid_wait **w)
{
	return -FI_ENOSYS;
}

static int trywait(struct fid_fabric *f, struct fid **fids, int count)
{
	return 0;    /* our wait objects are level-triggered through their reads */
}

static int domain2(struct fid_fabric *f, struct fi_info *info, struct fid_domain **dom,
		   uint64_t flags, void *context)
{
	return flags ? -FI_EINVAL : mrcfi_domain_open(f, info, dom, context);
}

static struct fi_ops_fabric fabric_ops = {
	.size = sizeof(struct fi_ops_fabric), .domain = mrcfi_domain_open,
	.passive_ep = no_pep, .eq_open = mrcfi_eq_open, .wait_open = no_wait_open,
	.trywait = trywait, .domain2 = domain2,
};

static int mrcfi_fabric(struct fi_fabric_attr *attr, struct fid_fabric **fab, void *context)
{
	if (attr && attr->name && strcmp(attr->name, MRCFI_PROV_NAME))
		return -FI_EINVAL;
	struct mrcfi_fabric *f = calloc(1, sizeof(*f));
	if (!f)
		return -FI_ENOMEM;
	f->f.fid.fclass = FI_CLASS_FABRIC;
	f->f.fid.context = context;
	f->f.fid.ops = &fabric_fi_ops;
	f->f.ops = &fabric_ops;
	*fab = &f->f;
	return 0;
}

static void mrcfi_cleanup(void)
{
}

struct fi_provider mrcfi_prov = {
	.version = MRCFI_PROV_VERSION,
	.fi_version = MRCFI_FI_VERSION,
	.name = MRCFI_PROV_NAME,
	.getinfo = mrcfi_getinfo,
	.fabric = mrcfi_fabric,
	.cleanup = mrcfi_cleanup,
};

__attribute__((visibility("default"))) struct fi_provider *fi_prov_ini(void)
{
	return &mrcfi_prov;
}

/* ---- pools ----------------------------------------------------------- */
static int pool_init(struct mrcfi_pool *p, uint64_t *off, uint32_t size, uint32_t n)
{
	p->off = *off;
	p->size = size;
	p->n = p->nfree = n;
	p->free = calloc(n, sizeof(*p->free));
	p->owner = calloc(n, sizeof(*p->owner));
	if (!p->free || !p->owner)
		return -FI_ENOMEM;
	for (uint32_t i = 0; i < n; i++)
		p->free[i] = n - 1 - i;
	*off += (uint64_t)size * n;
	return 0;
}

static void pool_fini(struct mrcfi_pool *p)
{
	free(p->free);
	free(p->owner);
}

int mrcfi_pool_get(struct mrcfi_pool *p, void *owner)
{
	if (!p->nfree)
		return -1;
	uint32_t i = p->free[--p->nfree];
	p->owner[i] = owner;
	return (int)i;
}

void mrcfi_pool_put(struct mrcfi_pool *p, uint32_t i)
{
	p->owner[i] = NULL;
	p->free[p->nfree++] = i;
}

/* ---- domain ---------------------------------------------------------- */
static int side_open(struct mrcfi_domain *d, struct mrcfi_side *s)
{
	int r = mrc_open(NULL, &s->ctx);
	if (r)
		return r;
	uint32_t nrx = (uint32_t)env_u64("FI_MRC_RX_SLOTS", 512, 16, 65536);
	uint32_t ntx = (uint32_t)env_u64("FI_MRC_TX_SLOTS", 128, 8, 65536);
	uint32_t nch = (uint32_t)env_u64("FI_MRC_CHUNKS", 4, 1, 256);
	uint64_t off = 0;
	if ((r = pool_init(&s->rx, &off, MRCFI_SLOT, nrx)) ||
	    (r = pool_init(&s->tx, &off, MRCFI_SLOT, ntx)) ||
	    (r = pool_init(&s->txc, &off, MRCFI_CHUNK, nch)) ||
	    (r = pool_init(&s->rxc, &off, MRCFI_CHUNK, nch)))
		return r;
	r = mrc_alloc_mr(s->ctx, off, MRC_MR_ALL, &s->bounce);
	if (r)
		return r;
	s->base = mrc_mr_addr(s->bounce);
	s->key = mrc_mr_key(s->bounce);
	/* The doorbell is one per client; libmrc hands it out through a
	 * QP, so one idle QP stands for the client. */
	struct mrc_qp *bell;
	if ((r = mrc_create_qp(s->ctx, NULL, &bell)))
		return r;
	s->fd = mrc_qp_fd(bell);
	return 0;
}

static void side_close(struct mrcfi_side *s)
{
	if (s->ctx)
		mrc_close(s->ctx);   /* frees its QPs and regions */
	pool_fini(&s->rx);
	pool_fini(&s->tx);
	pool_fini(&s->txc);
	pool_fini(&s->rxc);
	memset(s, 0, sizeof(*s));
}

void mrcfi_app_sleeps(struct mrcfi_domain *d)
{
	if (!__atomic_exchange_n(&d->app_poll_ns, 0, __ATOMIC_RELAXED))
		return;
	uint64_t one = 1;
	(void)!write(d->wake, &one, sizeof(one));
}

/* The progress thread: sleeps on both clients' completion doorbells and
 * sockets (a dead mrcd hangs up), drains every QP. */
static void *prog_main(void *arg)
{
	struct mrcfi_domain *d = arg;
	struct pollfd pf[5];
	int spin = d->progress_spin_us;
	mrcfi_in_prog = 1;
	while (!__atomic_load_n(&d->stop, __ATOMIC_ACQUIRE)) {
		/* The application polls: leave the CQs unarmed and look
		 * again when its grace is over (mrcfi_domain.poll_grace_ns). */
		uint64_t since = mrcfi_now_ns() - __atomic_load_n(&d->app_poll_ns, __ATOMIC_RELAXED);
		int polled = d->poll_grace_ns && since < d->poll_grace_ns;
		pthread_mutex_lock(&d->lock);
		mrcfi_progress(d, !polled);
		int dead = d->dead;
		d->st_wakeups++;
		if (polled)
			d->st_grace_sleeps++;
		else
			d->st_armed_sleeps++;
		pthread_mutex_unlock(&d->lock);
		if (dead) {
			struct pollfd w = { .fd = d->wake, .events = POLLIN };
			(void)poll(&w, 1, -1);
			continue;
		}
		if (spin > 0 && !polled) {
			spin--;
			continue;
		}
		spin = d->progress_spin_us;
		int n = 0;
		pf[n++] = (struct pollfd){ .fd = d->wake, .events = POLLIN };
		for (int s = 0; s < 2; s++) {
			pf[n++] = (struct pollfd){ .fd = d->side[s].fd, .events = POLLIN };
			pf[n++] = (struct pollfd){ .fd = mrc_ctx_fd(d->side[s].ctx),
						   .events = POLLRDHUP };
		}
		/* Bounded: a QP armed after its completion arrived is found
		 * by the next round at the latest. */
		uint64_t left = polled ? d->poll_grace_ns - since + 1000 : 100000000ull;
		struct timespec ts = { .tv_sec = (time_t)(left / 1000000000ull),
				       .tv_nsec = (long)(left % 1000000000ull) };
		(void)ppoll(pf, (nfds_t)n, &ts, NULL);
		for (int i = 1; i < n; i++)
			if ((pf[i].revents & (POLLRDHUP | POLLHUP | POLLERR)) && (i % 2 == 0)) {
				pthread_mutex_lock(&d->lock);
				if (!d->dead) {
					d->dead = 1;
					mrcfi_fail_all(d, FI_EIO);
				}
				pthread_mutex_unlock(&d->lock);
			}
		for (int s = 0; s < 2; s++)
			(void)mrc_ctx_drain(d->side[s].ctx);
		if (pf[0].revents & POLLIN) {
			uint64_t v;
			(void)!read(d->wake, &v, sizeof(v));
		}
	}
	return NULL;
}

/* The accept thread: in turn for each endpoint's service id, waits a
 * short while for a peer's connection on side 0. */
static void *acc_main(void *arg)
{
	struct mrcfi_domain *d = arg;
	while (!__atomic_load_n(&d->stop, __ATOMIC_ACQUIRE)) {
		pthread_mutex_lock(&d->sidlock);
		uint32_t sid = 0, n = d->nsids;
		if (n)
			sid = d->sids[d->acc_rr++ % n];
		pthread_mutex_unlock(&d->sidlock);
		int dead = __atomic_load_n(&d->dead_pending, __ATOMIC_ACQUIRE);
		if (dead || !sid) {
			struct pollfd w = { .fd = d->wake, .events = POLLIN };
			(void)poll(&w, 1, 20);
			continue;
		}
		if (!d->spare && mrc_create_qp(d->side[0].ctx, NULL, &d->spare)) {
			d->spare = NULL;
			struct pollfd w = { .fd = d->wake, .events = POLLIN };
			(void)poll(&w, 1, 20);
			continue;
		}
		struct mrc_qp_addr remote;
		int r = mrc_accept(d->spare, sid, sid, n > 1 ? 10 : 50, &remote);
		if (r == -ETIMEDOUT || r == -EAGAIN)
			continue;
		uint64_t one = 1;
		if (!r) {
			struct mrcfi_acc *a = malloc(sizeof(*a));
			if (!a) {
				(void)mrc_destroy_qp(d->spare);
			} else {
				*a = (struct mrcfi_acc){ .qp = d->spare, .remote = remote, .sid = sid };
				pthread_mutex_lock(&d->sidlock);
				a->next = d->accq;
				d->accq = a;
				pthread_mutex_unlock(&d->sidlock);
			}
			d->spare = NULL;
			(void)!write(d->wake, &one, sizeof(one));
		} else if (r == -EPIPE || r == -ECONNRESET) {
			__atomic_store_n(&d->dead_pending, 1, __ATOMIC_RELEASE);
			(void)!write(d->wake, &one, sizeof(one));
		} else {
			/* An endpoint closed under us, or a refused accept:
			 * do not spin. */
			struct pollfd w = { .fd = d->wake, .events = POLLIN };
			(void)poll(&w, 1, 5);
		}
	}
	return NULL;
}

static int domain_close(struct fid *fid)
{
	struct mrcfi_domain *d = container_of(fid, struct mrcfi_domain, d.fid);
	if (d->eps)
		return -FI_EBUSY;
	if (d->threads) {
		__atomic_store_n(&d->stop, 1, __ATOMIC_RELEASE);
		uint64_t one = 1;
		(void)!write(d->wake, &one, sizeof(one));
		pthread_join(d->prog, NULL);
		pthread_join(d->acc, NULL);
	}
	if (d->stats)
		fprintf(stderr, "mrc provider: progress thread rounds %lu (armed %lu, in the "
			"application's grace %lu); fi_cq_read %lu (empty %lu)\n",
			(unsigned long)d->st_wakeups, (unsigned long)d->st_armed_sleeps,
			(unsigned long)d->st_grace_sleeps, (unsigned long)d->st_reads,
			(unsigned long)d->st_empty_reads);
	while (d->accq) {
		struct mrcfi_acc *a = d->accq;
		d->accq = a->next;
		free(a);   /* its QP goes with the client */
	}
	mrcfi_trace_close(d);
	side_close(&d->side[0]);
	side_close(&d->side[1]);
	if (d->wake >= 0)
		close(d->wake);
	pthread_mutex_destroy(&d->lock);
	pthread_mutex_destroy(&d->sidlock);
	free(d);
	return 0;
}

static int domain_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct mrcfi_domain *d = container_of(fid, struct mrcfi_domain, d.fid);
	if (bfid->fclass != FI_CLASS_EQ)
		return -FI_EINVAL;
	if (!(flags & FI_REG_MR))
		return -FI_EINVAL;
	d->eq = container_of(bfid, struct mrcfi_eq, eq.fid);
	return 0;
}

static struct fi_ops domain_fi_ops = {
	.size = sizeof(struct fi_ops), .close = domain_close, .bind = domain_bind,
	.control = mrcfi_no_control, .ops_open = mrcfi_no_ops_open, .tostr = mrcfi_no_tostr,
	.ops_set = mrcfi_no_ops_set,
};

static int no_sep(struct fid_domain *dom, struct fi_info *i, struct fid_ep **s, void *c)
{
	return -FI_ENOSYS;
}

static int no_poll_open(struct fid_domain *dom, struct fi_poll_attr *a, struct fid_poll **p)
{
	return -FI_ENOSYS;
}

static int no_stx(struct fid_domain *dom, struct fi_tx_attr *a, struct fid_stx **s, void *c)
{
	return -FI_ENOSYS;
}

static int no_srx(struct fid_domain *dom, struct fi_rx_attr *a, struct fid_ep **s, void *c)
{
	return -FI_ENOSYS;
}

int mrcfi_atomic_ok(enum fi_datatype dt, enum fi_op op)
{
	return op == FI_SUM && (dt == FI_INT64 || dt == FI_UINT64);
}

static int query_atomic(struct fid_domain *dom, enum fi_datatype dt, enum fi_op op,
			struct fi_atomic_attr *attr, uint64_t flags)
{
	if (flags & (FI_FETCH_ATOMIC | FI_COMPARE_ATOMIC))
		return -FI_EOPNOTSUPP;
	if (!mrcfi_atomic_ok(dt, op))
		return -FI_EOPNOTSUPP;
	attr->size = 8;
	attr->count = MRCFI_SLOT / 8;
	return 0;
}

static int no_query_coll(struct fid_domain *dom, enum fi_collective_op c,
			 struct fi_collective_attr *a, uint64_t f)
{
	return -FI_ENOSYS;
}

static int endpoint2(struct fid_domain *dom, struct fi_info *info, struct fid_ep **ep,
		     uint64_t flags, void *ctx)
{
	return flags ? -FI_EINVAL : mrcfi_ep_open(dom, info, ep, ctx);
}

static struct fi_ops_domain domain_ops = {
	.size = sizeof(struct fi_ops_domain), .av_open = mrcfi_av_open,
	.cq_open = mrcfi_cq_open, .endpoint = mrcfi_ep_open, .scalable_ep = no_sep,
	.cntr_open = mrcfi_cntr_open, .poll_open = no_poll_open, .stx_ctx = no_stx,
	.srx_ctx = no_srx, .query_atomic = query_atomic, .query_collective = no_query_coll,
	.endpoint2 = endpoint2,
};

static struct fi_ops_mr mr_ops = {
	.size = sizeof(struct fi_ops_mr), .reg = mrcfi_mr_reg, .regv = mrcfi_mr_regv,
	.regattr = mrcfi_mr_regattr,
};

int mrcfi_domain_open(struct fid_fabric *fab, struct fi_info *info, struct fid_domain **dom,
		      void *context)
{
	if (info && info->domain_attr && info->domain_attr->name &&
	    strcmp(info->domain_attr->name, MRCFI_DOMAIN_NAME))
		return -FI_EINVAL;
	struct mrcfi_domain *d = calloc(1, sizeof(*d));
	if (!d)
		return -FI_ENOMEM;
	pthread_mutex_init(&d->lock, NULL);
	pthread_mutex_init(&d->sidlock, NULL);
	d->wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	d->fab = container_of(fab, struct mrcfi_fabric, f);
	d->d.fid.fclass = FI_CLASS_DOMAIN;
	d->d.fid.context = context;
	d->d.fid.ops = &domain_fi_ops;
	d->d.ops = &domain_ops;
	d->d.mr = &mr_ops;
	d->mr_move = (uint32_t)env_u64("FI_MRC_MR_MOVE", 1, 0, 1);
	d->progress_spin_us = (int)env_u64("FI_MRC_SPIN", 0, 0, 1000000);
	d->linger_ms = (uint32_t)env_u64("FI_MRC_LINGER_MS", 5000, 0, 600000);
	d->unexp_max = (uint32_t)env_u64("FI_MRC_UNEXP_MAX", 4096, 0, UINT32_MAX);
	/* More slots per QP keep a burst of eager sends out of RNR, at the
	 * cost of fewer peers per side (FI_MRC_RX_SLOTS / this). */
	d->rx_posted = (uint32_t)env_u64("FI_MRC_RX_POSTED", MRCFI_RX_POSTED, 1, 64);
	/* A QP whose slots a burst used up grows to this (mrcfi_qp_grow). */
	d->rx_max = (uint32_t)env_u64("FI_MRC_RX_POSTED_MAX", MRCFI_RX_POSTED_MAX, 1, 256);
	/* 1: send and offer compact EAGERs (one packet for 4 KiB).  Opt-in:
	 * with it 4 MiB fi_rdm_tagged_bw came out lower on the fabric in most
	 * alternated rounds, cause not found (bench/results/libfabric.md). */
	d->compact = (uint32_t)env_u64("FI_MRC_COMPACT", 0, 0, 1);
	if (d->rx_max < d->rx_posted)
		d->rx_max = d->rx_posted;
	d->unexp_bytes_max = env_u64("FI_MRC_UNEXP_BYTES", 64ull << 20, 0, UINT64_MAX);
	d->mr_move_max = env_u64("FI_MRC_MR_MOVE_MAX", 0, 0, UINT64_MAX);
	/* The polling grace and the yield are off by default: with them on,
	 * Open MPI's job in tests/root/libfabric.sh failed at start in 3 runs
	 * of about 8 (MPI_ERR_INTERN, 0 rounds), cause not found yet
	 * (docs/libfabric.md "Progress"). */
	d->poll_grace_ns = env_u64("FI_MRC_POLL_GRACE_US", 0, 0, 10000000) * 1000;
	d->yield_empty = (unsigned)env_u64("FI_MRC_YIELD", 0, 0, 1000000);
	d->stats = (int)env_u64("FI_MRC_STATS", 0, 0, 1);
	/* A rank waiting for a long transfer spins on fi_cq_read; on a busy
	 * machine that spinning takes the CPU from mrcd, which moves the
	 * bytes (docs/libfabric.md "The MPI all-to-all"): sleep once the
	 * wait has lasted FI_MRC_IDLE_SPIN_US. */
	d->idle_ns = env_u64("FI_MRC_IDLE_US", MRCFI_IDLE_US, 0, 100000) * 1000;
	d->idle_spin_ns = env_u64("FI_MRC_IDLE_SPIN_US", MRCFI_IDLE_SPIN_US, 0, 10000000) * 1000;
	mrcfi_trace_open(d);
	int r = d->wake < 0 ? -errno : 0;
	for (int s = 0; !r && s < 2; s++)
		r = side_open(d, &d->side[s]);
	struct mrc_ctx_info ci;
	if (!r && !(r = mrc_ctx_info(d->side[0].ctx, &ci))) {
		d->host = ci.host;
		d->n_hosts = ci.n_hosts;
	}
	if (!r) {
		if (pthread_create(&d->prog, NULL, prog_main, d))
			r = -EAGAIN;
		else if (pthread_create(&d->acc, NULL, acc_main, d)) {
			__atomic_store_n(&d->stop, 1, __ATOMIC_RELEASE);
			uint64_t one = 1;
			(void)!write(d->wake, &one, sizeof(one));
			pthread_join(d->prog, NULL);
			r = -EAGAIN;
		} else {
			d->threads = 1;
		}
	}
	if (r) {
		MRCFI_WARN(FI_LOG_DOMAIN, "cannot open the mrc domain: %s\n", mrc_strerror(r));
		d->threads = 0;
		(void)domain_close(&d->d.fid);
		/* no daemon: "no such device" to the application */
		return r == -ENOENT || r == -ECONNREFUSED ? -FI_ENODEV : r;
	}
	*dom = &d->d;
	return 0;
}
