/* The connection manager on behalf of clients: listeners with a backlog of
 * incoming requests, ACCEPT and CONNECT requests answered when the
 * connection is made (or refused, or timed out). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/clients/clients_int.h"
#include "daemon/clients/sidown.h"
#include "mrc/mrc.h"

void mrcd__op_unlink(struct mrcd_cm_op *op)
{
	struct mrcd_client *c = op->c;
	for (struct mrcd_cm_op **p = &c->ops; *p; p = &(*p)->next)
		if (*p == op) {
			*p = op->next;
			break;
		}
	ev_timer_stop(mrcd_loop(c->d), &op->timer);
	if (op->kind == OP_CONNECT)
		mrcd_cm_cancel(c->d, op);
}

void mrcd__op_finish(struct mrcd_cm_op *op, int err, const struct mrcd_qp_addr *remote,
		     const char *why)
{
	struct mrcd_client *c = op->c;
	uint16_t type = op->kind == OP_ACCEPT ? MRC_CLI_ACCEPT : MRC_CLI_CONNECT;
	mrcd__op_unlink(op);
	if (err) {
		mrcd_log(MRCD_LOG_INFO, "client %u: %s on sid %u failed: %s", c->id,
			 mrc__cli_type_name(type), op->sid, why ? why : strerror(-err));
		mrcd_client_reply(c, type, op->req_id, err, NULL, 0, why ? why : strerror(-err),
				  NULL, 0);
	} else {
		struct mrc_cli_addr_rep rep = { .remote = { .host = remote->host, .qpn = remote->qpn,
			.psn = remote->psn, .priv = remote->priv } };
		mrcd_client_reply(c, type, op->req_id, 0, &rep, sizeof(rep), NULL, NULL, 0);
		mrcd_kick(c->d);
	}
	free(op);
}

/* Accepts req on op's QP; on failure the request is refused so its
 * sender learns at once. */
static int accept_req(struct mrcd_cm_op *op, const struct mrcd_cm_req *req)
{
	struct mrcd_qp_addr local = local_addr(op->c, op->qp, op->priv);
	int r = mrcd_cm_accept(op->c->d, req->id, &local);
	if (r) {
		mrcd_cm_reject(op->c->d, req->id, -ECONNREFUSED);
		return r;
	}
	mrcd__op_finish(op, 0, &req->remote, NULL);
	return 0;
}

static void on_cm_req(void *ctx, const struct mrcd_cm_req *req)
{
	struct mrcd_lsn *l = ctx;
	struct mrcd_client *c = l->c;
	for (struct mrcd_cm_op *op = c->ops; op; op = op->next)
		if (op->kind == OP_ACCEPT && op->sid == l->sid) {
			int r = accept_req(op, req);
			if (r)
				mrcd__op_finish(op, r, NULL, "accepting on this QP failed (already connected?)");
			mrcd__client_settle(c);
			return;
		}
	if (l->n == l->backlog) {
		mrcd_cm_reject(c->d, req->id, -ECONNREFUSED);
		return;
	}
	l->q[(l->head + l->n++) % l->backlog] = *req;
}

static void on_accept_timeout(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct mrcd_cm_op *op = w->data;
	struct mrcd_client *c = op->c;
	(void)loop;
	(void)revents;
	mrcd__op_finish(op, -ETIMEDOUT, NULL, "no connection request before the timeout");
	mrcd__client_settle(c);
}

static void on_connect_done(void *ctx, int err, const struct mrcd_qp_addr *remote)
{
	struct mrcd_cm_op *op = ctx;
	struct mrcd_client *c = op->c;
	/* The CM forgets the request once done is called: unlink without
	 * cancelling. */
	for (struct mrcd_cm_op **p = &c->ops; *p; p = &(*p)->next)
		if (*p == op) {
			*p = op->next;
			break;
		}
	if (err) {
		const char *why = err == -ECONNREFUSED ? "refused: nobody listens on that service id "
							"or its backlog is full"
				: err == -ETIMEDOUT ? "the host did not answer" : strerror(-err);
		mrcd_log(MRCD_LOG_INFO, "client %u: connect to sid %u failed: %s", c->id, op->sid, why);
		mrcd_client_reply(c, MRC_CLI_CONNECT, op->req_id, err, NULL, 0, why, NULL, 0);
	} else {
		struct mrc_cli_addr_rep rep = { .remote = { .host = remote->host, .qpn = remote->qpn,
			.psn = remote->psn, .priv = remote->priv } };
		mrcd_client_reply(c, MRC_CLI_CONNECT, op->req_id, 0, &rep, sizeof(rep), NULL, NULL, 0);
		mrcd_kick(c->d);
	}
	free(op);
	mrcd__client_settle(c);
}

static struct mrcd_cm_op *op_new(struct mrcd_client *c, const struct mrc_cli_msg *m, int kind,
				 struct mrcd_cqp *qp, uint32_t sid, uint32_t priv)
{
	uint32_t n = 0;
	for (struct mrcd_cm_op *op = c->ops; op; op = op->next)
		n++;
	if (n >= MAX_OPS_PER_CLIENT) {
		fail(c, m, -EDQUOT, "too many pending accept/connect requests (%u)", n);
		return NULL;
	}
	struct mrcd_cm_op *op = calloc(1, sizeof(*op));
	if (!op) {
		fail(c, m, -ENOMEM, "out of memory");
		return NULL;
	}
	*op = (struct mrcd_cm_op){ .c = c, .kind = kind, .req_id = m->hdr.req_id, .sid = sid,
				   .priv = priv, .qp = qp, .next = c->ops };
	ev_init(&op->timer, on_accept_timeout);
	op->timer.data = op;
	c->ops = op;
	return op;
}

int mrcd__do_listen(struct mrcd_client *c, const struct mrc_cli_msg *m)
{
	struct mrc_cli_listen q;
	memcpy(&q, m->body, sizeof(q));
	uint32_t n = 0;
	for (struct mrcd_lsn *l = c->lsns; l; l = l->next)
		n++;
	if (n >= MAX_LSN_PER_CLIENT)
		return fail(c, m, -EDQUOT, "listener limit reached (%u per client)", MAX_LSN_PER_CLIENT);
	uint32_t backlog = q.backlog ? q.backlog : DEFAULT_BACKLOG;
	if (backlog > MAX_BACKLOG)
		backlog = MAX_BACKLOG;
	struct mrcd_lsn *l = calloc(1, sizeof(*l));
	if (l)
		l->q = calloc(backlog, sizeof(*l->q));
	if (!l || !l->q) {
		if (l)
			free(l);
		return fail(c, m, -ENOMEM, "out of memory");
	}
	l->c = c;
	l->sid = q.sid;
	l->backlog = backlog;
	uid_t owner;
	int reserved;
	int r = mrcd_sid_claim(q.sid, c->uid, &owner, &reserved);
	if (r) {
		free(l->q);
		free(l);
		if (r != -EADDRINUSE)
			return fail(c, m, r, "out of memory");
		mrcd_note(c->d, "client", "client %u (uid %u): listen on service id %u refused: %s uid %u",
			  c->id, (unsigned)c->uid, q.sid, reserved ? "reserved for" : "owned by",
			  (unsigned)owner);
		return fail(c, m, r, reserved ? "service id %u is reserved for uid %u (config service_reserve)"
					      : "service id %u is owned by uid %u, which listens on it",
			    q.sid, (unsigned)owner);
	}
	r = mrcd_cm_listen(c->d, q.sid, on_cm_req, l);
	if (r) {
		mrcd_sid_release(q.sid);
		free(l->q);
		free(l);
		return fail(c, m, r, r == -EADDRINUSE ? "service id %u already has a listener"
						      : "cannot listen on service id %u", q.sid);
	}
	l->next = c->lsns;
	c->lsns = l;
	return ok(c, m, NULL, 0);
}

void mrcd__lsn_drop(struct mrcd_client *c, struct mrcd_lsn *l)
{
	mrcd_cm_unlisten(c->d, l->sid);
	mrcd_sid_release(l->sid);
	for (; l->n; l->n--, l->head++)
		mrcd_cm_reject(c->d, l->q[l->head % l->backlog].id, -ECONNREFUSED);
	for (struct mrcd_lsn **p = &c->lsns; *p; p = &(*p)->next)
		if (*p == l) {
			*p = l->next;
			break;
		}
	for (struct mrcd_cm_op *op = c->ops, *nx; op; op = nx) {
		nx = op->next;
		if (op->kind == OP_ACCEPT && op->sid == l->sid)
			mrcd__op_finish(op, -ECANCELED, NULL, "the listener was closed");
	}
	free(l->q);
	free(l);
}

int mrcd__do_unlisten(struct mrcd_client *c, const struct mrc_cli_msg *m)
{
	struct mrc_cli_listen q;
	memcpy(&q, m->body, sizeof(q));
	struct mrcd_lsn *l = find_lsn(c, q.sid);
	if (!l)
		return fail(c, m, -ENOENT, "not listening on service id %u", q.sid);
	mrcd__lsn_drop(c, l);
	return ok(c, m, NULL, 0);
}

int mrcd__do_accept(struct mrcd_client *c, const struct mrc_cli_msg *m)
{
	struct mrc_cli_accept q;
	memcpy(&q, m->body, sizeof(q));
	struct mrcd_cqp *qp = find_qp(c, q.qpn);
	if (!qp)
		return fail(c, m, -ENOENT, "no QP %u of this client", q.qpn);
	struct mrcd_lsn *l = find_lsn(c, q.sid);
	if (!l)
		return fail(c, m, -ENOENT, "not listening on service id %u (listen first)", q.sid);
	struct mrcd_cm_op *op = op_new(c, m, OP_ACCEPT, qp, q.sid, q.priv);
	if (!op)
		return -ENOMEM;
	/* Queued requests first; one the requester gave up on fails to accept
	 * and the next is tried. */
	while (l->n) {
		struct mrcd_cm_req req = l->q[l->head % l->backlog];
		l->head++;
		l->n--;
		if (accept_req(op, &req) == 0)
			return 0;
	}
	if (q.timeout_ms) {
		ev_timer_set(&op->timer, q.timeout_ms / 1000.0, 0);
		ev_timer_start(mrcd_loop(c->d), &op->timer);
	}
	return 0;
}

int mrcd__do_connect(struct mrcd_client *c, const struct mrc_cli_msg *m)
{
	struct mrc_cli_connect q;
	memcpy(&q, m->body, sizeof(q));
	struct mrcd_cqp *qp = find_qp(c, q.qpn);
	if (!qp)
		return fail(c, m, -ENOENT, "no QP %u of this client", q.qpn);
	if (q.host >= mrcd_n_hosts(c->d))
		return fail(c, m, -EHOSTUNREACH, "host %u is not in the fabric (%u hosts)", q.host,
			    mrcd_n_hosts(c->d));
	struct mrcd_cm_op *op = op_new(c, m, OP_CONNECT, qp, q.sid, q.priv);
	if (!op)
		return -ENOMEM;
	struct mrcd_qp_addr local = local_addr(c, qp, q.priv);
	int r = mrcd_cm_connect(c->d, q.host, q.sid, &local, on_connect_done, op);
	if (r) {
		c->ops = op->next;
		free(op);
		return fail(c, m, r, "cannot start a connection to host %u", q.host);
	}
	return 0;
}
