/* mrcd: clients of the control socket: requests, limits, the connection
 * manager on their behalf, and cleanup when they go away (clients.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/clients/clients.h"
#include "daemon/clients/clients_int.h"
#include "daemon/clients/clisock.h"
#include "daemon/clients/sidown.h"
#include "datapath/datapath.h"
#include "mrc/mrc.h"

#define MSGS_PER_WAKE 32
#define POLL_BUDGET 64
#define RETRY_S 0.001
#define FIRST_CLIENT_ID 1000u  /* engine pd numbers of clients */

static struct {
	struct mrcd *d;
	struct mrcd_clisock *sock;
	struct mrcd_client *list;
	uint32_t n, next_id;
	uint32_t max_clients, max_qps, max_ring, max_mrs;
	uint64_t max_mem;
	/* per uid */
	struct mrcd_uidq *uids;
	uint32_t uid_clients, uid_qps, uid_mrs;
	uint64_t uid_mem;
	uint64_t uid_refused;      /* all refusals by a per-uid limit */
	uint32_t uid_pending, hello_ms;
	uint64_t refused;          /* connections refused (answered and closed) */
	uint64_t hello_timeouts;   /* connections closed for want of a HELLO */
	uint64_t park_ns;
	ev_idle pop_idle;          /* maps registered regions in (populate) */
} S;

/* ---- per-uid totals --------------------------------------------------- */

static struct mrcd_uidq *uidq_get(uid_t uid)
{
	for (struct mrcd_uidq *q = S.uids; q; q = q->next)
		if (q->uid == uid)
			return q;
	struct mrcd_uidq *q = calloc(1, sizeof(*q));
	if (!q)
		return NULL;
	q->uid = uid;
	q->next = S.uids;
	S.uids = q;
	return q;
}

static void uidq_put(struct mrcd_uidq *q)
{
	if (q->clients)
		return;
	for (struct mrcd_uidq **p = &S.uids; *p; p = &(*p)->next)
		if (*p == q) {
			*p = q->next;
			break;
		}
	free(q);
}

/* Counts a refusal by a per-uid limit; the caller answers with err. */
static int uid_refuse(struct mrcd_uidq *q, int err)
{
	q->refused++;
	S.uid_refused++;
	return err;
}

static void client_free(struct mrcd_client *c);

/* Frees a client that a reply failed on, once the event is handled. */
void mrcd__client_settle(struct mrcd_client *c)
{
	if (c->refuse == 1)
		client_free(c);
}

/* ---- replies ---------------------------------------------------------- */

int mrcd_client_reply(struct mrcd_client *c, uint16_t type, uint32_t req_id, int status,
		      const void *body, size_t len, const char *reason, const int *fds,
		      unsigned nfd)
{
	uint8_t buf[MRC_CLI_MSG_MAX];
	if (c->refuse == 1)
		return -EPIPE;     /* already dropped */
	int n = mrc__cli_enc_rep(buf, sizeof(buf), type, req_id, status,
				 status ? NULL : body, status ? 0 : len, reason);
	if (n < 0) {
		mrcd_log(MRCD_LOG_ERR, "client %u: cannot encode %s reply: %s", c->id,
			 mrc__cli_type_name(type), strerror(-n));
		return n;
	}
	int r = mrcd_cli_send(c->fd, buf, (size_t)n, fds, status ? 0 : nfd);
	if (r) {
		mrcd_log(MRCD_LOG_NOTICE, "client %u (%s, pid %d): reply failed (%s): dropping it",
			 c->id, c->name, (int)c->pid, strerror(-r));
		c->refuse = 1;     /* freed at the end of the current event */
		return -EPIPE;
	}
	return 0;
}

/* ---- lookups ---------------------------------------------------------- */

const struct mrc__mr_view *mrcd_client_mr(void *client, uint32_t key)
{
	struct mrcd_client *c = client;
	if (!key)
		return NULL;
	if (c->mrs[c->last_mr].key == key)
		return &c->mrs[c->last_mr].view;
	for (uint32_t i = 0; i < c->max_mrs; i++)
		if (c->mrs[i].key == key) {
			c->last_mr = i;
			return &c->mrs[i].view;
		}
	return NULL;
}

static struct mrcd_cmr *find_mr(struct mrcd_client *c, uint32_t key)
{
	const struct mrc__mr_view *v = mrcd_client_mr(c, key);
	return v ? &c->mrs[c->last_mr] : NULL;
}

/* ---- polling ---------------------------------------------------------- */

static int client_poll(void *ctx)
{
	struct mrcd_client *c = ctx;
	int n = 0;
	/* One load per round while nothing was rung; a set summary wakes
	 * the QPs whose byte is set (the bell's read may come later). */
	if (mrcd__notify_scan(c, mrcd_now()))
		n++;
	for (struct mrcd_cqp *q = c->act; q; q = q->act_next)
		n += mrcd_cqp_poll(q, POLL_BUDGET);
	return n;
}

static int client_arm(void *ctx)
{
	struct mrcd_client *c = ctx;
	int work = 0;
	uint64_t now = mrcd_now();
	for (struct mrcd_cqp *q = c->act, *nx; q; q = nx) {
		nx = q->act_next;
		if (mrcd_cqp_arm(q, now) > 0)
			work++;
		else
			mrcd_cqp_deactivate(q);
	}
	mrcd__tick_parked();
	return work;
}

static void on_retry(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct mrcd_client *c = w->data;
	(void)revents;
	uint32_t left = 0;
	for (struct mrcd_cqp *q = c->qps; q; q = q->next) {
		uint32_t before = q->bl_n;
		uint32_t now_left = mrcd_cqp_flush(q);
		if (now_left != before)
			mrcd_cqp_activate(q);   /* CQ room: its SQ may be polled again */
		left += now_left;
	}
	if (!left)
		ev_timer_stop(loop, w);
	mrcd_kick(c->d);
}

/* ---- memory ----------------------------------------------------------- */

/* A client's region rights (libmrc's MRC_MR_*) are the engine's access
 * bits, so they pass to the engine unchanged, as op codes do. */
_Static_assert(MRC_MR_LOCAL_READ == MRC_ACCESS_LOCAL_READ &&
	       MRC_MR_REMOTE_WRITE == MRC_ACCESS_REMOTE_WRITE &&
	       MRC_MR_REMOTE_ATOMIC == MRC_ACCESS_REMOTE_ATOMIC &&
	       MRC_MR_LOCAL_WRITE == MRC_ACCESS_LOCAL_WRITE, "region rights are the engine's");

/* Registration maps a region's pages into the daemon, as ibv_reg_mr pins
 * them, so that the data path does not take a page fault on its first
 * touch of each page: ~1 us on bare metal, 17 us on the VMs of the bench
 * (bench/results/daemon-thp.md), where faults were most of the
 * daemons' CPU.  Done in chunks while the loop has nothing else to do
 * (lowest priority idle watcher), so a large region never stalls other
 * clients, and only over a range of the file with no holes: mapping in a
 * hole would allocate memory the client never committed (mrc_alloc_mr
 * allocates its file; a client's own sparse file is left to fault). */
#define POP_CHUNK ((size_t)64 << 20)

static void on_populate(struct ev_loop *loop, ev_idle *w, int revents)
{
	(void)revents;
	for (struct mrcd_client *c = S.list; c; c = c->next) {
		for (uint32_t i = 0; c->npop && i < c->max_mrs; i++) {
			struct mrcd_cmr *mr = &c->mrs[i];
			if (!mr->key || !mr->pop)
				continue;
			size_t n = mr->map_len - mr->pop_off;
			if (n > POP_CHUNK)
				n = POP_CHUNK;
			/* A failure (a kernel before 5.14: EINVAL) only costs the
			 * faults this would have saved. */
			if (madvise((char *)mr->map + mr->pop_off, n, MADV_POPULATE_WRITE) < 0)
				n = mr->map_len - mr->pop_off;
			mr->pop_off += n;
			if (mr->pop_off == mr->map_len) {
				mr->pop = 0;
				c->npop--;
			}
			return;
		}
	}
	ev_idle_stop(loop, w);
}

static void populate_later(struct mrcd_client *c, struct mrcd_cmr *mr, int fd, off_t at)
{
	off_t hole = lseek(fd, at, SEEK_HOLE);
	if (hole < 0 || (uint64_t)hole < (uint64_t)at + mr->map_len)
		return;
	/* In huge pages if the client's are (lib/mr.c). */
	(void)madvise(mr->map, mr->map_len, MADV_HUGEPAGE);
	mr->pop = 1;
	mr->pop_off = 0;
	c->npop++;
	if (!ev_is_active(&S.pop_idle))
		ev_idle_start(mrcd_loop(S.d), &S.pop_idle);
}

static int do_reg_mr(struct mrcd_client *c, const struct mrc_cli_msg *m, int fd)
{
	struct mrc_cli_reg_mr q;
	memcpy(&q, m->body, sizeof(q));
	if (c->nmr == c->max_mrs)
		return fail(c, m, -EDQUOT, "region limit reached (%u per client; config client_max_mrs)",
			    c->max_mrs);
	if (q.len > c->max_mem - c->mem)
		return fail(c, m, -EDQUOT, "memory limit: %llu of %llu MiB registered, %llu more asked "
			    "(config client_max_mem_mb)", (unsigned long long)(c->mem >> 20),
			    (unsigned long long)(c->max_mem >> 20), (unsigned long long)q.len);
	if (c->uq->mrs >= S.uid_mrs)
		return fail(c, m, uid_refuse(c->uq, -EDQUOT),
			    "region limit of uid %u reached (%u over all its clients; config uid_max_mrs)",
			    (unsigned)c->uid, S.uid_mrs);
	if (q.len > S.uid_mem - c->uq->mem)
		return fail(c, m, uid_refuse(c->uq, -EDQUOT),
			    "memory limit of uid %u: %llu of %llu MiB registered by all its clients, %llu more asked "
			    "(config uid_max_mem_mb)", (unsigned)c->uid,
			    (unsigned long long)(c->uq->mem >> 20), (unsigned long long)(S.uid_mem >> 20),
			    (unsigned long long)q.len);
	/* A shrinkable file could be truncated under our mapping, and the
	 * next access would kill the daemon with SIGBUS. */
	int seals = fcntl(fd, F_GET_SEALS);
	if (seals < 0 || !(seals & F_SEAL_SHRINK))
		return fail(c, m, -EINVAL, "the region must be a memfd sealed with F_SEAL_SHRINK");
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return fail(c, m, -EINVAL, "not a memory file");
	if ((uint64_t)st.st_size < q.fd_off + q.len)
		return fail(c, m, -ERANGE, "offset + length beyond the file's %lld bytes",
			    (long long)st.st_size);
	/* Mapped in the file's own page size: a hugetlbfs memfd (st_blksize
	 * its huge page size) maps only at huge-page offsets and lengths. */
	uint64_t pg = (uint64_t)sysconf(_SC_PAGESIZE);
	if ((uint64_t)st.st_blksize > pg && !((uint64_t)st.st_blksize & ((uint64_t)st.st_blksize - 1)))
		pg = (uint64_t)st.st_blksize;
	uint64_t a = q.fd_off & ~(pg - 1);
	uint64_t end = (q.fd_off + q.len + pg - 1) & ~(pg - 1);
	if (end > (uint64_t)st.st_size)
		end = q.fd_off + q.len;     /* a partial last page of a tmpfs file */
	size_t map_len = (size_t)(end - a);
	/* Writable only when the rights let the engine write into it: a
	 * client may register a file it holds read-only as a source, and no
	 * more (the file's open mode is the permission that mmap checks). */
	int wr = !!(q.access & (MRC_MR_REMOTE_WRITE | MRC_MR_REMOTE_ATOMIC | MRC_MR_LOCAL_WRITE));
	void *map = mmap(NULL, map_len, PROT_READ | (wr ? PROT_WRITE : 0), MAP_SHARED, fd, (off_t)a);
	if (map == MAP_FAILED)
		return fail(c, m, -errno, "mmap of the region failed%s", errno == EACCES ?
			    ": the descriptor's open mode does not allow the rights asked" : "");
	uint32_t key;
	int r = mrce_mr_reg(mrcd_engine(c->d), c->id, (char *)map + (q.fd_off - a), q.len,
			   q.access & MRC_MR_ALL, &key);
	if (r) {
		munmap(map, map_len);
		return fail(c, m, r, "the engine refused the region (daemon-wide limit?)");
	}
	/* Where the datapath can send from the region in place (verbs:
	 * ibv_reg_mr), it does; elsewhere, or when it cannot (out of regions
	 * or NIC memory), payloads are copied as always, so a failure only
	 * costs speed. */
	int dr = mrc_dp_mem_reg(mrcd_datapath(c->d), (char *)map + (q.fd_off - a), q.len, -1, 0);
	if (dr < 0 && dr != -EOPNOTSUPP)
		mrcd_log(MRCD_LOG_INFO, "client %u region %u: not registered with the datapath (%s): "
			 "its payloads are copied", c->id, key, strerror(-dr));
	uint32_t i = 0;
	while (c->mrs[i].key)
		i++;
	c->mrs[i] = (struct mrcd_cmr){ .view = { .len = q.len, .access = q.access }, .key = key,
				       .map = map, .map_len = map_len, .dp_reg = dr >= 0 ? dr + 1 : 0 };
	if (wr)    /* a read-only mapping cannot take MADV_POPULATE_WRITE */
		populate_later(c, &c->mrs[i], fd, (off_t)a);
	c->nmr++;
	c->mem += q.len;
	c->uq->mrs++;
	c->uq->mem += q.len;
	struct mrc_cli_reg_mr_rep rep = { .key = key };
	return ok(c, m, &rep, sizeof(rep));
}

static int mr_drop(struct mrcd_client *c, struct mrcd_cmr *mr)
{
	int r = mrce_mr_dereg(mrcd_engine(c->d), mr->key);
	if (r)
		return r;
	/* Before the unmap: it waits for the sends still reading it. */
	mrc_dp_mem_unreg(mrcd_datapath(c->d), mr->dp_reg - 1);
	munmap(mr->map, mr->map_len);
	if (mr->pop)
		c->npop--;
	c->mem -= mr->view.len;
	c->nmr--;
	c->uq->mem -= mr->view.len;
	c->uq->mrs--;
	memset(mr, 0, sizeof(*mr));
	return 0;
}

static int do_dereg_mr(struct mrcd_client *c, const struct mrc_cli_msg *m)
{
	struct mrc_cli_key q;
	memcpy(&q, m->body, sizeof(q));
	struct mrcd_cmr *mr = find_mr(c, q.key);
	if (!mr)
		return fail(c, m, -ENOKEY, "no region with key %u", q.key);
	/* Work posted before this request may still sit in the rings (the
	 * socket and the rings are not ordered): read it first, so that a
	 * region that posted work references is -EBUSY as documented, not
	 * deregistered under it (which was safe, the work then failing with
	 * a bad key, but not what the client asked for). */
	int picked = 0;
	for (struct mrcd_cqp *qp = c->qps; qp; qp = qp->next) {
		int n;
		while ((n = mrcd_cqp_poll(qp, POLL_BUDGET)) > 0) {
			picked += n;
			mrcd_cqp_activate(qp);
			if (n < POLL_BUDGET)
				break;
		}
	}
	if (picked)
		mrcd_kick(c->d);
	int r = mr_drop(c, mr);
	if (r)
		return fail(c, m, r, "region %u is still used by queued work", q.key);
	return ok(c, m, NULL, 0);
}

/* ---- QPs -------------------------------------------------------------- */

static int do_create_qp(struct mrcd_client *c, const struct mrc_cli_msg *m)
{
	struct mrc_cli_create_qp q;
	memcpy(&q, m->body, sizeof(q));
	if (c->nqp >= c->max_qps)
		return fail(c, m, -EDQUOT, "QP limit reached (%u per client; config client_max_qps)",
			    c->max_qps);
	if (c->uq->qps >= S.uid_qps)
		return fail(c, m, uid_refuse(c->uq, -EDQUOT),
			    "QP limit of uid %u reached (%u over all its clients; config uid_max_qps)",
			    (unsigned)c->uid, S.uid_qps);
	struct mrcd_cqp *qp;
	struct mrc_cli_create_qp_rep rep;
	int memfd;
	const char *why = "";
	uint32_t slot = mrcd__slot_free(c);
	int r = mrcd_cqp_create(c, &q, slot, &qp, &memfd, &rep, &why);
	if (r)
		return fail(c, m, r, "%s (sq %u, cq %u, limit %u)", why, q.sq_entries,
			    q.cq_entries, c->max_ring);
	mrcd__slot_take(c, qp, slot);
	if (!c->polling) {
		struct mrcd_poller p = { .poll = client_poll, .arm = client_arm, .ctx = c };
		r = mrcd_poller_add(c->d, &p);
		if (r) {
			close(memfd);
			mrcd__slot_put(c, qp);
			mrcd_cqp_destroy(qp);
			return fail(c, m, r, "the daemon cannot poll more clients");
		}
		c->polling = 1;
	}
	qp->next = c->qps;
	c->qps = qp;
	c->nqp++;
	c->uq->qps++;
	/* Only the rings: the doorbells are the client's (HELLO). */
	r = mrcd_client_reply(c, m->hdr.type, m->hdr.req_id, 0, &rep, sizeof(rep), NULL, &memfd, 1);
	close(memfd);
	return r;
}

static void qp_drop(struct mrcd_client *c, struct mrcd_cqp *qp)
{
	for (struct mrcd_cm_op *op = c->ops, *nx; op; op = nx) {
		nx = op->next;
		if (op->qp == qp)
			mrcd__op_finish(op, -ECANCELED, NULL, "the QP was destroyed");
	}
	for (struct mrcd_cqp **p = &c->qps; *p; p = &(*p)->next)
		if (*p == qp) {
			*p = qp->next;
			break;
		}
	c->nqp--;
	c->uq->qps--;
	mrcd__slot_put(c, qp);
	mrcd_cqp_destroy(qp);
}

static int do_destroy_qp(struct mrcd_client *c, const struct mrc_cli_msg *m)
{
	struct mrc_cli_qpn q;
	memcpy(&q, m->body, sizeof(q));
	struct mrcd_cqp *qp = find_qp(c, q.qpn);
	if (!qp)
		return fail(c, m, -ENOENT, "no QP %u of this client", q.qpn);
	qp_drop(c, qp);
	return ok(c, m, NULL, 0);
}

static int do_qp_info(struct mrcd_client *c, const struct mrc_cli_msg *m)
{
	struct mrc_cli_qpn q;
	memcpy(&q, m->body, sizeof(q));
	struct mrcd_cqp *qp = find_qp(c, q.qpn);
	if (!qp)
		return fail(c, m, -ENOENT, "no QP %u of this client", q.qpn);
	struct mrce_qp_info info;
	int r = mrce_qp_info(mrcd_engine(c->d), qp->qpn, &info);
	if (r)
		return fail(c, m, r, "engine QP info");
	struct mrc_cli_qp_info_rep rep = {
		.local = { .host = mrcd_self_host(c->d), .qpn = qp->qpn, .psn = qp->psn },
		.state = info.state, .error = info.error,
	};
	return ok(c, m, &rep, sizeof(rep));
}

static int do_connect_oob(struct mrcd_client *c, const struct mrc_cli_msg *m)
{
	struct mrc_cli_connect_oob q;
	memcpy(&q, m->body, sizeof(q));
	struct mrcd_cqp *qp = find_qp(c, q.qpn);
	if (!qp)
		return fail(c, m, -ENOENT, "no QP %u of this client", q.qpn);
	if (q.remote.host >= mrcd_n_hosts(c->d))
		return fail(c, m, -EHOSTUNREACH, "host %u is not in the fabric (%u hosts)",
			    q.remote.host, mrcd_n_hosts(c->d));
	struct mrcd_qp_addr remote = { .host = q.remote.host, .qpn = q.remote.qpn,
				       .psn = q.remote.psn, .priv = q.remote.priv };
	int r = mrcd_qp_connect_oob(c->d, qp->qpn, qp->psn, &remote);
	if (r)
		return fail(c, m, r, "connect QP %u to host %u QP %u", qp->qpn, remote.host,
			    remote.qpn);
	mrcd_kick(c->d);
	return ok(c, m, NULL, 0);
}

/* ---- requests --------------------------------------------------------- */

static int do_hello(struct mrcd_client *c, const struct mrc_cli_msg *m)
{
	struct mrc_cli_hello q;
	memcpy(&q, m->body, sizeof(q));
	if (q.ver_min > MRC_CLI_VERSION || q.ver_max < MRC_CLI_VERSION)
		return fail(c, m, -EPROTONOSUPPORT, "client speaks versions %u..%u, daemon %u",
			    q.ver_min, q.ver_max, MRC_CLI_VERSION);
	if (c->hello)
		return fail(c, m, -EALREADY, "hello again");
	snprintf(c->name, sizeof(c->name), "%s", q.name);
	int r = mrcd__notify_open(c);
	if (r)
		return fail(c, m, r, "the client's doorbells and notify page");
	c->hello = 1;
	c->uq->pending--;
	ev_timer_stop(mrcd_loop(c->d), &c->hello_tm);
	struct mrc_cli_hello_rep rep = {
		.version = MRC_CLI_VERSION, .client_id = c->id,
		.host = mrcd_self_host(c->d), .n_hosts = mrcd_n_hosts(c->d),
		.max_qps = c->max_qps < S.uid_qps ? c->max_qps : S.uid_qps,
		.max_mrs = c->max_mrs < S.uid_mrs ? c->max_mrs : S.uid_mrs,
		.max_ring_entries = c->max_ring, .notify_len = (uint32_t)c->notify_len,
		.max_mem = c->max_mem < S.uid_mem ? c->max_mem : S.uid_mem,
	};
	mrcd_log(MRCD_LOG_INFO, "client %u: %s (pid %d, uid %u)", c->id, c->name, (int)c->pid,
		 (unsigned)c->uid);
	/* fds: the notify page, the SQ and the CQ doorbells (climsg.h). */
	int fds[3] = { c->notify_fd, c->sq_bell, c->cq_bell };
	return mrcd_client_reply(c, m->hdr.type, m->hdr.req_id, 0, &rep, sizeof(rep), NULL, fds, 3);
}

static void dispatch(struct mrcd_client *c, const struct mrc_cli_msg *m, int *fds, unsigned nfd)
{
	uint16_t type = m->hdr.type;
	if (c->refuse < 0) {
		fail(c, m, c->refuse, "%s", c->refuse_why);
		c->refuse = 1;
		return;
	}
	if (nfd != mrc__cli_req_fds(type)) {
		fail(c, m, -EBADMSG, "%s carries %u file descriptors, expected %u",
		     mrc__cli_type_name(type), nfd, mrc__cli_req_fds(type));
		return;
	}
	if (!c->hello && type != MRC_CLI_HELLO) {
		fail(c, m, -EPROTO, "hello first");
		return;
	}
	switch (type) {
	case MRC_CLI_HELLO: do_hello(c, m); break;
	case MRC_CLI_REG_MR: do_reg_mr(c, m, fds[0]); break;
	case MRC_CLI_DEREG_MR: do_dereg_mr(c, m); break;
	case MRC_CLI_CREATE_QP: do_create_qp(c, m); break;
	case MRC_CLI_DESTROY_QP: do_destroy_qp(c, m); break;
	case MRC_CLI_QP_INFO: do_qp_info(c, m); break;
	case MRC_CLI_CONNECT_OOB: do_connect_oob(c, m); break;
	case MRC_CLI_LISTEN: mrcd__do_listen(c, m); break;
	case MRC_CLI_UNLISTEN: mrcd__do_unlisten(c, m); break;
	case MRC_CLI_ACCEPT: mrcd__do_accept(c, m); break;
	case MRC_CLI_CONNECT: mrcd__do_connect(c, m); break;
	default: fail(c, m, -EOPNOTSUPP, "unknown request type 0x%04x", type); break;
	}
}

/* A message that does not decode: answer with what can be read of its
 * header.  A client whose framing cannot be trusted is dropped. */
static void malformed(struct mrcd_client *c, const void *buf, size_t n, int err, const char *why)
{
	struct mrc_cli_hdr h = { 0 };
	memcpy(&h, buf, n < sizeof(h) ? n : sizeof(h));
	uint16_t type = h.type & (uint16_t)~MRC_CLI_REPLY;
	mrcd_log(MRCD_LOG_INFO, "client %u (%s): malformed message (type 0x%04x): %s", c->id,
		 c->name, h.type, why);
	uint8_t out[MRC_CLI_MSG_MAX];
	int len = mrc__cli_enc_rep(out, sizeof(out), type, h.req_id, err, NULL, 0, why);
	if (len > 0 && mrcd_cli_send(c->fd, out, (size_t)len, NULL, 0))
		c->refuse = 1;
	if (n < sizeof(h) || h.magic != MRC_CLI_MAGIC)
		c->refuse = 1;
}

static void on_client(struct ev_loop *loop, ev_io *w, int revents)
{
	struct mrcd_client *c = w->data;
	(void)loop;
	(void)revents;
	for (int i = 0; i < MSGS_PER_WAKE && c->refuse != 1; i++) {
		uint8_t buf[MRC_CLI_MSG_MAX];
		int fds[MRC_CLI_MAX_FDS];
		unsigned nfd;
		ssize_t n = mrcd_cli_recv(c->fd, buf, sizeof(buf), fds, &nfd);
		if (n == -EAGAIN)
			break;
		if (n == 0 || (n < 0 && n != -EBADMSG)) {
			for (unsigned k = 0; k < nfd; k++)
				close(fds[k]);
			mrcd_log(MRCD_LOG_INFO, "client %u (%s): disconnected", c->id, c->name);
			c->refuse = 1;
			break;
		}
		struct mrc_cli_msg m;
		const char *why = "truncated message or fd list";
		int r = n < 0 ? -EBADMSG : mrc__cli_dec_req(buf, (size_t)n, &m, &why);
		if (r)
			malformed(c, buf, n < 0 ? 0 : (size_t)n, r, why);
		else
			dispatch(c, &m, fds, nfd);
		for (unsigned k = 0; k < nfd; k++)
			close(fds[k]);
	}
	mrcd__client_settle(c);
}

/* A refused connection is answered and closed at once: it must hold
 * neither a descriptor nor a client slot until it speaks.  The answer goes
 * to its first request when that is queued already (libmrc sends HELLO
 * right after connect), else to the HELLO that must come first (request 1;
 * libmrc reads it even when its own send then finds the socket closed). */
static void refuse_conn(int fd, int err, const char *why)
{
	uint8_t buf[MRC_CLI_MSG_MAX];
	int fds[MRC_CLI_MAX_FDS];
	unsigned nfd = 0;
	uint16_t type = MRC_CLI_HELLO;
	uint32_t req_id = 1;
	ssize_t n = mrcd_cli_recv(fd, buf, sizeof(buf), fds, &nfd);
	for (unsigned k = 0; k < nfd; k++)
		close(fds[k]);
	struct mrc_cli_hdr h;
	if (n >= (ssize_t)sizeof(h)) {
		memcpy(&h, buf, sizeof(h));
		if (h.magic == MRC_CLI_MAGIC) {
			type = h.type & (uint16_t)~MRC_CLI_REPLY;
			req_id = h.req_id;
		}
	}
	int len = mrc__cli_enc_rep(buf, sizeof(buf), type, req_id, err, NULL, 0, why);
	if (len > 0)
		(void)mrcd_cli_send(fd, buf, (size_t)len, NULL, 0);
	close(fd);
	S.refused++;
}

static void on_hello_timeout(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct mrcd_client *c = w->data;
	(void)loop;
	(void)revents;
	S.hello_timeouts++;
	mrcd_note(S.d, "client", "client %u (uid %u pid %d) closed: no HELLO within %u ms "
		  "(client_hello_timeout_ms)", c->id, (unsigned)c->uid, (int)c->pid, S.hello_ms);
	c->refuse = 1;     /* no "disconnected" note: it never was a client */
	client_free(c);
}

/* A refusal as a client event, one a second at most: a local process
 * connecting in a loop must not flush the event ring (each one is counted:
 * stats oper clients_refused). */
static void refuse_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void refuse_note(const char *fmt, ...)
{
	static uint64_t last_ns, unnoted;
	uint64_t now = mrcd_now();
	if (last_ns && now - last_ns < 1000000000ull) {
		unnoted++;
		return;
	}
	char text[400];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	if (unnoted)
		mrcd_note(S.d, "client", "%s (%llu more refusals since the last such event)", text,
			  (unsigned long long)unnoted);
	else
		mrcd_note(S.d, "client", "%s", text);
	last_ns = now;
	unnoted = 0;
}

static void on_conn(void *ctx, int fd, int allowed, uid_t uid, pid_t pid)
{
	(void)ctx;
	struct mrcd_uidq *uq = NULL;
	int err = 0;
	const char *why = NULL;
	if (!allowed) {
		err = -EACCES;
		why = "not allowed: the control socket admits root, the daemon's user "
		      "and the configured socket_group";
		refuse_note("client uid %u pid %d refused: not root nor in the group",
			    (unsigned)uid, (int)pid);
	} else if (S.n >= S.max_clients) {
		err = -EUSERS;
		why = "too many clients (config max_clients)";
		refuse_note("client pid %d refused: %u clients already (max_clients)",
			    (int)pid, S.n);
	} else if (!(uq = uidq_get(uid))) {
		err = -ENOMEM;
		why = "out of memory";
	} else if (uq->clients >= S.uid_clients) {
		err = uid_refuse(uq, -EUSERS);
		why = "too many clients of this user (config uid_max_clients)";
		refuse_note("client uid %u pid %d refused: %u clients of this uid already "
			    "(uid_max_clients; %llu per-uid refusals in all)", (unsigned)uid, (int)pid,
			    uq->clients, (unsigned long long)S.uid_refused);
	} else if (uq->pending >= S.uid_pending) {
		/* Connections that have not said HELLO are the cheap way to
		 * hold slots: a few per uid, so one uid's idle connections
		 * never refuse another uid's first client. */
		err = uid_refuse(uq, -EUSERS);
		why = "too many connections of this user that have not said HELLO "
		      "(config uid_max_pending)";
		refuse_note("client uid %u pid %d refused: %u connections of this uid "
			    "without HELLO (uid_max_pending; %llu per-uid refusals in all)",
			    (unsigned)uid, (int)pid, uq->pending, (unsigned long long)S.uid_refused);
	}
	struct mrcd_client *c = NULL;
	if (!err && (!(c = calloc(1, sizeof(*c))) || !(c->mrs = calloc(S.max_mrs, sizeof(*c->mrs))))) {
		free(c);
		err = -ENOMEM;
		why = "out of memory";
	}
	if (err) {
		if (uq)
			uidq_put(uq);
		refuse_conn(fd, err, why);
		return;
	}
	c->d = S.d;
	c->fd = fd;
	c->id = S.next_id++;
	c->uid = uid;
	c->pid = pid;
	c->max_qps = S.max_qps;
	c->max_ring = S.max_ring;
	c->max_mem = S.max_mem;
	c->max_mrs = S.max_mrs;
	c->park_ns = S.park_ns;
	c->notify_fd = c->sq_bell = c->cq_bell = -1;
	snprintf(c->name, sizeof(c->name), "pid %d", (int)pid);
	c->uq = uq;
	uq->clients++;
	uq->pending++;
	mrcd_note(S.d, "client", "client %u connected (uid %u pid %d)", c->id, (unsigned)uid,
		  (int)pid);
	ev_io_init(&c->io, on_client, fd, EV_READ);
	c->io.data = c;
	ev_io_start(mrcd_loop(S.d), &c->io);
	ev_init(&c->retry, on_retry);
	ev_timer_set(&c->retry, RETRY_S, RETRY_S);
	c->retry.data = c;
	ev_timer_init(&c->hello_tm, on_hello_timeout, S.hello_ms / 1000.0, 0);
	c->hello_tm.data = c;
	ev_timer_start(mrcd_loop(S.d), &c->hello_tm);
	c->next = S.list;
	S.list = c;
	S.n++;
	/* libmrc's HELLO is usually queued already: answered now, a burst of
	 * new clients is never counted as connections without HELLO. */
	on_client(mrcd_loop(S.d), &c->io, EV_READ);
}

/* Everything the client had, in dependency order: pending connection
 * work, listeners, QPs (the engine drops their work), then regions (no
 * work references them any more). */
static void client_free(struct mrcd_client *c)
{
	struct mrcd *d = c->d;
	ev_io_stop(mrcd_loop(d), &c->io);
	ev_timer_stop(mrcd_loop(d), &c->retry);
	ev_timer_stop(mrcd_loop(d), &c->hello_tm);
	if (c->uq && !c->hello)
		c->uq->pending--;
	if (!c->refuse) {
		unsigned nqp = 0;
		for (struct mrcd_cqp *q = c->qps; q; q = q->next)
			nqp++;
		mrcd_note(d, "client", "client %u (pid %d) disconnected: %u QP%s freed", c->id,
			  (int)c->pid, nqp, nqp == 1 ? "" : "s");
	}
	c->refuse = 1;
	while (c->ops) {
		struct mrcd_cm_op *op = c->ops;
		mrcd__op_unlink(op);
		free(op);
	}
	while (c->lsns)
		mrcd__lsn_drop(c, c->lsns);
	while (c->qps)
		qp_drop(c, c->qps);
	if (c->polling)
		mrcd_poller_del(d, c);
	mrcd__notify_close(c);
	uint64_t leaked = 0;
	for (uint32_t i = 0; i < c->max_mrs; i++)
		if (c->mrs[i].key && mr_drop(c, &c->mrs[i])) {
			/* Should not happen once the QPs are gone; keep the
			 * mapping rather than let the engine touch freed memory. */
			leaked++;
		}
	if (leaked)
		mrcd_log(MRCD_LOG_ERR, "client %u: %llu regions still busy after its QPs were destroyed",
			 c->id, (unsigned long long)leaked);
	close(c->fd);
	for (struct mrcd_client **p = &S.list; *p; p = &(*p)->next)
		if (*p == c) {
			*p = c->next;
			break;
		}
	S.n--;
	if (c->uq) {
		c->uq->clients--;
		uidq_put(c->uq);
	}
	mrcd_log(MRCD_LOG_DEBUG, "client %u freed", c->id);
	free(c->mrs);
	free(c);
	mrcd_kick(d);
}

int mrcd_clients_start(struct mrcd *d, const struct mrcd_cfg *cfg, char *err, size_t errlen)
{
	memset(&S, 0, sizeof(S));
	S.d = d;
	S.next_id = FIRST_CLIENT_ID;
	S.max_clients = cfg->max_clients;
	S.max_qps = cfg->client_max_qps;
	S.max_ring = cfg->ring_entries;
	S.max_mem = (uint64_t)cfg->client_max_mem_mb << 20;
	S.max_mrs = cfg->client_max_mrs;
	S.uid_clients = cfg->uid_max_clients;
	S.uid_qps = cfg->uid_max_qps;
	S.uid_mrs = cfg->uid_max_mrs;
	S.uid_mem = (uint64_t)cfg->uid_max_mem_mb << 20;
	S.uid_pending = cfg->uid_max_pending;
	S.hello_ms = cfg->client_hello_timeout_ms;
	S.park_ns = (uint64_t)cfg->gpu_park_us * 1000;
	ev_idle_init(&S.pop_idle, on_populate);
	ev_set_priority(&S.pop_idle, EV_MINPRI);
	/* The engine's share of a QP, by the function the docs' figure
	 * comes from (mrce_qp_bytes; tests/test_docs.c), at this config. */
	mrcd_log(MRCD_LOG_INFO, "memory per QP: %zu bytes in the engine (mrce_qp_bytes, window %u) "
		 "+ rings and completion queues by size (bench/bench_qpmem.c)",
		 mrce_qp_bytes(mrcd_engine(d)), cfg->window);
	int rc = mrcd__notify_start(d, cfg, err, errlen);
	if (rc)
		return rc;
	rc = mrcd_sidown_init(cfg->service_reserve, err, errlen);
	if (rc)
		return rc;
	return mrcd_clisock_open(d, cfg->socket, cfg->socket_mode, cfg->socket_group, on_conn,
				 NULL, &S.sock, err, errlen);
}

void mrcd_clients_counters(uint64_t *refused, uint64_t *hello_timeouts, uint64_t *accept_paused)
{
	*refused = S.refused;
	*hello_timeouts = S.hello_timeouts;
	*accept_paused = mrcd_clisock_paused(S.sock);
}

void mrcd_clients_stop(struct mrcd *d)
{
	while (S.list)
		client_free(S.list);
	ev_idle_stop(mrcd_loop(d), &S.pop_idle);
	mrcd_clisock_close(S.sock);
	S.sock = NULL;
	mrcd__notify_stop();
	mrcd_sidown_fini();
}
