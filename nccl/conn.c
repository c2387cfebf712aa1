/* libnccl-net-mrc.so, connection setup (docs/nccl.md): init and
 * finalize, the properties, and listen/connect/accept/close without
 * blocking NCCL.
 *
 * mrc_accept and mrc_connect block and hold their context's control
 * channel, so two helper threads own two contexts: the accept thread (one
 * listening service id per process, accepts with a short timeout, recv
 * comms' QPs and regions) and the connect thread (send comms).  NCCL's
 * thread only posts and polls QPs (the QP locks, never a context lock, in
 * nccl/data.c, send.c, recv.c) and hands closes back to the owning thread. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <mrc/mrc.h>

#include "nccl/plugin.h"

/* One plugin state per process; init/finalize count references (NCCL 2.28
 * calls init per communicator). */
static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int refs;
	bool stop;
	struct mrc_ctx *actx, *cctx;    /* accept thread's, connect thread's */
	struct mrc_ctx_info info;
	uint32_t sid;
	uint32_t next_listen_id;
	struct listen_comm *listens;
	struct comm *connq, *connq_tail; /* send comms to connect */
	struct comm *dead_a, *dead_c;   /* closed comms, per owning thread */
	pthread_t athr, cthr;
	ncclNetAttr_v11_t attr;
	int speed_mbps, latency_us;     /* from the environment, at start */
} G = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };

uint64_t mrcn_arena_bytes = MRCN_ARENA, mrcn_max_msg = MRCN_MAX_MSG;
uint64_t mrcn_eg_bytes = MRCN_EG_DEFAULT;
uint32_t mrcn_eg_slots = MRCN_EG_SLOTS;
int mrcn_cuda_ok;

/* Send comms need no eager ring; receive comms carry one. */
static uint64_t region_len(int kind)
{
	return MRCN_RING_OFF + (kind == K_RECV ? mrcn_eg_slots * mrcn_eg_stride(mrcn_eg_bytes) : 0);
}

int mrcn_post_egr(struct comm *c)
{
	struct mrcn_cts *out = CTS_IN(c, MRCN_NCTS);
	*out = (struct mrcn_cts){ .magic = MRCN_EGR_MAGIC, .id = c->eg_slots,
				  .tag = MRCN_EGR_F_COMPACT | MRCN_EGR_F_PIECES, .credits = c->eg_freed, .size = (uint32_t)c->eg_stride,
				  .off = c->eg_off };
	int r = mrc_post_send(c->qp, MRCN_WR_EGR, c->lkey, MRCN_EGR_OFF, sizeof(*out));
	if (!r) {
		c->egr_busy = 1;
		c->eg_told = c->eg_freed;
		c->st.credit_msgs++;
	}
	return r;
}

/* QP and bounce region of a comm, on the calling helper thread's ctx. */
static int comm_setup(struct comm *c, struct mrc_ctx *ctx)
{
	uint32_t acc = c->kind == K_SEND ? MRC_MR_LOCAL_READ | MRC_MR_LOCAL_WRITE
					 : MRC_MR_LOCAL_READ | MRC_MR_REMOTE_WRITE;
	int r = mrc_alloc_mr(ctx, region_len(c->kind), acc, &c->mr);
	if (r)
		return r;
	struct mrc_qp_cfg qc = { .flags = c->qp_flags };
	r = mrc_create_qp(ctx, c->qp_flags ? &qc : NULL, &c->qp);
	if (r) {
		mrc_dereg_mr(c->mr);
		c->mr = NULL;
		return r;
	}
	c->ctx = ctx;
	c->base = mrc_mr_addr(c->mr);
	c->lkey = mrc_mr_key(c->mr);
	mrcn_arena_init(&c->arena, mrcn_arena_bytes);
	c->nfree_ids = MRCN_NCTS;
	for (int i = 0; i < MRCN_NCTS; i++)
		c->free_ids[i] = MRCN_NCTS - 1 - i;
	if (c->kind == K_RECV && mrcn_eg_bytes) {
		c->eg_slots = mrcn_eg_slots;
		c->eg_stride = mrcn_eg_stride(mrcn_eg_bytes);
		c->eg_off = MRCN_RING_OFF;
	}
	return 0;
}

static void comm_destroy(struct comm *c)
{
	/* Sends were reported done at their post: let their data reach the
	 * peer before the QP (and its queued work) goes. */
	if (c->kind == K_SEND && c->qp && c->data_inflight > 0 &&
	    mrcn_send_drain(c, MRCN_CLOSE_DRAIN_MS))
		WARN("closeSend: %d sends to host %u still in flight after %d ms: dropped",
		     c->data_inflight, c->host, MRCN_CLOSE_DRAIN_MS);
	/* What the eager path did, for MRC_NCCL_DEBUG=1 or NCCL_DEBUG=INFO */
	if (c->kind == K_SEND && (c->st.eager_sends || c->st.cts_sends))
		INFO("send comm to host %u closed: %llu eager sends, %llu by clear-to-send "
		     "(%llu isend calls found no eager credit)", c->host,
		     (unsigned long long)c->st.eager_sends, (unsigned long long)c->st.cts_sends,
		     (unsigned long long)c->st.eager_no_credit);
	mrcn_cuda_detach(c);
	if (c->qp)
		mrc_destroy_qp(c->qp);
	if (c->mr)
		mrc_dereg_mr(c->mr);
	free(c->tags);
	free(c);
}

static void drain_dead(struct comm **list)
{
	pthread_mutex_lock(&G.lock);
	struct comm *d = *list;
	*list = NULL;
	pthread_mutex_unlock(&G.lock);
	while (d) {
		struct comm *n = d->next;
		comm_destroy(d);
		d = n;
	}
}

int mrcn_post_cts_recv(struct comm *c, int slot)
{
	return mrc_post_recv(c->qp, MRCN_WR_CTS | (uint64_t)slot, c->lkey,
			     mrcn_arena_bytes + (uint64_t)slot * sizeof(struct mrcn_cts),
			     sizeof(struct mrcn_cts));
}

/* ---- helper threads ---------------------------------------------------- */
static void *accept_main(void *arg)
{
	(void)arg;
	struct comm *spare = NULL;
	for (;;) {
		drain_dead(&G.dead_a);
		pthread_mutex_lock(&G.lock);
		bool stop = G.stop;
		pthread_mutex_unlock(&G.lock);
		if (stop)
			break;
		if (!spare) {
			spare = calloc(1, sizeof(*spare));
			if (!spare || (spare->kind = K_RECV, comm_setup(spare, G.actx))) {
				WARN("accept thread: no QP or bounce region: %s", mrc_last_error(G.actx));
				free(spare);
				spare = NULL;
				struct timespec ts = { 0, 100 * 1000 * 1000 };
				nanosleep(&ts, NULL);   /* backoff before retrying, not a sync */
				continue;
			}
		}
		struct mrc_qp_addr peer;
		/* Short timeout: the thread also serves closes and shutdown. */
		int r = mrc_accept(spare->qp, G.sid, spare->lkey, MRCN_ACCEPT_POLL_MS, &peer);
		if (r == -ETIMEDOUT)
			continue;
		if (r) {
			WARN("mrc_accept: %s (%s)", mrc_strerror(r), mrc_last_error(G.actx));
			comm_destroy(spare);
			spare = NULL;
			if (r == -EPIPE || r == -ECONNRESET)
				break;
			continue;
		}
		spare->host = peer.host;
		/* Tell the sender where eager messages may go (no slots: it
		 * never sends eagerly).  A send before its RECV is posted is
		 * retried by the engine (RNR), not lost. */
		if (spare->eg_slots && (r = mrcn_post_egr(spare)))
			WARN("eager advertisement to host %u: %s", peer.host, mrc_strerror(r));
		pthread_mutex_lock(&G.lock);
		struct listen_comm *l = G.listens;
		while (l && l->id != peer.priv)
			l = l->next;
		if (l) {
			struct comm **p = &l->ready_head;
			while (*p)
				p = &(*p)->next;
			spare->next = NULL;
			atomic_store(&spare->ready, 1);
			*p = spare;
		} else {
			spare->next = G.dead_a;
			G.dead_a = spare;
		}
		pthread_mutex_unlock(&G.lock);
		spare = NULL;
	}
	if (spare)
		comm_destroy(spare);
	drain_dead(&G.dead_a);
	return NULL;
}

static int connect_one(struct comm *c, uint32_t sid)
{
	int r = comm_setup(c, G.cctx);
	if (r)
		return r;
	struct mrc_qp_addr peer;
	/* -ECONNREFUSED: the listener's backlog is full; bounded retries. */
	for (int i = 0; i < 200; i++) {
		r = mrc_connect(c->qp, c->host, sid, c->listen_id, &peer);
		if (r != -ECONNREFUSED)
			break;
		struct timespec ts = { 0, 10 * 1000 * 1000 };
		nanosleep(&ts, NULL);   /* backoff, not a sync */
	}
	if (r)
		return r;
	c->rkey = peer.priv;
	for (int i = 0; i < MRCN_NRECV && !r; i++)
		r = mrcn_post_cts_recv(c, i);
	return r;
}

static void *connect_main(void *arg)
{
	(void)arg;
	for (;;) {
		pthread_mutex_lock(&G.lock);
		while (!G.stop && !G.connq && !G.dead_c)
			pthread_cond_wait(&G.cond, &G.lock);
		bool stop = G.stop;
		struct comm *c = G.connq;
		if (c && !stop) {
			G.connq = c->next;
			if (!G.connq)
				G.connq_tail = NULL;
		}
		pthread_mutex_unlock(&G.lock);
		drain_dead(&G.dead_c);
		if (stop)
			break;
		if (!c)
			continue;
		uint32_t sid = c->rkey;         /* the handle's sid, parked here */
		c->rkey = 0;
		int r = connect_one(c, sid);
		if (r)
			WARN("connect to host %u service %u: %s (%s)", c->host, sid, mrc_strerror(r),
			     mrc_last_error(G.cctx));
		atomic_store(&c->ready, r ? r : 1);
	}
	/* Comms still queued were never returned to NCCL: the handle owns
	 * them, and finalize frees them below through dead_c. */
	pthread_mutex_lock(&G.lock);
	struct comm *q = G.connq;
	G.connq = G.connq_tail = NULL;
	pthread_mutex_unlock(&G.lock);
	while (q) {
		struct comm *n = q->next;
		atomic_store(&q->ready, -ECANCELED);
		q = n;
	}
	drain_dead(&G.dead_c);
	return NULL;
}

/* ---- init / finalize --------------------------------------------------- */
static void shutdown_locked_out(void)
{
	pthread_mutex_lock(&G.lock);
	G.stop = true;
	pthread_cond_broadcast(&G.cond);
	pthread_mutex_unlock(&G.lock);
	pthread_join(G.athr, NULL);
	pthread_join(G.cthr, NULL);
	mrc_unlisten(G.actx, G.sid);
	mrc_close(G.actx);
	mrc_close(G.cctx);
	G.actx = G.cctx = NULL;
}

/* NAME's decimal value in lo..hi, def when unset or empty; a value that
 * is not one fails the plugin's init (said once) rather than becoming 0. */
static int env_int(const char *name, int def, int lo, int hi, int *out)
{
	const char *v = getenv(name);
	*out = def;
	if (!v || !*v)
		return 0;
	char *end;
	errno = 0;
	long x = strtol(v, &end, 10);
	if (errno || *end || end == v || x < lo || x > hi) {
		WARN("%s='%s': want a whole number from %d to %d", name, v, lo, hi);
		return -EINVAL;
	}
	*out = (int)x;
	return 0;
}

static ncclResult_t start(void)
{
	const char *sock = getenv(MRC_SOCK_ENV);
	int mb, planes, mbps, eager;
	/* The planes' sum: mrcd does not tell clients its NICs' rates, so
	 * the operator states them (docs/nccl.md); NCCL takes an int. */
	if (env_int("MRC_NCCL_BOUNCE_MB", (int)(MRCN_ARENA >> 20), 1, (int)(MRCN_ARENA >> 20), &mb) ||
	    env_int("MRC_NCCL_PLANES", 2, 1, 64, &planes) ||
	    env_int("MRC_NCCL_PLANE_MBPS", 100000, 1, 10000000, &mbps) ||
	    env_int("MRC_NCCL_LATENCY_US", 0, 0, 1000000, &G.latency_us) ||
	    env_int("MRC_NCCL_EAGER_BYTES", (int)MRCN_EG_DEFAULT, 0, (int)MRCN_EG_MAX, &eager))
		return ncclInvalidArgument;
	mrcn_eg_bytes = (uint64_t)eager;
	mrcn_eg_slots = eager ? MRCN_EG_SLOTS : 0;
	G.speed_mbps = planes * mbps;
	mrcn_arena_bytes = (uint64_t)mb << 20;
	mrcn_max_msg = mrcn_arena_bytes / MRCN_MAX_RECVS;
	int r = mrc_open(NULL, &G.actx);
	if (!r)
		r = mrc_open(NULL, &G.cctx);
	if (r) {
		WARN("cannot reach mrcd at %s: %s", sock ? sock : "/run/mrcd/mrcd.sock", mrc_strerror(r));
		goto fail;
	}
	mrc_ctx_info(G.actx, &G.info);
	/* One service id per process: a random start, the next one while
	 * another process (or user) holds it. */
	uint32_t seed = (uint32_t)getpid() * 2654435761u ^ (uint32_t)time(NULL);
	for (int i = 0; i < 64; i++) {
		G.sid = MRCN_SID_BASE + (seed + (uint32_t)i * 7919u) % MRCN_SID_SPAN;
		r = mrc_listen(G.actx, G.sid, 128);
		if (r != -EADDRINUSE)
			break;
	}
	if (r) {
		WARN("mrc_listen: %s (%s)", mrc_strerror(r), mrc_last_error(G.actx));
		goto fail;
	}
	G.stop = false;
	if (pthread_create(&G.athr, NULL, accept_main, NULL))
		goto fail;
	if (pthread_create(&G.cthr, NULL, connect_main, NULL)) {
		G.stop = true;
		pthread_join(G.athr, NULL);
		goto fail;
	}
	INFO("using mrcd host %u of %u, service id %u, %llu MiB bounce per comm, eager up to %llu B",
	     G.info.host, G.info.n_hosts, G.sid, (unsigned long long)(mrcn_arena_bytes >> 20),
	     (unsigned long long)mrcn_eg_bytes);
	char why[128];
	mrcn_cuda_ok = mrcn_cuda_probe(why, sizeof(why)) == 0;
	INFO("%s: pointer support %s", why,
	     mrcn_cuda_ok ? "host and CUDA (staged through the bounce arena)" : "host only");
	return ncclSuccess;
fail:
	if (G.actx)
		mrc_close(G.actx);
	if (G.cctx)
		mrc_close(G.cctx);
	G.actx = G.cctx = NULL;
	return ncclSystemError;
}

ncclResult_t mrcn_init(void **ctx, uint64_t commId, ncclNetCommConfig_t *config,
				  ncclDebugLogger_t logFunction, ncclProfilerCallback_t profFunction)
{
	(void)commId;
	(void)profFunction;
	struct mrcn_ictx *ic = NULL;
	if (ctx) {
		*ctx = NULL;
		if (!(ic = calloc(1, sizeof(*ic))))
			return ncclSystemError;
		ic->qp_flags = config ? mrcn_tclass_flags(config->trafficClass) : 0;
	}
	pthread_mutex_lock(&G.lock);
	ncclResult_t res = ncclSuccess;
	if (logFunction)
		mrcn_log_set(logFunction);
	if (G.refs == 0) {
		pthread_mutex_unlock(&G.lock);
		res = start();
		pthread_mutex_lock(&G.lock);
	}
	if (res == ncclSuccess)
		G.refs++;
	pthread_mutex_unlock(&G.lock);
	if (res != ncclSuccess)
		free(ic);
	else if (ctx)
		*ctx = ic;
	return res;
}

ncclResult_t mrcn_finalize(void *ctx)
{
	free(ctx);
	pthread_mutex_lock(&G.lock);
	int last = G.refs > 0 && --G.refs == 0;
	pthread_mutex_unlock(&G.lock);
	if (last)
		shutdown_locked_out();
	return ncclSuccess;
}

ncclResult_t mrcn_devices(int *ndev)
{
	*ndev = 1;
	return ncclSuccess;
}

ncclResult_t mrcn_props(int dev, ncclNetProperties_v11_t *p)
{
	if (dev != 0)
		return ncclInvalidArgument;
	static char name[] = "mrc0";
	memset(p, 0, sizeof(*p));
	p->name = name;
	p->pciPath = NULL;              /* a daemon, not a PCI function */
	p->guid = 0x6d72630000000000ull | G.info.host;
	/* CUDA pointers only with a device and the copy engine (init). */
	p->ptrSupport = NCCL_PTR_HOST | (mrcn_cuda_ok ? NCCL_PTR_CUDA : 0);
	p->regIsGlobal = 1;             /* mhandles are not tied to a comm */
	p->forceFlush = 0;
	p->speed = G.speed_mbps;        /* start() read them */
	p->port = 1;
	p->latency = (float)G.latency_us;
	uint64_t by_mem = G.info.max_mem / region_len(K_RECV);
	uint64_t by_qp = G.info.max_qps > 1 ? G.info.max_qps - 1 : 1;   /* one spare */
	p->maxComms = (int)(by_mem < by_qp ? by_mem : by_qp);
	p->maxRecvs = MRCN_MAX_RECVS;
	p->netDeviceType = NCCL_NET_DEVICE_HOST;
	p->netDeviceVersion = 0;
	p->vProps.ndevs = 1;
	p->vProps.devs[0] = 0;
	p->maxP2pBytes = mrcn_max_msg;
	p->maxCollBytes = mrcn_max_msg;
	p->maxMultiRequestSize = 1;
	return ncclSuccess;
}

/* ---- connection setup -------------------------------------------------- */
ncclResult_t mrcn_listen(void *ctx, int dev, void *handle, void **listenComm)
{
	(void)ctx;
	if (dev != 0 || !G.actx)
		return ncclInvalidUsage;
	struct listen_comm *l = calloc(1, sizeof(*l));
	if (!l)
		return ncclSystemError;
	l->kind = K_LISTEN;
	pthread_mutex_lock(&G.lock);
	l->id = ++G.next_listen_id;
	l->next = G.listens;
	G.listens = l;
	pthread_mutex_unlock(&G.lock);
	struct mrcn_handle h = { .magic = MRCN_HANDLE_MAGIC, .host = G.info.host, .sid = G.sid,
				 .listen_id = l->id };
	memset(handle, 0, NCCL_NET_HANDLE_MAXSIZE);
	memcpy(handle, &h, sizeof(h));
	*listenComm = l;
	return ncclSuccess;
}

/* NCCL calls connect again with the same handle until it gets a comm: the
 * pending comm is remembered in the handle (as net_ib keeps its stage). */
ncclResult_t mrcn_connect(void *ctx, int dev, void *handle, void **sendComm,
				     ncclNetDeviceHandle_t **sendDevComm)
{
	(void)sendDevComm;
	*sendComm = NULL;
	struct mrcn_handle h;
	if (dev != 0 || mrcn_handle_parse(handle, &h) || !G.cctx) {
		WARN("connect: not an mrc handle, or the plugin is not initialized");
		return ncclInvalidUsage;
	}
	struct comm *c = (struct comm *)(uintptr_t)h.pending;
	if (!c) {
		c = calloc(1, sizeof(*c));
		if (!c)
			return ncclSystemError;
		c->kind = K_SEND;
		c->qp_flags = ctx ? ((struct mrcn_ictx *)ctx)->qp_flags : 0;
		c->host = h.host;
		c->listen_id = h.listen_id;
		c->rkey = h.sid;
		pthread_mutex_lock(&G.lock);
		if (G.connq_tail)
			G.connq_tail->next = c;
		else
			G.connq = c;
		G.connq_tail = c;
		pthread_cond_broadcast(&G.cond);
		pthread_mutex_unlock(&G.lock);
		h.pending = (uint64_t)(uintptr_t)c;
		memcpy(handle, &h, sizeof(h));
		return ncclSuccess;
	}
	int st = atomic_load(&c->ready);
	if (st == 0)
		return ncclSuccess;
	h.pending = 0;
	memcpy(handle, &h, sizeof(h));
	if (st < 0) {
		WARN("connect to host %u failed: %s", h.host, mrc_strerror(st));
		pthread_mutex_lock(&G.lock);
		c->next = G.dead_c;
		G.dead_c = c;
		pthread_cond_broadcast(&G.cond);
		pthread_mutex_unlock(&G.lock);
		return ncclSystemError;
	}
	*sendComm = c;
	return ncclSuccess;
}

ncclResult_t mrcn_accept(void *listenComm, void **recvComm,
				    ncclNetDeviceHandle_t **recvDevComm)
{
	(void)recvDevComm;
	struct listen_comm *l = listenComm;
	pthread_mutex_lock(&G.lock);
	struct comm *c = l->ready_head;
	if (c)
		l->ready_head = c->next;
	pthread_mutex_unlock(&G.lock);
	*recvComm = c;
	return ncclSuccess;
}

static void retire(struct comm *c, struct comm **list)
{
	pthread_mutex_lock(&G.lock);
	c->next = *list;
	*list = c;
	pthread_cond_broadcast(&G.cond);
	pthread_mutex_unlock(&G.lock);
}

ncclResult_t mrcn_close_listen(void *listenComm)
{
	struct listen_comm *l = listenComm;
	pthread_mutex_lock(&G.lock);
	for (struct listen_comm **p = &G.listens; *p; p = &(*p)->next)
		if (*p == l) {
			*p = l->next;
			break;
		}
	struct comm *c = l->ready_head;
	while (c) {
		struct comm *n = c->next;
		c->next = G.dead_a;
		G.dead_a = c;
		c = n;
	}
	pthread_mutex_unlock(&G.lock);
	free(l);
	return ncclSuccess;
}

/* The owning helper thread destroys the QP (mrcd discards its queued
 * work), then the region; a send comm's data still in flight is let
 * through first (comm_destroy): its sends were already reported done. */
ncclResult_t mrcn_close_send(void *sendComm)
{
	retire(sendComm, &G.dead_c);
	return ncclSuccess;
}

ncclResult_t mrcn_close_recv(void *recvComm)
{
	retire(recvComm, &G.dead_a);
	return ncclSuccess;
}

ncclResult_t mrcn_make_vdevice(int *d, ncclNetVDeviceProps_t *props)
{
	/* One device: a virtual NIC can only be that device itself. */
	if (!props || props->ndevs != 1 || props->devs[0] != 0)
		return ncclInvalidUsage;
	*d = 0;
	return ncclSuccess;
}

ncclResult_t mrcn_set_attr(void *ctx, ncclNetAttr_v11_t *attr)
{
	(void)ctx;
	/* Hints about peers and flows: mrc sprays every QP over all paths,
	 * so they change nothing; kept for diagnostics. */
	if (attr)
		G.attr = *attr;
	return ncclSuccess;
}
