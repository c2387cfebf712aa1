/* libnccl-net-mrc.so: NCCL's net plugin over mrc (docs/nccl.md).
 *
 * One device: the local mrcd.  Each send/recv comm pair is one libmrc QP
 * pair, connected by mrcd's connection manager.  NCCL's buffers are
 * cudaHostAlloc memory, which mrcd cannot map (it maps memfds only), so
 * every comm owns a registered bounce region: the sender copies into its
 * region and WRITE_IMMs into the receiver's, which copies out.
 *
 * Protocol (receiver-driven, like a CTS): irecv reserves, per grouped
 * receive, an id and room in the receiver's bounce arena, and SENDs a
 * clear-to-send {id, tag, size, offset} to the sender's posted RECVs.  isend
 * takes the oldest CTS of its tag (none yet: a NULL request, NCCL retries),
 * copies, and WRITE_IMMs the data to that offset with imm = id; the
 * receiver's RECV_WRITE_IMM completion gives the size.
 *
 * Never blocking NCCL: mrc_accept and mrc_connect block and hold their
 * context's control channel, so two helper threads own two contexts: the
 * accept thread (one listening service id per process, accepts with a short
 * timeout, recv comms' QPs and regions) and the connect thread (send comms).
 * NCCL's thread only posts and polls QPs (the QP locks, never a context
 * lock) and hands closes back to the owning thread. */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <mrc/mrc.h>

#include "nccl/arena.h"
#include "nccl/net_abi.h"
#include "nccl/proto.h"

#define EXPORT __attribute__((visibility("default")))

/* ---- logging ----------------------------------------------------------- */
static ncclDebugLogger_t logger;

__attribute__((format(printf, 3, 4)))
static void mlog(ncclDebugLogLevel lvl, int line, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (logger)
		logger(lvl, NCCL_NET | NCCL_INIT, __FILE__, line, "NET/mrc : %s", buf);
	else if (lvl == NCCL_LOG_WARN || getenv("MRC_NCCL_DEBUG"))
		fprintf(stderr, "NET/mrc: %s\n", buf);
}
#define WARN(...) mlog(NCCL_LOG_WARN, __LINE__, __VA_ARGS__)
#define INFO(...) mlog(NCCL_LOG_INFO, __LINE__, __VA_ARGS__)

/* ---- comms ------------------------------------------------------------- */
enum { K_SEND = 1, K_RECV = 2, K_LISTEN = 3 };

struct req {
	struct comm *c;
	int used, n, ndone;
	int err;
	struct {
		void *data;
		uint64_t size;          /* recv: capacity; send: length */
		uint32_t got;
		int id;                 /* recv: CTS id */
		int alloc;              /* arena allocation, -1 none */
	} sub[MRCN_MAX_RECVS];
};

struct comm {
	int kind;
	struct comm *next;              /* helper-thread queues */
	struct mrc_qp *qp;
	struct mrc_mr *mr;
	uint8_t *base;
	uint32_t lkey, rkey;            /* rkey: the peer's bounce region */
	_Atomic int ready;              /* 1 connected, -errno failed */
	uint32_t listen_id;             /* send: the listen comm it asked for */
	uint32_t host;
	int err;                        /* first error completion */
	struct mrcn_arena arena;
	struct req reqs[MRCN_MAX_REQS];
	/* send side: CTS received, oldest first */
	struct mrcn_cts cts[MRCN_NCTS];
	int ncts;
	/* recv side: CTS id -> (request, sub) */
	struct { struct req *r; int sub; } ids[MRCN_NCTS];
	int free_ids[MRCN_NCTS], nfree_ids;
};

struct listen_comm {
	int kind;
	uint32_t id;
	struct listen_comm *next;
	struct comm *ready_head;        /* accepted, not yet handed to NCCL */
};

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
} G = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };

/* Bounce bytes per comm (MRC_NCCL_BOUNCE_MB, at most MRCN_ARENA) and the
 * largest message, chosen so that a full grouped receive always fits. */
static uint64_t arena_bytes = MRCN_ARENA, max_msg = MRCN_MAX_MSG;

static uint64_t region_len(void)
{
	return arena_bytes + MRCN_NCTS * sizeof(struct mrcn_cts);
}

/* QP and bounce region of a comm, on the calling helper thread's ctx. */
static int comm_setup(struct comm *c, struct mrc_ctx *ctx)
{
	uint32_t acc = c->kind == K_SEND ? MRC_MR_LOCAL_READ | MRC_MR_LOCAL_WRITE
					 : MRC_MR_LOCAL_READ | MRC_MR_REMOTE_WRITE;
	int r = mrc_alloc_mr(ctx, region_len(), acc, &c->mr);
	if (r)
		return r;
	r = mrc_create_qp(ctx, NULL, &c->qp);
	if (r) {
		mrc_dereg_mr(c->mr);
		c->mr = NULL;
		return r;
	}
	c->base = mrc_mr_addr(c->mr);
	c->lkey = mrc_mr_key(c->mr);
	mrcn_arena_init(&c->arena, arena_bytes);
	c->nfree_ids = MRCN_NCTS;
	for (int i = 0; i < MRCN_NCTS; i++)
		c->free_ids[i] = MRCN_NCTS - 1 - i;
	return 0;
}

static void comm_destroy(struct comm *c)
{
	if (c->qp)
		mrc_destroy_qp(c->qp);
	if (c->mr)
		mrc_dereg_mr(c->mr);
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

#define CTS_IN(c, i) ((struct mrcn_cts *)((c)->base + arena_bytes) + (i))

static int post_cts_recv(struct comm *c, int slot)
{
	return mrc_post_recv(c->qp, MRCN_WR_CTS | (uint64_t)slot, c->lkey,
			     arena_bytes + (uint64_t)slot * sizeof(struct mrcn_cts),
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
	for (int i = 0; i < MRCN_NCTS && !r; i++)
		r = post_cts_recv(c, i);
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

static int env_int(const char *name, int def)
{
	const char *v = getenv(name);
	return v && *v ? atoi(v) : def;
}

static ncclResult_t start(void)
{
	const char *sock = getenv(MRC_SOCK_ENV);
	int mb = env_int("MRC_NCCL_BOUNCE_MB", (int)(MRCN_ARENA >> 20));
	if (mb < 1 || (uint64_t)mb > MRCN_ARENA >> 20)
		mb = (int)(MRCN_ARENA >> 20);
	arena_bytes = (uint64_t)mb << 20;
	max_msg = arena_bytes / MRCN_MAX_RECVS;
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
	INFO("using mrcd host %u of %u, service id %u, %llu MiB bounce per comm",
	     G.info.host, G.info.n_hosts, G.sid, (unsigned long long)(arena_bytes >> 20));
	return ncclSuccess;
fail:
	if (G.actx)
		mrc_close(G.actx);
	if (G.cctx)
		mrc_close(G.cctx);
	G.actx = G.cctx = NULL;
	return ncclSystemError;
}

static ncclResult_t mrc_nccl_init(void **ctx, uint64_t commId, ncclNetCommConfig_t *config,
				  ncclDebugLogger_t logFunction, ncclProfilerCallback_t profFunction)
{
	(void)commId;
	(void)config;
	(void)profFunction;
	pthread_mutex_lock(&G.lock);
	ncclResult_t res = ncclSuccess;
	if (logFunction)
		logger = logFunction;
	if (G.refs == 0) {
		pthread_mutex_unlock(&G.lock);
		res = start();
		pthread_mutex_lock(&G.lock);
	}
	if (res == ncclSuccess)
		G.refs++;
	pthread_mutex_unlock(&G.lock);
	if (ctx)
		*ctx = &G;
	return res;
}

static ncclResult_t mrc_nccl_finalize(void *ctx)
{
	(void)ctx;
	pthread_mutex_lock(&G.lock);
	int last = G.refs > 0 && --G.refs == 0;
	pthread_mutex_unlock(&G.lock);
	if (last)
		shutdown_locked_out();
	return ncclSuccess;
}

static ncclResult_t mrc_nccl_devices(int *ndev)
{
	*ndev = 1;
	return ncclSuccess;
}

static ncclResult_t mrc_nccl_props(int dev, ncclNetProperties_v11_t *p)
{
	if (dev != 0)
		return ncclInvalidArgument;
	static char name[] = "mrc0";
	memset(p, 0, sizeof(*p));
	p->name = name;
	p->pciPath = NULL;              /* a daemon, not a PCI function */
	p->guid = 0x6d72630000000000ull | G.info.host;
	p->ptrSupport = NCCL_PTR_HOST;  /* CUDA pointers: refused, see regMr */
	p->regIsGlobal = 1;             /* mhandles are not tied to a comm */
	p->forceFlush = 0;
	/* The planes' sum: mrcd does not tell clients its NICs' rates, so
	 * the operator states them (docs/nccl.md). */
	p->speed = env_int("MRC_NCCL_PLANES", 2) * env_int("MRC_NCCL_PLANE_MBPS", 100000);
	p->port = 1;
	p->latency = (float)env_int("MRC_NCCL_LATENCY_US", 0);
	uint64_t by_mem = G.info.max_mem / region_len();
	uint64_t by_qp = G.info.max_qps > 1 ? G.info.max_qps - 1 : 1;   /* one spare */
	p->maxComms = (int)(by_mem < by_qp ? by_mem : by_qp);
	p->maxRecvs = MRCN_MAX_RECVS;
	p->netDeviceType = NCCL_NET_DEVICE_HOST;
	p->netDeviceVersion = 0;
	p->vProps.ndevs = 1;
	p->vProps.devs[0] = 0;
	p->maxP2pBytes = max_msg;
	p->maxCollBytes = max_msg;
	p->maxMultiRequestSize = 1;
	return ncclSuccess;
}

/* ---- connection setup -------------------------------------------------- */
static ncclResult_t mrc_nccl_listen(void *ctx, int dev, void *handle, void **listenComm)
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
static ncclResult_t mrc_nccl_connect(void *ctx, int dev, void *handle, void **sendComm,
				     ncclNetDeviceHandle_t **sendDevComm)
{
	(void)ctx;
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

static ncclResult_t mrc_nccl_accept(void *listenComm, void **recvComm,
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

static ncclResult_t mrc_nccl_close_listen(void *listenComm)
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

/* Operations still in flight are dropped with the QP: the owning helper
 * thread destroys it (mrcd discards its queued work), then the region. */
static ncclResult_t mrc_nccl_close_send(void *sendComm)
{
	retire(sendComm, &G.dead_c);
	return ncclSuccess;
}

static ncclResult_t mrc_nccl_close_recv(void *recvComm)
{
	retire(recvComm, &G.dead_a);
	return ncclSuccess;
}

/* ---- memory ------------------------------------------------------------ */
struct mhandle {
	void *data;
	size_t size;
	int type;
};

static ncclResult_t reg(void *data, size_t size, int type, void **mhandle)
{
	if (type != NCCL_PTR_HOST) {
		/* ptrSupport says NCCL_PTR_HOST: NCCL stages GPU data through
		 * host buffers.  CUDA memory needs gpu/ staging, which this
		 * plugin does not use, so it is refused rather than read as
		 * host memory. */
		WARN("regMr: pointer type %d refused: only host memory (NCCL_PTR_HOST) is supported",
		     type);
		return ncclInternalError;
	}
	struct mhandle *m = malloc(sizeof(*m));
	if (!m)
		return ncclSystemError;
	*m = (struct mhandle){ data, size, type };
	*mhandle = m;
	return ncclSuccess;
}

static ncclResult_t mrc_nccl_regmr(void *comm, void *data, size_t size, int type, void **mhandle)
{
	(void)comm;
	return reg(data, size, type, mhandle);
}

static ncclResult_t mrc_nccl_regmr_dmabuf(void *comm, void *data, size_t size, int type,
					  uint64_t offset, int fd, void **mhandle)
{
	(void)comm;
	(void)offset;
	if (fd >= 0 && type == NCCL_PTR_HOST) {
		WARN("regMrDmaBuf: dma-buf memory refused: only host memory is supported");
		return ncclInternalError;
	}
	return reg(data, size, type, mhandle);
}

static ncclResult_t mrc_nccl_deregmr(void *comm, void *mhandle)
{
	(void)comm;
	free(mhandle);
	return ncclSuccess;
}

/* ---- data path --------------------------------------------------------- */
static struct req *req_get(struct comm *c)
{
	for (int i = 0; i < MRCN_MAX_REQS; i++)
		if (!c->reqs[i].used) {
			struct req *r = &c->reqs[i];
			memset(r, 0, sizeof(*r));
			r->used = 1;
			r->c = c;
			return r;
		}
	return NULL;
}

static void on_cqe(struct comm *c, const struct mrc_completion *e)
{
	if (e->status) {
		if (!c->err)
			c->err = e->status;
		WARN("%s completion failed: %s", mrc_cqe_op_name(e->op), mrc_strerror(e->status));
		if (e->op == MRC_CQE_WRITE_IMM && e->wr_id < MRCN_MAX_REQS)
			c->reqs[e->wr_id].err = e->status;
		return;
	}
	switch (e->op) {
	case MRC_CQE_WRITE_IMM: {       /* a send finished */
		struct req *r = &c->reqs[e->wr_id % MRCN_MAX_REQS];
		if (r->sub[0].alloc >= 0)
			mrcn_arena_free(&c->arena, r->sub[0].alloc);
		r->sub[0].alloc = -1;
		r->ndone = 1;
		break;
	}
	case MRC_CQE_RECV: {            /* a CTS arrived */
		int slot = (int)(e->wr_id & 0xffff);
		struct mrcn_cts in;
		if (slot >= MRCN_NCTS || mrcn_cts_parse(CTS_IN(c, slot), e->byte_len, &in) ||
		    c->ncts == MRCN_NCTS) {
			if (!c->err)
				c->err = -EPROTO;
			WARN("malformed clear-to-send from host %u", c->host);
			break;
		}
		c->cts[c->ncts++] = in;
		int r = post_cts_recv(c, slot);
		if (r && !c->err)
			c->err = r;
		break;
	}
	case MRC_CQE_RECV_WRITE_IMM: {  /* data landed */
		uint32_t id = e->imm;
		if (id >= MRCN_NCTS || !c->ids[id].r) {
			if (!c->err)
				c->err = -EPROTO;
			WARN("data for unknown id %u", id);
			break;
		}
		struct req *r = c->ids[id].r;
		int s = c->ids[id].sub;
		c->ids[id].r = NULL;
		c->free_ids[c->nfree_ids++] = (int)id;
		if (e->byte_len > r->sub[s].size) {
			r->err = -EMSGSIZE;
		} else if (e->byte_len) {
			memcpy(r->sub[s].data, c->base + mrcn_arena_off(&c->arena, r->sub[s].alloc),
			       e->byte_len);
		}
		r->sub[s].got = e->byte_len;
		if (r->sub[s].alloc >= 0)
			mrcn_arena_free(&c->arena, r->sub[s].alloc);
		r->sub[s].alloc = -1;
		r->ndone++;
		break;
	}
	default:                        /* our CTS SENDs */
		break;
	}
}

static int progress(struct comm *c)
{
	struct mrc_completion e[16];
	int n;
	do {
		n = mrc_poll_cq(c->qp, e, 16);
		if (n < 0) {
			if (!c->err)
				c->err = n;
			return n;
		}
		for (int i = 0; i < n; i++)
			on_cqe(c, &e[i]);
	} while (n == 16);
	return c->err;
}

static ncclResult_t comm_failed(struct comm *c, const char *what)
{
	WARN("%s: the connection to host %u failed: %s", what, c->host, mrc_strerror(c->err));
	return ncclRemoteError;
}

static ncclResult_t mrc_nccl_isend(void *sendComm, void *data, size_t size, int tag,
				   void *mhandle, void *phandle, void **request)
{
	(void)phandle;
	struct comm *c = sendComm;
	struct mhandle *m = mhandle;
	*request = NULL;
	if (m && m->type != NCCL_PTR_HOST)
		return ncclInternalError;
	if (size > max_msg) {
		WARN("isend: %zu bytes above maxP2pBytes %llu", size, (unsigned long long)max_msg);
		return ncclInvalidArgument;
	}
	if (progress(c))
		return comm_failed(c, "isend");
	int k = 0;
	while (k < c->ncts && c->cts[k].tag != tag)
		k++;
	if (k == c->ncts)
		return ncclSuccess;     /* no receive posted for it yet */
	struct mrcn_cts cts = c->cts[k];
	if (size > cts.size) {
		WARN("isend: %zu bytes into a receive of %llu (tag %d): truncated", size,
		     (unsigned long long)cts.size, tag);
		return ncclInvalidUsage;
	}
	struct req *r = req_get(c);
	if (!r)
		return ncclSuccess;
	int a = -1;
	if (size && (a = mrcn_arena_alloc(&c->arena, size)) < 0) {
		r->used = 0;
		return ncclSuccess;     /* bounce full until sends complete */
	}
	uint64_t off = a >= 0 ? mrcn_arena_off(&c->arena, a) : 0;
	if (size)
		memcpy(c->base + off, data, size);
	int e = mrc_post_write_imm(c->qp, (uint64_t)(r - c->reqs), c->lkey, off, size, c->rkey,
				   cts.off, cts.id);
	if (e) {
		if (a >= 0)
			mrcn_arena_free(&c->arena, a);
		r->used = 0;
		if (e == -ENOSPC)
			return ncclSuccess;
		c->err = e;
		return comm_failed(c, "isend");
	}
	memmove(&c->cts[k], &c->cts[k + 1], (size_t)(c->ncts - k - 1) * sizeof(c->cts[0]));
	c->ncts--;
	r->n = 1;
	r->sub[0].size = size;
	r->sub[0].alloc = a;
	*request = r;
	return ncclSuccess;
}

static ncclResult_t mrc_nccl_irecv(void *recvComm, int n, void **data, size_t *sizes, int *tags,
				   void **mhandles, void **phandles, void **request)
{
	(void)phandles;
	struct comm *c = recvComm;
	*request = NULL;
	if (n < 1 || n > MRCN_MAX_RECVS) {
		WARN("irecv: %d grouped receives (1..%d)", n, MRCN_MAX_RECVS);
		return ncclInvalidArgument;
	}
	for (int i = 0; i < n; i++) {
		struct mhandle *m = mhandles ? mhandles[i] : NULL;
		if (m && m->type != NCCL_PTR_HOST)
			return ncclInternalError;
		if (sizes[i] > max_msg) {
			WARN("irecv: %zu bytes above maxP2pBytes", sizes[i]);
			return ncclInvalidArgument;
		}
	}
	if (progress(c))
		return comm_failed(c, "irecv");
	if (c->nfree_ids < n)
		return ncclSuccess;
	struct req *r = req_get(c);
	if (!r)
		return ncclSuccess;
	r->n = n;
	for (int i = 0; i < n; i++) {
		r->sub[i].alloc = -1;
		if (sizes[i] && (r->sub[i].alloc = mrcn_arena_alloc(&c->arena, sizes[i])) < 0) {
			for (int j = 0; j <= i; j++)
				if (r->sub[j].alloc >= 0)
					mrcn_arena_free(&c->arena, r->sub[j].alloc);
			r->used = 0;
			return ncclSuccess;   /* bounce full until data is consumed */
		}
	}
	for (int i = 0; i < n; i++) {
		int id = c->free_ids[--c->nfree_ids];
		r->sub[i].id = id;
		r->sub[i].data = data[i];
		r->sub[i].size = sizes[i];
		c->ids[id].r = r;
		c->ids[id].sub = i;
		struct mrcn_cts *out = CTS_IN(c, id);
		*out = (struct mrcn_cts){ .magic = MRCN_CTS_MAGIC, .id = (uint32_t)id, .tag = tags[i],
			.size = sizes[i],
			.off = r->sub[i].alloc >= 0 ? mrcn_arena_off(&c->arena, r->sub[i].alloc) : 0 };
		/* The SQ has room: at most MRCN_NCTS CTS are outstanding. */
		int e = mrc_post_send(c->qp, MRCN_WR_CTS | (uint64_t)id, c->lkey,
				      arena_bytes + (uint64_t)id * sizeof(*out), sizeof(*out));
		if (e) {
			c->err = e;
			return comm_failed(c, "irecv");
		}
	}
	*request = r;
	return ncclSuccess;
}

/* Host memory is written by the CPU before test reports it: nothing to
 * flush (NULL request: done at once, as NCCL expects). */
static ncclResult_t mrc_nccl_iflush(void *recvComm, int n, void **data, int *sizes,
				    void **mhandles, void **request)
{
	(void)recvComm;
	(void)n;
	(void)data;
	(void)sizes;
	(void)mhandles;
	*request = NULL;
	return ncclSuccess;
}

static ncclResult_t mrc_nccl_test(void *request, int *done, int *sizes)
{
	struct req *r = request;
	struct comm *c = r->c;
	*done = 0;
	if (progress(c) && r->ndone < r->n)
		return comm_failed(c, "test");
	if (r->err) {
		WARN("request failed: %s", mrc_strerror(r->err));
		r->used = 0;
		return r->err == -EMSGSIZE ? ncclInvalidUsage : ncclRemoteError;
	}
	if (r->ndone < r->n)
		return ncclSuccess;
	*done = 1;
	if (sizes)
		for (int i = 0; i < r->n; i++)
			sizes[i] = (int)(c->kind == K_SEND ? r->sub[i].size : r->sub[i].got);
	r->used = 0;
	return ncclSuccess;
}

static ncclResult_t mrc_nccl_make_vdevice(int *d, ncclNetVDeviceProps_t *props)
{
	/* One device: a virtual NIC can only be that device itself. */
	if (!props || props->ndevs != 1 || props->devs[0] != 0)
		return ncclInvalidUsage;
	*d = 0;
	return ncclSuccess;
}

static ncclResult_t mrc_nccl_set_attr(void *ctx, ncclNetAttr_v11_t *attr)
{
	(void)ctx;
	/* Hints about peers and flows: mrc sprays every QP over all paths,
	 * so they change nothing; kept for diagnostics. */
	if (attr)
		G.attr = *attr;
	return ncclSuccess;
}

/* ---- exported tables --------------------------------------------------- */
#define DATA_ENTRIES                                                              \
	.accept = mrc_nccl_accept, .regMr = mrc_nccl_regmr,                       \
	.regMrDmaBuf = mrc_nccl_regmr_dmabuf, .deregMr = mrc_nccl_deregmr,        \
	.iflush = mrc_nccl_iflush, .test = mrc_nccl_test,                         \
	.closeSend = mrc_nccl_close_send, .closeRecv = mrc_nccl_close_recv,       \
	.closeListen = mrc_nccl_close_listen, .getDeviceMr = NULL,                \
	.irecvConsumed = NULL, .makeVDevice = mrc_nccl_make_vdevice

EXPORT const ncclNet_v11_t ncclNetPlugin_v11 = {
	.name = "mrc", .init = mrc_nccl_init, .devices = mrc_nccl_devices,
	.getProperties = mrc_nccl_props, .listen = mrc_nccl_listen,
	.connect = mrc_nccl_connect, .isend = mrc_nccl_isend, .irecv = mrc_nccl_irecv,
	DATA_ENTRIES, .finalize = mrc_nccl_finalize, .setNetAttr = mrc_nccl_set_attr,
};

/* v10 and v9 (and v8 below): NCCL 2.19-2.27.  No finalize there: the state lives until
 * the process exits. */
static ncclResult_t v10_init(ncclDebugLogger_t log, ncclProfilerCallback_t prof)
{
	return mrc_nccl_init(NULL, 0, NULL, log, prof);
}
static ncclResult_t v9_init(ncclDebugLogger_t log)
{
	return mrc_nccl_init(NULL, 0, NULL, log, NULL);
}
static ncclResult_t v9_props(int dev, ncclNetProperties_v9_t *p)
{
	ncclNetProperties_v11_t p11;
	ncclResult_t r = mrc_nccl_props(dev, &p11);
	if (r == ncclSuccess)
		memcpy(p, &p11, sizeof(*p));   /* v9/v10 are v11's prefix */
	return r;
}
static ncclResult_t v9_listen(int dev, void *handle, void **lc)
{
	return mrc_nccl_listen(&G, dev, handle, lc);
}
static ncclResult_t v10_connect(int dev, ncclNetCommConfig_t *cfg, void *handle, void **sc,
				ncclNetDeviceHandle_t **dc)
{
	(void)cfg;
	return mrc_nccl_connect(&G, dev, handle, sc, dc);
}
static ncclResult_t v9_connect(int dev, void *handle, void **sc, ncclNetDeviceHandle_t **dc)
{
	return mrc_nccl_connect(&G, dev, handle, sc, dc);
}
static ncclResult_t v9_isend(void *sc, void *data, size_t size, int tag, void *mh, void **req)
{
	return mrc_nccl_isend(sc, data, size, tag, mh, NULL, req);
}
static ncclResult_t v9_irecv(void *rc, int n, void **data, size_t *sizes, int *tags, void **mh,
			     void **req)
{
	return mrc_nccl_irecv(rc, n, data, sizes, tags, mh, NULL, req);
}

/* v8: int sizes, and properties without the size limits, which NCCL of
 * that age does not know: it must keep its messages within max_msg
 * (its defaults do: 512 KiB steps), or isend refuses them. */
static ncclResult_t v8_props(int dev, ncclNetProperties_v8_t *p)
{
	ncclNetProperties_v11_t q;
	ncclResult_t r = mrc_nccl_props(dev, &q);
	if (r != ncclSuccess)
		return r;
	*p = (ncclNetProperties_v8_t){ .name = q.name, .pciPath = q.pciPath, .guid = q.guid,
		.ptrSupport = q.ptrSupport, .regIsGlobal = q.regIsGlobal, .speed = q.speed,
		.port = q.port, .latency = q.latency, .maxComms = q.maxComms,
		.maxRecvs = q.maxRecvs, .netDeviceType = q.netDeviceType,
		.netDeviceVersion = q.netDeviceVersion };
	return ncclSuccess;
}
static ncclResult_t v8_isend(void *sc, void *data, int size, int tag, void *mh, void **req)
{
	*req = NULL;
	if (size < 0)
		return ncclInvalidArgument;
	return mrc_nccl_isend(sc, data, (size_t)size, tag, mh, NULL, req);
}
static ncclResult_t v8_irecv(void *rc, int n, void **data, int *sizes, int *tags, void **mh,
			     void **req)
{
	size_t sz[MRCN_MAX_RECVS];
	*req = NULL;
	if (n < 1 || n > MRCN_MAX_RECVS)
		return ncclInvalidArgument;
	for (int i = 0; i < n; i++) {
		if (sizes[i] < 0)
			return ncclInvalidArgument;
		sz[i] = (size_t)sizes[i];
	}
	return mrc_nccl_irecv(rc, n, data, sz, tags, mh, NULL, req);
}

EXPORT const ncclNet_v8_t ncclNetPlugin_v8 = {
	.name = "mrc", .init = v9_init, .devices = mrc_nccl_devices, .getProperties = v8_props,
	.listen = v9_listen, .connect = v9_connect, .accept = mrc_nccl_accept,
	.regMr = mrc_nccl_regmr, .regMrDmaBuf = mrc_nccl_regmr_dmabuf, .deregMr = mrc_nccl_deregmr,
	.isend = v8_isend, .irecv = v8_irecv, .iflush = mrc_nccl_iflush, .test = mrc_nccl_test,
	.closeSend = mrc_nccl_close_send, .closeRecv = mrc_nccl_close_recv,
	.closeListen = mrc_nccl_close_listen, .getDeviceMr = NULL, .irecvConsumed = NULL,
};

EXPORT const ncclNet_v10_t ncclNetPlugin_v10 = {
	.name = "mrc", .init = v10_init, .devices = mrc_nccl_devices, .getProperties = v9_props,
	.listen = v9_listen, .connect = v10_connect, .isend = mrc_nccl_isend,
	.irecv = mrc_nccl_irecv, DATA_ENTRIES,
};

EXPORT const ncclNet_v9_t ncclNetPlugin_v9 = {
	.name = "mrc", .init = v9_init, .devices = mrc_nccl_devices, .getProperties = v9_props,
	.listen = v9_listen, .connect = v9_connect, .isend = v9_isend, .irecv = v9_irecv,
	DATA_ENTRIES,
};
