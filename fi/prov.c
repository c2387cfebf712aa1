/* The provider's entry (fi_prov_ini), fi_getinfo, the fabric, the domain
 * with its two mrcd clients and threads, and memory registration. */
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

/* ---- fi_getinfo ------------------------------------------------------ */
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

static int prov_named(const char *list)
{
	/* "mrc", or a layering list naming mrc last ("ofi_rxm;mrc" is not
	 * ours: we are a core provider and nothing layers over us). */
	return !list || !strcasecmp(list, MRCFI_PROV_NAME);
}

/* Each refusal says why at FI_LOG_LEVEL=info. */
#define REFUSE(why) do { \
	FI_INFO(&mrcfi_prov, FI_LOG_CORE, "hints refused: %s\n", why); \
	return -FI_ENODATA; } while (0)

/* What we can give within the hints, or -FI_ENODATA. */
static int fill_info(const struct fi_info *h, struct fi_info *fi)
{
	uint64_t caps = MRCFI_CAPS;
	uint64_t mr_mode = MRCFI_MR_MODE;
	if (h) {
		if (h->caps & ~MRCFI_CAPS)
			REFUSE("capabilities beyond msg, tagged, RMA write, atomic, directed receive, source");
		if (h->ep_attr && h->ep_attr->type != FI_EP_UNSPEC && h->ep_attr->type != FI_EP_RDM)
			REFUSE("an endpoint type other than FI_EP_RDM");
		if (h->addr_format != FI_FORMAT_UNSPEC)
			REFUSE("an address format other than FI_FORMAT_UNSPEC (mrc names are host index and service id)");
		if (h->fabric_attr && h->fabric_attr->prov_name &&
		    !prov_named(h->fabric_attr->prov_name))
			REFUSE("another provider's name");
		if (h->fabric_attr && h->fabric_attr->name &&
		    strcmp(h->fabric_attr->name, MRCFI_PROV_NAME))
			REFUSE("another fabric's name");
		if (h->domain_attr && h->domain_attr->name &&
		    strcmp(h->domain_attr->name, MRCFI_DOMAIN_NAME))
			REFUSE("another domain's name");
		if (h->ep_attr && h->ep_attr->protocol != FI_PROTO_UNSPEC)
			REFUSE("a protocol other than FI_PROTO_UNSPEC");
		if (h->ep_attr && h->ep_attr->max_msg_size > MRCFI_MAX_MSG)
			REFUSE("a max_msg_size above 4 GiB");
		if (h->tx_attr && (h->tx_attr->msg_order & ~(uint64_t)FI_ORDER_SAS))
			REFUSE("a transmit ordering beyond FI_ORDER_SAS");
		if (h->rx_attr && (h->rx_attr->msg_order & ~(uint64_t)FI_ORDER_SAS))
			REFUSE("a receive ordering beyond FI_ORDER_SAS");
		if (h->tx_attr && h->tx_attr->inject_size > MRCFI_EAGER_MAX)
			REFUSE("an inject_size above 8136 bytes");
		if (h->domain_attr && h->domain_attr->cq_data_size > 8)
			REFUSE("more than 8 bytes of CQ data");
		if (h->domain_attr && h->domain_attr->mr_key_size > 8)
			REFUSE("MR keys above 8 bytes");
		if (h->caps)
			caps = h->caps;
		if (h->domain_attr) {
			int m = h->domain_attr->mr_mode;
			/* FI_MR_BASIC (1.4 and before) means exactly
			 * PROV_KEY|ALLOCATED|VIRT_ADDR, and mrc addresses
			 * regions by offset: treated as no provider keys
			 * (fabtests' getinfo_mr_mode1 wants ENODATA or BASIC) */
			if (m == FI_MR_BASIC)
				m = 0;
			else if (m == FI_MR_SCALABLE)
				m = 0;   /* 0 (UNSPEC) since 1.5: no mode bits */
			if ((m & MRCFI_MR_MODE) != MRCFI_MR_MODE) {
				/* Without provider keys nobody can name our
				 * regions: keep what needs no key. */
				if (h->caps & MRCFI_KEY_CAPS)
					REFUSE("RMA or atomics without FI_MR_PROV_KEY");
				caps &= ~MRCFI_KEY_CAPS;
				mr_mode = 0;
			}
			if (h->domain_attr->caps & ~(uint64_t)(FI_LOCAL_COMM | FI_REMOTE_COMM))
				REFUSE("domain caps beyond local and remote communication (no FI_SHARED_AV)");
			if (h->domain_attr->av_type != FI_AV_UNSPEC &&
			    h->domain_attr->av_type != FI_AV_MAP &&
			    h->domain_attr->av_type != FI_AV_TABLE)
				REFUSE("an AV type other than table or map");
		}
		/* Primary caps imply both directions when none is named. */
		if ((caps & (FI_MSG | FI_TAGGED)) && !(caps & (FI_SEND | FI_RECV)))
			caps |= FI_SEND | FI_RECV;
		if ((caps & (FI_RMA | FI_ATOMIC)) && !(caps & (FI_WRITE | FI_REMOTE_WRITE)))
			caps |= FI_WRITE | FI_REMOTE_WRITE;
		if (h->caps && (h->caps & (FI_READ | FI_REMOTE_READ)))
			REFUSE("RMA read (mrc has no RDMA READ)");
	}
	fi->caps = caps;
	fi->mode = 0;
	fi->addr_format = FI_FORMAT_UNSPEC;
	/* LOCAL/REMOTE_COMM are domain caps: not in tx/rx attrs (getinfo_caps) */
	fi->tx_attr->caps = caps & (FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC | FI_SEND | FI_WRITE);
	fi->tx_attr->mode = 0;
	fi->tx_attr->op_flags = h && h->tx_attr ? h->tx_attr->op_flags & (FI_COMPLETION |
			FI_INJECT_COMPLETE | FI_TRANSMIT_COMPLETE | FI_DELIVERY_COMPLETE) : 0;
	fi->tx_attr->msg_order = FI_ORDER_SAS;
	fi->tx_attr->comp_order = FI_ORDER_NONE;
	fi->tx_attr->inject_size = MRCFI_EAGER_MAX;
	fi->tx_attr->size = 1024;
	fi->tx_attr->iov_limit = 4;
	fi->tx_attr->rma_iov_limit = 1;
	fi->rx_attr->caps = caps & (FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC | FI_RECV |
				    FI_REMOTE_WRITE | FI_DIRECTED_RECV | FI_SOURCE);
	fi->rx_attr->mode = 0;
	fi->rx_attr->op_flags = h && h->rx_attr ? h->rx_attr->op_flags & FI_COMPLETION : 0;
	fi->rx_attr->msg_order = FI_ORDER_SAS;
	fi->rx_attr->comp_order = FI_ORDER_NONE;
	fi->rx_attr->total_buffered_recv = 0;
	fi->rx_attr->size = 1024;
	fi->rx_attr->iov_limit = 4;
	fi->ep_attr->type = FI_EP_RDM;
	fi->ep_attr->protocol = FI_PROTO_UNSPEC;
	fi->ep_attr->protocol_version = 1;
	fi->ep_attr->max_msg_size = MRCFI_MAX_MSG;
	fi->ep_attr->msg_prefix_size = 0;
	fi->ep_attr->max_order_raw_size = 0;
	fi->ep_attr->max_order_war_size = 0;
	fi->ep_attr->max_order_waw_size = 0;
	/* all 64 bits are matched; the generic format is what MPI's tag
	 * layouts count their free bits in */
	fi->ep_attr->mem_tag_format = 0xaaaaaaaaaaaaaaaaull;
	fi->ep_attr->tx_ctx_cnt = 1;
	fi->ep_attr->rx_ctx_cnt = 1;
	struct fi_domain_attr *da = fi->domain_attr;
	da->name = strdup(MRCFI_DOMAIN_NAME);
	da->threading = h && h->domain_attr && h->domain_attr->threading ?
			h->domain_attr->threading : FI_THREAD_SAFE;
	/* mrcd and the provider's thread move everything: AUTO; an
	 * application asking for MANUAL gets what it asked (it polls anyway). */
	da->control_progress = h && h->domain_attr && h->domain_attr->control_progress ?
			       h->domain_attr->control_progress : FI_PROGRESS_AUTO;
	da->data_progress = h && h->domain_attr && h->domain_attr->data_progress ?
			    h->domain_attr->data_progress : FI_PROGRESS_AUTO;
	da->resource_mgmt = FI_RM_ENABLED;
	da->av_type = h && h->domain_attr ? h->domain_attr->av_type : FI_AV_UNSPEC;
	da->mr_mode = (int)mr_mode;
	da->mr_key_size = 8;
	da->cq_data_size = 8;
	da->cq_cnt = 256;
	da->ep_cnt = 64;
	da->tx_ctx_cnt = 64;
	da->rx_ctx_cnt = 64;
	da->max_ep_tx_ctx = 1;
	da->max_ep_rx_ctx = 1;
	da->max_ep_stx_ctx = 0;
	da->max_ep_srx_ctx = 0;
	da->cntr_cnt = 256;
	da->mr_iov_limit = 1;
	da->caps = FI_LOCAL_COMM | FI_REMOTE_COMM;
	da->mode = 0;
	da->mr_cnt = 1024;
	fi->fabric_attr->name = strdup(MRCFI_PROV_NAME);
	fi->fabric_attr->prov_version = MRCFI_PROV_VERSION;
	if (!da->name || !fi->fabric_attr->name)
		return -FI_ENOMEM;
	return 0;
}

/* A node or service as mrc names it: a number (decimal or 0x), or -1. */
static int64_t num_of(const char *s)
{
	if (!s || !*s)
		return -1;
	char *e;
	unsigned long long v = strtoull(s, &e, 0);
	return *e || v > UINT32_MAX ? -1 : (int64_t)v;
}

static int set_name(void **addr, size_t *len, uint32_t host, uint32_t sid)
{
	struct mrcfi_name *n = malloc(sizeof(*n));
	if (!n)
		return -FI_ENOMEM;
	n->host = host;
	n->sid = sid;
	free(*addr);
	*addr = n;
	*len = sizeof(*n);
	return 0;
}

/* src_addr always (fabtests' getinfo_test checks it): the node and
 * service given with FI_SOURCE, else "this host, any service"; an
 * endpoint takes a service id of its own and ignores it.  dest_addr
 * when a node to reach is given: only mrc names (host index, service
 * id) resolve, not IP addresses or host names. */
static int fill_addrs(const char *node, const char *service, uint64_t flags,
		      const struct fi_info *h, struct fi_info *fi)
{
	int64_t hn = num_of(node), sv = num_of(service);
	if (h && h->src_addr && h->src_addrlen == sizeof(struct mrcfi_name)) {
		const struct mrcfi_name *s = h->src_addr;
		if (set_name(&fi->src_addr, &fi->src_addrlen, s->host, s->sid))
			return -FI_ENOMEM;
	} else if (set_name(&fi->src_addr, &fi->src_addrlen,
			    (flags & FI_SOURCE) && hn >= 0 ? (uint32_t)hn : MRCFI_HOST_ANY,
			    (flags & FI_SOURCE) && sv >= 0 ? (uint32_t)sv : 0)) {
		return -FI_ENOMEM;
	}
	if (flags & FI_SOURCE)
		return 0;
	if (node || service) {
		if (hn < 0 || (service && sv < 0)) {
			FI_INFO(&mrcfi_prov, FI_LOG_CORE, "cannot resolve %s:%s: mrc addresses "
				"are a host index and a service id\n", node ? node : "",
				service ? service : "");
			return -FI_ENODATA;
		}
		return set_name(&fi->dest_addr, &fi->dest_addrlen, (uint32_t)hn,
				sv < 0 ? 0 : (uint32_t)sv);
	}
	if (h && h->dest_addr && h->dest_addrlen == sizeof(struct mrcfi_name)) {
		const struct mrcfi_name *d = h->dest_addr;
		return set_name(&fi->dest_addr, &fi->dest_addrlen, d->host, d->sid);
	}
	return 0;
}

static int mrcfi_getinfo(uint32_t version, const char *node, const char *service, uint64_t flags,
			 const struct fi_info *hints, struct fi_info **info)
{
	*info = NULL;
	if (FI_VERSION_LT(version, FI_VERSION(1, 5)))
		return -FI_ENODATA;
	struct fi_info *fi = fi_allocinfo();
	if (!fi)
		return -FI_ENOMEM;
	int r = fill_info(hints, fi);
	if (!r)
		r = fill_addrs(node, service, flags, hints, fi);
	if (r) {
		fi_freeinfo(fi);
		return r;
	}
	*info = fi;
	return 0;
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

static int no_tostr(const struct fid *fid, char *buf, size_t len)
{
	return -FI_ENOSYS;
}

static int no_ops_set(struct fid *fid, const char *name, uint64_t flags, void *ops, void *ctx)
{
	return -FI_ENOSYS;
}

static struct fi_ops fabric_fi_ops = {
	.size = sizeof(struct fi_ops), .close = fabric_close, .bind = mrcfi_no_bind,
	.control = mrcfi_no_control, .ops_open = mrcfi_no_ops_open, .tostr = no_tostr,
	.ops_set = no_ops_set,
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

uint64_t mrcfi_now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
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
	.control = mrcfi_no_control, .ops_open = mrcfi_no_ops_open, .tostr = no_tostr,
	.ops_set = no_ops_set,
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
	d->unexp_bytes_max = env_u64("FI_MRC_UNEXP_BYTES", 64ull << 20, 0, UINT64_MAX);
	d->mr_move_max = env_u64("FI_MRC_MR_MOVE_MAX", 0, 0, UINT64_MAX);
	d->poll_grace_ns = env_u64("FI_MRC_POLL_GRACE_US", 1000, 0, 10000000) * 1000;
	d->yield_empty = (unsigned)env_u64("FI_MRC_YIELD", 4, 0, 1000000);
	d->stats = (int)env_u64("FI_MRC_STATS", 0, 0, 1);
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

/* ---- memory registration --------------------------------------------- */
static int mr_close(struct fid *fid)
{
	struct mrcfi_mr *m = container_of(fid, struct mrcfi_mr, mr.fid);
	for (int s = 0; s < 2; s++)
		if (m->m[s]) {
			int r = mrc_dereg_mr(m->m[s]);
			if (r)
				return r;   /* -EBUSY: writes in flight */
			m->m[s] = NULL;
		}
	free(m);
	return 0;
}

static int mr_control(struct fid *fid, int command, void *arg)
{
	return -FI_ENOSYS;
}

static struct fi_ops mr_fi_ops = {
	.size = sizeof(struct fi_ops), .close = mr_close, .bind = mrcfi_no_bind,
	.control = mr_control, .ops_open = mrcfi_no_ops_open, .tostr = no_tostr,
	.ops_set = no_ops_set,
};

/* The anonymous private mapping (/proc/self/maps) holding [lo, hi), as
 * [*vs, *ve), when it is at most max bytes; else 0. */
static int anon_vma(uintptr_t lo, uintptr_t hi, uint64_t max, uintptr_t *vs, uintptr_t *ve)
{
	FILE *f = fopen("/proc/self/maps", "re");
	if (!f)
		return 0;
	char line[512];
	int ok = 0;
	while (!ok && fgets(line, sizeof(line), f)) {
		unsigned long s, e, ino;
		char perm[8];
		if (sscanf(line, "%lx-%lx %7s %*s %*s %lu", &s, &e, perm, &ino) != 4)
			continue;
		if (s <= lo && hi <= e && perm[3] == 'p' && ino == 0 && !strchr(line, '[') &&
		    e - s <= max) {
			*vs = s;
			*ve = e;
			ok = 1;
		}
	}
	fclose(f);
	return ok;
}

/* Registers [buf, buf+len) with mrcd in one client: memory mrcd can map
 * as it is (a memfd mapping), else, when FI_MRC_MR_MOVE allows (the
 * default), pages moved into a memfd first (docs/client.md "Application
 * memory"), then the exact range.  The whole anonymous mapping moves
 * when it is at most FI_MRC_MR_MOVE_MAX: moving only the range's pages
 * left a later, larger range over the same buffer half moved, half
 * anonymous, which nothing can register (fabtests' fi_mr_test). */
static int reg_side(struct mrcfi_domain *d, struct mrc_ctx *ctx, const void *buf, size_t len,
		    struct mrc_mr **out)
{
	uint32_t acc = MRC_MR_ALL;
	int r = mrc_reg_mem(ctx, (void *)buf, len, acc, 0, out);
	if (r != -EOPNOTSUPP || !d->mr_move)
		return r;
	long pg = sysconf(_SC_PAGESIZE);
	uintptr_t lo = (uintptr_t)buf & ~(uintptr_t)(pg - 1);
	uintptr_t hi = ((uintptr_t)buf + len + (uintptr_t)pg - 1) & ~(uintptr_t)(pg - 1);
	uintptr_t vs, ve;
	if (anon_vma(lo, hi, d->mr_move_max, &vs, &ve)) {
		lo = vs;
		hi = ve;
	}
	struct mrc_mr *tmp;
	r = mrc_reg_mem(ctx, (void *)lo, hi - lo, acc, MRC_REG_MOVE, &tmp);
	if (r)
		return r;
	(void)mrc_dereg_mr(tmp);
	return mrc_reg_mem(ctx, (void *)buf, len, acc, 0, out);
}

int mrcfi_mr_reg(struct fid *fid, const void *buf, size_t len, uint64_t access, uint64_t offset,
		 uint64_t requested_key, uint64_t flags, struct fid_mr **mr, void *context)
{
	if (fid->fclass != FI_CLASS_DOMAIN)
		return -FI_EINVAL;
	struct mrcfi_domain *d = container_of(fid, struct mrcfi_domain, d.fid);
	if (flags & ~(uint64_t)(FI_RMA_EVENT))
		return -FI_EINVAL;
	if (flags & FI_RMA_EVENT)
		return -FI_ENOSYS;
	/* Read access is accepted: no peer can read (RMA read is refused
	 * where it is asked, fi_read and getinfo), and fabtests'
	 * fi_mr_test and fi_rdm_atomic register every combination. */
	struct mrcfi_mr *m = calloc(1, sizeof(*m));
	if (!m)
		return -FI_ENOMEM;
	m->d = d;
	m->buf = buf;
	m->len = len;
	m->access = access;
	m->mr.fid.fclass = FI_CLASS_MR;
	m->mr.fid.context = context;
	m->mr.fid.ops = &mr_fi_ops;
	m->mr.mem_desc = m;
	if ((access & FI_REMOTE_WRITE) && len) {
		for (int s = 0; s < 2; s++) {
			int r = reg_side(d, d->side[s].ctx, buf, len, &m->m[s]);
			if (r) {
				MRCFI_WARN(FI_LOG_MR, "fi_mr_reg of %p+%zu: %s (%s)\n", buf, len,
					   mrc_strerror(r), mrc_last_error(d->side[s].ctx));
				(void)mr_close(&m->mr.fid);
				return r == -EOPNOTSUPP ? -FI_EOPNOTSUPP : r;
			}
		}
		/* Peers that connected to us write through side 0, those
		 * we connected to through side 1: the key names both. */
		m->mr.key = (uint64_t)mrc_mr_key(m->m[0]) << 32 | mrc_mr_key(m->m[1]);
	} else {
		/* Local use only (sends and receives copy through bounce
		 * buffers): nothing for mrcd; a key no peer can use. */
		pthread_mutex_lock(&d->lock);
		m->mr.key = ++d->local_key;
		pthread_mutex_unlock(&d->lock);
	}
	*mr = &m->mr;
	if (d->eq) {
		struct fi_eq_entry e = { .fid = &m->mr.fid, .context = context };
		(void)mrcfi_eq_post(d->eq, FI_MR_COMPLETE, &e, sizeof(e), 0);
	}
	(void)offset;
	(void)requested_key;
	return 0;
}

int mrcfi_mr_regv(struct fid *fid, const struct iovec *iov, size_t count, uint64_t access,
		  uint64_t offset, uint64_t requested_key, uint64_t flags, struct fid_mr **mr,
		  void *context)
{
	if (count != 1)
		return -FI_EINVAL;   /* mr_iov_limit 1 */
	return mrcfi_mr_reg(fid, iov[0].iov_base, iov[0].iov_len, access, offset, requested_key,
			    flags, mr, context);
}

int mrcfi_mr_regattr(struct fid *fid, const struct fi_mr_attr *attr, uint64_t flags,
		     struct fid_mr **mr)
{
	if (!attr || attr->iov_count != 1)
		return -FI_EINVAL;
	if (attr->iface != FI_HMEM_SYSTEM)
		return -FI_ENOSYS;
	return mrcfi_mr_reg(fid, attr->mr_iov[0].iov_base, attr->mr_iov[0].iov_len, attr->access,
			    attr->offset, attr->requested_key, flags, mr, attr->context);
}
