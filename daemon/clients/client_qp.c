/* mrcd: clients' queue pairs: creation (and the busy loop's polling of
 * their rings), destruction, information and out-of-band connection
 * (clients_int.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/clients/clients.h"
#include "daemon/clients/clients_int.h"
#include "datapath/datapath.h"
#include "mrc/mrc.h"

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

/* Urgent QPs only, from inside a loop turn that moves bulk (the core's
 * urgent_turn_us): a load of each one's next SQ slot, and its ring polled
 * when that holds a post, a parked one woken first as its doorbell would
 * (the doorbell's read later finds it awake: notify_spurious), and the
 * pollers kept running: its client, seeing it awake, rings no more. */
static int client_urgent(void *ctx)
{
	struct mrcd_client *c = ctx;
	int n = 0;
	for (struct mrcd_cqp *q = c->urg; q; q = q->unext) {
		if (!mrcd_cqp_ready(q))
			continue;
		if (mrcd_cqp_unpark(q, mrcd_now()))
			mrcd_kick(c->d);
		n += mrcd_cqp_poll(q, POLL_BUDGET);
	}
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

void mrcd__on_retry(struct ev_loop *loop, ev_timer *w, int revents)
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

/* ---- QPs -------------------------------------------------------------- */

int mrcd__do_create_qp(struct mrcd_client *c, const struct mrc_cli_msg *m)
{
	struct mrc_cli_create_qp q;
	memcpy(&q, m->body, sizeof(q));
	if (c->nqp >= c->max_qps)
		return fail(c, m, -EDQUOT, "QP limit reached (%u per client; config client_max_qps)",
			    c->max_qps);
	if (c->uq->qps >= mrcd__uid_limits()->uid_qps)
		return fail(c, m, mrcd__uid_refuse(c->uq, -EDQUOT),
			    "QP limit of uid %u reached (%u over all its clients; config uid_max_qps)",
			    (unsigned)c->uid, mrcd__uid_limits()->uid_qps);
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
		struct mrcd_poller p = { .poll = client_poll, .arm = client_arm,
					 .urgent = client_urgent, .ctx = c };
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
	if (qp->flags & MRC_CLI_QP_URGENT) {
		qp->unext = c->urg;
		c->urg = qp;
		mrcd_urgent_count(c->d, 1);
	}
	c->nqp++;
	c->uq->qps++;
	/* Only the rings: the doorbells are the client's (HELLO). */
	r = mrcd_client_reply(c, m->hdr.type, m->hdr.req_id, 0, &rep, sizeof(rep), NULL, &memfd, 1);
	close(memfd);
	return r;
}

void mrcd__qp_drop(struct mrcd_client *c, struct mrcd_cqp *qp)
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
	for (struct mrcd_cqp **p = &c->urg; *p; p = &(*p)->unext)
		if (*p == qp) {
			*p = qp->unext;
			mrcd_urgent_count(c->d, -1);
			break;
		}
	c->nqp--;
	c->uq->qps--;
	mrcd__slot_put(c, qp);
	mrcd_cqp_destroy(qp);
}

int mrcd__do_destroy_qp(struct mrcd_client *c, const struct mrc_cli_msg *m)
{
	struct mrc_cli_qpn q;
	memcpy(&q, m->body, sizeof(q));
	struct mrcd_cqp *qp = find_qp(c, q.qpn);
	if (!qp)
		return fail(c, m, -ENOENT, "no QP %u of this client", q.qpn);
	mrcd__qp_drop(c, qp);
	return ok(c, m, NULL, 0);
}

int mrcd__do_qp_info(struct mrcd_client *c, const struct mrc_cli_msg *m)
{
	struct mrce_qp_info info;
	struct mrcd_cqp *qp = qp_engine_info(c, m, &info);
	if (!qp)
		return 0;   /* replied */
	struct mrc_cli_qp_info_rep rep = {
		.local = { .host = mrcd_self_host(c->d), .qpn = qp->qpn, .psn = qp->psn },
		.state = info.state, .error = info.error,
	};
	return ok(c, m, &rep, sizeof(rep));
}

int mrcd__do_connect_oob(struct mrcd_client *c, const struct mrc_cli_msg *m)
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

