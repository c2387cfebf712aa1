/* Connection manager: listen/accept/connect between daemons over the
 * fabric with MRC_OP_CTRL datagrams (REQ, REP, REJ), retried on a timer and
 * sent over a different plane and spine on every try, so a dead path
 * cannot block connection setup.  Also the plane-state beacon that tells
 * peers which of our planes are down.
 * Every message is sealed with the cluster key (ctrl.h); REQ and REP carry
 * each side's nonce, window and MTU, from which both sides derive the
 * connection's tokens and the smaller window and MTU (docs/security.md). */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "daemon/core/core.h"
#include "daemon/core/ctrl.h"
#include "daemon/core/dpep.h"

#define MAX_LISTEN 256
#define MAX_OUT 1024
#define MAX_IN 1024
#define RETRY_NS 50000000ull        /* 50 ms between tries */
#define TRIES 40                    /* 2 s in all, then -ETIMEDOUT */
#define KEEP_NS 10000000000ull      /* answered requests remembered 10 s */
/* A request not accepted this long after it arrived is refused: its
 * requester gives up TRIES * RETRY_NS after its first try, and a request
 * accepted after that connected our QP to one nobody uses (every packet
 * dropped, the QP failing "retries exhausted" on GOOD paths; issue 32).
 * Half the requester's time leaves the REP the other half to arrive. */
#define PENDING_NS (TRIES * RETRY_NS / 2)
#define BEACON_S 1.0

struct listener { uint32_t sid; mrcd_cm_req_fn fn; void *ctx; uint8_t used; };
struct outreq {
	uint8_t used;
	uint64_t id, next;
	uint32_t host, sid, tries;
	struct mrcd_qp_addr local;
	uint8_t nonce[MRC_AUTH_NONCE_BYTES];   /* the same in every retry */
	mrcd_cm_done_fn done;
	void *ctx;
};
enum { IN_PENDING = 1, IN_ACCEPTED, IN_REJECTED };
struct inreq {
	uint8_t state;
	uint16_t gen;
	uint64_t rid, expire;      /* requester's id */
	uint32_t host, sid;
	struct mrcd_qp_addr remote, local;
	int err;
	uint8_t req_nonce[MRC_AUTH_NONCE_BYTES];
	uint8_t rep_nonce[MRC_AUTH_NONCE_BYTES];   /* chosen once: a retried
	                                              REQ gets the same REP */
	uint32_t window, mtu;                      /* the requester's */
};

struct mrcd_cm {
	struct listener ls[MAX_LISTEN];
	struct outreq out[MAX_OUT];
	struct inreq in[MAX_IN];
	uint16_t gen;
	ev_timer tick;
	uint32_t beacon_rr;
};

static uint64_t real_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void send_raw(struct mrcd *d, uint32_t host, uint32_t attempt, const uint8_t *buf,
		     size_t len)
{
	uint32_t id = host < d->nhosts ? d->peer_of_host[host] : UINT32_MAX;
	const struct mrcd_peer *p = id != UINT32_MAX ? &d->peers[id] : NULL;
	/* Rotate planes first (skipping our dead ones), then spines. */
	for (uint32_t k = 0; k < d->nplanes; k++) {
		uint32_t pl = (attempt + k) % d->nplanes;
		if (d->local_down & (1u << pl))
			continue;
		uint32_t spine = d->topo ? attempt / d->nplanes : 0;
		if (!mrcd_send_ctrl(d, host, pl, spine, buf, len, mrcd_ep_side(p, pl, attempt)))
			return;
	}
}

static void send_msg(struct mrcd *d, uint32_t host, uint32_t attempt, struct mrce_ctrl *m)
{
	uint8_t buf[MRCD_CTRL_LEN_MAX];
	size_t len;
	/* Our endpoints ride on all but REJ (dpep.h); none on udp. */
	if (m->type != MRCE_CTRL_REJ && mrcd_ep_fill(d->dp, d->nplanes, m))
		return;
	/* Under the cookie host issued us (none yet: it challenges, and
	 * on_challenge sends again). */
	if (mrcd_ctrl_seal_len(d->auth, &d->ctrl_tx, d->replay, real_ns(), d->self, host, m,
			       buf, &len))
		return;
	send_raw(d, host, attempt, buf, len);
}

/* The endpoints a peer's message carries (dpep.h), before anything acts
 * on it: a REP is answered, and a REQ accepted, over the datapath. */
static void learn_eps(struct mrcd *d, uint32_t host, const struct mrce_ctrl *m)
{
	uint32_t peer;
	if (!m->neps || host == d->self || mrcd_peer_of_host(d, host, &peer))
		return;
	int rc = mrcd_ep_learn(d->dp, d->nplanes, &d->peers[peer], m);
	if (rc < 0)
		mrcd_log(MRCD_LOG_WARNING, "host %u: its datapath endpoints not set: %s", host,
			 strerror(-rc));
}

/* The most a QP to host may carry per packet: local_mtu when both ends
 * are clients of this mrcd (no wire between them, node.c), else mtu. */
static uint32_t mtu_for(const struct mrcd *d, uint32_t host)
{
	return host == d->self ? d->local_mtu : d->cfg.mtu;
}

static void send_req(struct mrcd *d, struct outreq *o)
{
	struct mrce_ctrl m = { .type = MRCE_CTRL_REQ, .id = o->id, .sid = o->sid,
		.qpn = o->local.qpn, .psn = o->local.psn, .arg = o->local.priv,
		.window = d->cfg.window, .mtu = mtu_for(d, o->host) };
	memcpy(m.nonce, o->nonce, sizeof(m.nonce));
	send_msg(d, o->host, o->tries, &m);
}

/* Connects a local QP with the connection's tokens (derived from the key,
 * both QPs and both nonces) and the smaller of both sides' window and
 * MTU; tokens and limits are set before connect, as the engine requires. */
static int connect_qp(struct mrcd *d, uint32_t qpn, uint32_t local_psn,
		      const struct mrcd_qp_addr *remote, const struct mrc_auth_conn_id *id,
		      enum mrc_auth_role role, uint32_t window, uint32_t mtu)
{
	uint32_t peer;
	int rc = mrcd_peer_of_host(d, remote->host, &peer);
	if (rc)
		return rc;
	struct mrc_auth_conn c;
	if ((rc = mrc_auth_conn_derive(d->auth, id, role, &c)))
		return rc;
	uint32_t cap = mtu_for(d, remote->host);
	rc = mrce_qp_set_limits(d->eng, qpn, window < d->cfg.window ? window : d->cfg.window,
				mtu < cap ? mtu : cap);
	if (!rc)
		rc = mrce_qp_set_tokens(d->eng, qpn, c.tx_token, c.rx_token);
	/* The connection's AES-GCM keys, when payload_encryption is on. */
	if (!rc)
		rc = mrcd_node_set_aead(d, id, role, &c);
	mrc_auth_conn_wipe(&c);
	if (!rc)
		rc = mrce_qp_connect(d->eng, qpn, peer, remote->qpn, local_psn, remote->psn);
	return rc;
}

static void send_rep(struct mrcd *d, const struct inreq *r, uint32_t attempt)
{
	struct mrce_ctrl a = { .type = MRCE_CTRL_REP, .id = r->rid, .sid = r->sid,
		.qpn = r->local.qpn, .psn = r->local.psn, .arg = r->local.priv,
		.window = d->cfg.window, .mtu = mtu_for(d, r->host) };
	memcpy(a.nonce, r->rep_nonce, sizeof(a.nonce));
	send_msg(d, r->host, attempt, &a);
}

static void arm(struct mrcd *d)
{
	if (!ev_is_active(&d->cm->tick))
		ev_timer_start(d->loop, &d->cm->tick);
}

int mrcd_cm_listen(struct mrcd *d, uint32_t sid, mrcd_cm_req_fn fn, void *ctx)
{
	struct listener *free_l = NULL;
	for (int i = 0; i < MAX_LISTEN; i++) {
		if (d->cm->ls[i].used && d->cm->ls[i].sid == sid)
			return -EADDRINUSE;
		if (!d->cm->ls[i].used && !free_l)
			free_l = &d->cm->ls[i];
	}
	if (!free_l)
		return -ENOSPC;
	*free_l = (struct listener){ .sid = sid, .fn = fn, .ctx = ctx, .used = 1 };
	return 0;
}

void mrcd_cm_unlisten(struct mrcd *d, uint32_t sid)
{
	for (int i = 0; i < MAX_LISTEN; i++)
		if (d->cm->ls[i].used && d->cm->ls[i].sid == sid)
			d->cm->ls[i].used = 0;
}

int mrcd_cm_connect(struct mrcd *d, uint32_t host, uint32_t sid,
		    const struct mrcd_qp_addr *local, mrcd_cm_done_fn done, void *ctx)
{
	if (host >= d->nhosts || !done)
		return -EINVAL;
	for (int i = 0; i < MAX_OUT; i++) {
		struct outreq *o = &d->cm->out[i];
		if (o->used)
			continue;
		uint64_t id;
		if (getrandom(&id, sizeof(id), 0) != sizeof(id))
			return -EIO;
		*o = (struct outreq){ .used = 1, .id = id, .host = host, .sid = sid,
			.local = *local, .done = done, .ctx = ctx,
			.next = mrcd_now() + RETRY_NS };
		int rc = mrc_auth_nonce(o->nonce);
		if (rc) {
			o->used = 0;
			return rc;
		}
		send_req(d, o);
		arm(d);
		return 0;
	}
	return -ENOSPC;
}

void mrcd_cm_cancel(struct mrcd *d, void *ctx)
{
	for (int i = 0; i < MAX_OUT; i++)
		if (d->cm->out[i].used && d->cm->out[i].ctx == ctx)
			d->cm->out[i].used = 0;
	for (int i = 0; i < MAX_LISTEN; i++)
		if (d->cm->ls[i].used && d->cm->ls[i].ctx == ctx)
			d->cm->ls[i].used = 0;
}

static struct inreq *in_get(struct mrcd *d, uint64_t id)
{
	uint32_t i = (uint32_t)(id & 0xffff);
	if (i >= MAX_IN)
		return NULL;
	struct inreq *r = &d->cm->in[i];
	return r->state && r->gen == (uint16_t)(id >> 16) ? r : NULL;
}

int mrcd_cm_accept(struct mrcd *d, uint64_t id, const struct mrcd_qp_addr *local)
{
	struct inreq *r = in_get(d, id);
	if (!r || r->state != IN_PENDING)
		return -ENOENT;
	struct mrc_auth_conn_id cid = { .req_host = r->host, .req_qpn = r->remote.qpn,
		.rep_host = d->self, .rep_qpn = local->qpn };
	memcpy(cid.req_nonce, r->req_nonce, sizeof(cid.req_nonce));
	memcpy(cid.rep_nonce, r->rep_nonce, sizeof(cid.rep_nonce));
	int rc = connect_qp(d, local->qpn, local->psn, &r->remote, &cid, MRC_AUTH_ACCEPTOR,
			    r->window, r->mtu);
	if (rc)
		return rc;
	r->state = IN_ACCEPTED;
	r->local = *local;
	r->expire = mrcd_now() + KEEP_NS;
	send_rep(d, r, 0);
	arm(d);
	return 0;
}

int mrcd_cm_reject(struct mrcd *d, uint64_t id, int err)
{
	struct inreq *r = in_get(d, id);
	if (!r || r->state != IN_PENDING)
		return -ENOENT;
	r->state = IN_REJECTED;
	r->err = err < 0 ? err : -ECONNREFUSED;
	r->expire = mrcd_now() + KEEP_NS;
	struct mrce_ctrl m = { .type = MRCE_CTRL_REJ, .id = r->rid, .sid = r->sid, .err = r->err };
	send_msg(d, r->host, 0, &m);
	return 0;
}

/* The nonce of one side of an out-of-band connection: the blob an
 * application exchanges itself carries (host, qpn, psn) and no more, so
 * each side's nonce is made of those.  They are fresh as long as the QP
 * number (with its generation) and its random starting PSN are; the
 * tokens still need the cluster key (docs/security.md). */
static void oob_nonce(uint8_t n[MRC_AUTH_NONCE_BYTES], uint32_t host, uint32_t qpn,
		      uint32_t psn)
{
	const uint32_t w[4] = { htobe32(host), htobe32(qpn), htobe32(psn),
		htobe32(0x4f4f4201) /* "OOB" 1: never all zero */ };
	memcpy(n, w, MRC_AUTH_NONCE_BYTES);
}

int mrcd_qp_connect_oob(struct mrcd *d, uint32_t qpn, uint32_t local_psn,
			const struct mrcd_qp_addr *remote)
{
	/* No REQ/REP: both sides take the roles by order of (host, qpn), the
	 * lower one is the requester, so both derive the same tokens.  No
	 * negotiation either: the local window and MTU (hosts connected out
	 * of band must agree on them, as RDMA peers agree on a path MTU). */
	int req = d->self < remote->host || (d->self == remote->host && qpn < remote->qpn);
	struct mrc_auth_conn_id cid;
	uint8_t mine[MRC_AUTH_NONCE_BYTES], theirs[MRC_AUTH_NONCE_BYTES];
	oob_nonce(mine, d->self, qpn, local_psn);
	oob_nonce(theirs, remote->host, remote->qpn, remote->psn);
	if (req)
		cid = (struct mrc_auth_conn_id){ .req_host = d->self, .req_qpn = qpn,
			.rep_host = remote->host, .rep_qpn = remote->qpn };
	else
		cid = (struct mrc_auth_conn_id){ .req_host = remote->host, .req_qpn = remote->qpn,
			.rep_host = d->self, .rep_qpn = qpn };
	memcpy(cid.req_nonce, req ? mine : theirs, sizeof(mine));
	memcpy(cid.rep_nonce, req ? theirs : mine, sizeof(mine));
	return connect_qp(d, qpn, local_psn, remote, &cid,
			  req ? MRC_AUTH_REQUESTER : MRC_AUTH_ACCEPTOR, d->cfg.window,
			  mtu_for(d, remote->host));
}

static void rx_req(struct mrcd *d, uint32_t host, const struct mrce_ctrl *m)
{
	struct inreq *slot = NULL;
	for (int i = 0; i < MAX_IN; i++) {
		struct inreq *r = &d->cm->in[i];
		if (r->state && r->host == host && r->rid == m->id) {
			/* A repeat: our answer was lost. */
			if (r->state == IN_ACCEPTED) {
				send_rep(d, r, (uint32_t)random());
			} else if (r->state == IN_REJECTED) {
				struct mrce_ctrl a = { .type = MRCE_CTRL_REJ, .id = r->rid,
					.sid = r->sid, .err = r->err };
				send_msg(d, host, (uint32_t)random(), &a);
			}
			return;
		}
		if (!r->state && !slot)
			slot = r;
	}
	struct listener *l = NULL;
	for (int i = 0; i < MAX_LISTEN; i++)
		if (d->cm->ls[i].used && d->cm->ls[i].sid == m->sid)
			l = &d->cm->ls[i];
	if (!l || !slot) {
		struct mrce_ctrl a = { .type = MRCE_CTRL_REJ, .id = m->id, .sid = m->sid,
			.err = l ? -EBUSY : -ECONNREFUSED };
		send_msg(d, host, 0, &a);
		return;
	}
	uint16_t gen = ++d->cm->gen;
	*slot = (struct inreq){ .state = IN_PENDING, .gen = gen, .rid = m->id,
		.host = host, .sid = m->sid, .expire = mrcd_now() + PENDING_NS,
		.remote = { .host = host, .qpn = m->qpn, .psn = m->psn, .priv = m->arg },
		.window = m->window, .mtu = m->mtu };
	memcpy(slot->req_nonce, m->nonce, sizeof(slot->req_nonce));
	if (mrc_auth_nonce(slot->rep_nonce)) {
		slot->state = 0;
		return;
	}
	struct mrcd_cm_req req = { .id = ((uint64_t)gen << 16) | (uint64_t)(slot - d->cm->in),
		.sid = m->sid, .remote = slot->remote };
	arm(d);
	l->fn(l->ctx, &req);
}

static void rx_answer(struct mrcd *d, uint32_t host, const struct mrce_ctrl *m)
{
	for (int i = 0; i < MAX_OUT; i++) {
		struct outreq *o = &d->cm->out[i];
		if (!o->used || o->id != m->id || o->host != host)
			continue;
		o->used = 0;
		struct mrcd_qp_addr remote = { .host = host, .qpn = m->qpn, .psn = m->psn,
			.priv = m->arg };
		int err = m->type == MRCE_CTRL_REJ ? (m->err ? m->err : -ECONNREFUSED) : 0;
		if (!err) {
			struct mrc_auth_conn_id cid = { .req_host = d->self,
				.req_qpn = o->local.qpn, .rep_host = host, .rep_qpn = m->qpn };
			memcpy(cid.req_nonce, o->nonce, sizeof(cid.req_nonce));
			memcpy(cid.rep_nonce, m->nonce, sizeof(cid.rep_nonce));
			err = connect_qp(d, o->local.qpn, o->local.psn, &remote, &cid,
					 MRC_AUTH_REQUESTER, m->window, m->mtu);
		}
		o->done(o->ctx, err, &remote);
		return;
	}
}

static void rx_planes(struct mrcd *d, uint32_t host, uint32_t down)
{
	uint32_t peer = d->peer_of_host[host];
	if (peer == UINT32_MAX)
		return;
	struct mrcd_peer *p = &d->peers[peer];
	uint32_t changed = (p->remote_down ^ down) & ((1u << d->nplanes) - 1);
	if (!changed)
		return;
	p->remote_down = down;
	uint64_t now = mrcd_now();
	for (uint32_t pl = 0; pl < d->nplanes; pl++)
		if (changed & (1u << pl)) {
			mrcd_note(d, "peer", "host %u reports plane %u %s", host, pl,
				  (down & (1u << pl)) ? "down" : "up");
			mrcd_plane_apply(d, peer, pl, now);
		}
}

/* An envelope from host that is in no session of ours (it or we
 * restarted, or a replay): nothing of it is acted on; host gets a cookie
 * for the epoch it named, and sends again under it. */
static void challenge(struct mrcd *d, uint32_t host, uint64_t epoch, uint32_t attempt)
{
	uint8_t buf[MRC_AUTH_CTRL_OVERHEAD + 8];
	size_t len;
	if (mrc_auth_ctrl_challenge(d->auth, &d->ctrl_tx, d->replay, real_ns(), d->self, host,
				    epoch, buf, sizeof buf, &len))
		return;
	d->st.ctrl_challenge_tx++;
	send_raw(d, host, attempt, buf, len);
}

/* host gave us a cookie: what it refused is sent again now, not at the
 * next retry (REQs in flight, answers of requests it repeats, our plane
 * state). */
static void on_challenge(struct mrcd *d, uint32_t host)
{
	d->st.ctrl_challenge_rx++;
	for (int i = 0; i < MAX_OUT; i++)
		if (d->cm->out[i].used && d->cm->out[i].host == host)
			send_req(d, &d->cm->out[i]);
	for (int i = 0; i < MAX_IN; i++) {
		struct inreq *r = &d->cm->in[i];
		if (r->host != host)
			continue;
		if (r->state == IN_ACCEPTED) {
			send_rep(d, r, 0);
		} else if (r->state == IN_REJECTED) {
			struct mrce_ctrl a = { .type = MRCE_CTRL_REJ, .id = r->rid,
				.sid = r->sid, .err = r->err };
			send_msg(d, host, 0, &a);
		}
	}
	if (host != d->self && d->peer_of_host[host] != UINT32_MAX) {
		struct mrce_ctrl m = { .type = MRCE_CTRL_PLANES, .arg = d->local_down };
		send_msg(d, host, 0, &m);
	}
}

void mrcd_cm_rx(struct mrcd *d, uint32_t host, const uint8_t *buf, size_t len)
{
	struct mrce_ctrl m;
	struct mrc_auth_ctrl_msg env;
	d->st.ctrl_rx++;
	/* Nothing of a CTRL datagram is read before its MAC is checked, and
	 * no replay state moves before its sender is known to be the host
	 * its source address names (a key holder speaks only for itself). */
	int rc = mrcd_ctrl_open(d->auth, d->replay, real_ns(), host, buf, len, &env, &m);
	switch (rc) {
	case 0:
		break;
	case -EACCES: d->st.ctrl_bad_mac++; return;
	case -EXDEV: d->st.ctrl_wrong_dst++; return;
	case -ERANGE: d->st.ctrl_wrong_src++; return;
	case -EALREADY: d->st.ctrl_replay++; return;
	case -ESTALE: d->st.ctrl_stale++; return;
	case -ENOTCONN:
		d->st.ctrl_no_session++;
		challenge(d, host, env.src_epoch, (uint32_t)random());
		return;
	default: d->st.ctrl_bad++; return;
	}
	if (env.challenge) {
		on_challenge(d, host);
		return;
	}
	mrcd_peer_epoch(d, host, env.src_epoch);
	learn_eps(d, host, &m);
	switch (m.type) {
	case MRCE_CTRL_REQ:
		rx_req(d, host, &m);
		break;
	case MRCE_CTRL_REP:
	case MRCE_CTRL_REJ:
		rx_answer(d, host, &m);
		break;
	case MRCE_CTRL_PLANES:
		rx_planes(d, host, m.arg);
		break;
	case MRCE_CTRL_HEALTH:
		mrcd_health_rx(d, host, env.body, env.blen);
		break;
	}
}

int mrcd_cm_send_body(struct mrcd *d, uint32_t host, const uint8_t *body, size_t blen)
{
	uint8_t buf[MRC_AUTH_CTRL_OVERHEAD + MRCE_CTRL_ENV_MAX_BODY];
	size_t len;
	int rc = mrc_auth_ctrl_seal(d->auth, &d->ctrl_tx, d->replay, real_ns(), d->self, host,
				    body, blen, buf, sizeof(buf), &len);
	if (rc)
		return rc;
	send_raw(d, host, 0, buf, len);
	return 0;
}

static void beacon_to_all(struct mrcd *d, uint32_t attempt)
{
	struct mrce_ctrl m = { .type = MRCE_CTRL_PLANES, .arg = d->local_down };
	for (uint32_t p = 0; p < d->max_peers; p++)
		if (d->peers[p].used && d->peers[p].host != d->self)
			send_msg(d, d->peers[p].host, attempt, &m);
}

void mrcd_plane_state_changed(struct mrcd *d)
{
	/* Tell every peer now, on every live plane. */
	for (uint32_t k = 0; k < d->nplanes; k++)
		beacon_to_all(d, k);
}

static void on_tick(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct mrcd *d = w->data;
	(void)loop;
	(void)revents;
	uint64_t now = mrcd_now();
	int busy = 0;
	for (int i = 0; i < MAX_OUT; i++) {
		struct outreq *o = &d->cm->out[i];
		if (!o->used)
			continue;
		busy = 1;
		if (now < o->next)
			continue;
		if (++o->tries >= TRIES) {
			o->used = 0;
			o->done(o->ctx, -ETIMEDOUT, NULL);
			continue;
		}
		o->next = now + RETRY_NS;
		send_req(d, o);
	}
	for (int i = 0; i < MAX_IN; i++) {
		struct inreq *r = &d->cm->in[i];
		if (r->state == IN_PENDING && now >= r->expire) {
			/* refused while its requester still listens: it may
			 * try again (a busy acceptor's backlog) */
			mrcd_log(MRCD_LOG_INFO, "connection request from host %u to service %u not accepted in time: refused",
				 r->host, r->sid);
			(void)mrcd_cm_reject(d, ((uint64_t)r->gen << 16) | (uint64_t)i, -ECONNREFUSED);
		} else if (r->state && now >= r->expire) {
			r->state = 0;
		}
		busy |= r->state != 0;
	}
	if (!busy)
		ev_timer_stop(d->loop, &d->cm->tick);
	mrcd_flush(d);
}

static void on_beacon(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct mrcd *d = w->data;
	(void)loop;
	(void)revents;
	beacon_to_all(d, d->cm->beacon_rr++);
}

int mrcd_cm_init(struct mrcd *d)
{
	d->cm = calloc(1, sizeof(*d->cm));
	if (!d->cm)
		return -ENOMEM;
	ev_timer_init(&d->cm->tick, on_tick, 0.02, 0.02);
	d->cm->tick.data = d;
	if (d->topo) {
		ev_timer_init(&d->beacon, on_beacon, BEACON_S, BEACON_S);
		d->beacon.data = d;
		ev_timer_start(d->loop, &d->beacon);
	}
	return 0;
}

void mrcd_cm_fini(struct mrcd *d)
{
	if (!d->cm)
		return;
	ev_timer_stop(d->loop, &d->cm->tick);
	if (d->topo)
		ev_timer_stop(d->loop, &d->beacon);
	free(d->cm);
	d->cm = NULL;
}
