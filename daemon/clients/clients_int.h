/* The client side's internals shared by clients.c (clients, requests),
 * client_mr.c (memory), client_qp.c (QPs) and client_cm.c
 * (listen/accept/connect on their behalf). */
#ifndef MRC_DAEMON_CLIENTS_INT_H
#define MRC_DAEMON_CLIENTS_INT_H

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "daemon/clients/clients.h"

#define MAX_OPS_PER_CLIENT 16
#define MAX_LSN_PER_CLIENT 16
#define MAX_BACKLOG 128
#define DEFAULT_BACKLOG 16

enum { OP_ACCEPT = 1, OP_CONNECT };
struct mrcd_cm_op {
	struct mrcd_client *c;
	struct mrcd_cm_op *next;
	int kind;
	uint32_t req_id, sid, priv;
	struct mrcd_cqp *qp;
	ev_timer timer;
};

struct mrcd_lsn {
	struct mrcd_client *c;
	struct mrcd_lsn *next;
	uint32_t sid, backlog, head, n;
	struct mrcd_cm_req *q;
};

static inline int fail(struct mrcd_client *c, const struct mrc_cli_msg *m, int err, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static inline int fail(struct mrcd_client *c, const struct mrc_cli_msg *m, int err, const char *fmt, ...)
{
	char why[MRC_CLI_REASON_MAX + 1];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	mrcd_log(MRCD_LOG_INFO, "client %u (%s): %s refused: %s (%s)", c->id, c->name,
		 mrc__cli_type_name(m->hdr.type), why, strerror(-err));
	mrcd_client_reply(c, m->hdr.type, m->hdr.req_id, err, NULL, 0, why, NULL, 0);
	return err;
}

static inline int ok(struct mrcd_client *c, const struct mrc_cli_msg *m, const void *body, size_t len)
{
	return mrcd_client_reply(c, m->hdr.type, m->hdr.req_id, 0, body, len, NULL, NULL, 0);
}

static inline struct mrcd_cqp *find_qp(struct mrcd_client *c, uint32_t qpn)
{
	for (struct mrcd_cqp *q = c->qps; q; q = q->next)
		if (q->qpn == qpn)
			return q;
	return NULL;
}

/* The engine's view of the client's QP named by a QPN request (QP_INFO,
 * QP_STATS), or NULL with the error replied. */
static inline struct mrcd_cqp *qp_engine_info(struct mrcd_client *c, const struct mrc_cli_msg *m,
					      struct mrce_qp_info *info)
{
	struct mrc_cli_qpn q;
	memcpy(&q, m->body, sizeof(q));
	struct mrcd_cqp *qp = find_qp(c, q.qpn);
	if (!qp) {
		fail(c, m, -ENOENT, "no QP %u of this client", q.qpn);
		return NULL;
	}
	int r = mrce_qp_info(mrcd_engine(c->d), qp->qpn, info);
	if (r) {
		fail(c, m, r, "engine QP info");
		return NULL;
	}
	return qp;
}

static inline struct mrcd_lsn *find_lsn(struct mrcd_client *c, uint32_t sid)
{
	for (struct mrcd_lsn *l = c->lsns; l; l = l->next)
		if (l->sid == sid)
			return l;
	return NULL;
}

static inline struct mrcd_qp_addr local_addr(struct mrcd_client *c, struct mrcd_cqp *qp, uint32_t priv)
{
	return (struct mrcd_qp_addr){ .host = mrcd_self_host(c->d), .qpn = qp->qpn,
				      .psn = qp->psn, .priv = priv };
}

void mrcd__client_settle(struct mrcd_client *c);

/* Completions a QP's rings give up per poll (client_qp.c, client_mr.c). */
#define POLL_BUDGET 64

/* clients.c: the client list and the per-uid limits, for the files of
 * one request kind each */
struct mrcd__uid_limits {
	uint32_t uid_qps, uid_mrs;
	uint64_t uid_mem;
};
struct mrcd_client *mrcd__clients(void);
const struct mrcd__uid_limits *mrcd__uid_limits(void);
int mrcd__uid_refuse(struct mrcd_uidq *q, int err);   /* counts it; returns err */

/* strag.c: STRAGGLER (a record into its uid's ring); stop frees them */
int mrcd__do_straggler(struct mrcd_client *c, const struct mrc_cli_msg *m);
/* QP_STATS: one of the client's QPs' engine counters (strag.c). */
int mrcd__do_qp_stats(struct mrcd_client *c, const struct mrc_cli_msg *m);
/* QP_STATS_N: several of them in one reply (strag.c). */
int mrcd__do_qp_stats_n(struct mrcd_client *c, const struct mrc_cli_msg *m);
void mrcd__strag_free(void);

/* client_mr.c: memory regions */
int mrcd__do_reg_mr(struct mrcd_client *c, const struct mrc_cli_msg *m, int fd);
int mrcd__do_dereg_mr(struct mrcd_client *c, const struct mrc_cli_msg *m);
int mrcd__mr_drop(struct mrcd_client *c, struct mrcd_cmr *mr);
void mrcd__populate_init(void);
void mrcd__populate_stop(struct mrcd *d);

/* client_qp.c: queue pairs */
int mrcd__do_create_qp(struct mrcd_client *c, const struct mrc_cli_msg *m);
int mrcd__do_destroy_qp(struct mrcd_client *c, const struct mrc_cli_msg *m);
int mrcd__do_qp_info(struct mrcd_client *c, const struct mrc_cli_msg *m);
int mrcd__do_connect_oob(struct mrcd_client *c, const struct mrc_cli_msg *m);
void mrcd__qp_drop(struct mrcd_client *c, struct mrcd_cqp *qp);
void mrcd__on_retry(struct ev_loop *loop, ev_timer *w, int revents);

/* notify.c: the client's notify page and doorbells, the parked-ring
 * timer */
int mrcd__notify_start(struct mrcd *d, const struct mrcd_cfg *cfg, char *err, size_t errlen);
void mrcd__notify_stop(void);
/* Creates the notify page and both eventfds (at HELLO); close frees them. */
int mrcd__notify_open(struct mrcd_client *c);
void mrcd__notify_close(struct mrcd_client *c);
/* Wakes the QPs whose pending byte is set; returns how many. */
int mrcd__notify_scan(struct mrcd_client *c, uint64_t now);
uint32_t mrcd__slot_free(const struct mrcd_client *c);
void mrcd__slot_take(struct mrcd_client *c, struct mrcd_cqp *q, uint32_t i);
void mrcd__slot_put(struct mrcd_client *c, struct mrcd_cqp *q);
/* Starts the parked-ring timer if a polled ring is parked and it is not
 * running. */
void mrcd__tick_parked(void);

/* client_cm.c */
void mrcd__op_unlink(struct mrcd_cm_op *op);
void mrcd__op_finish(struct mrcd_cm_op *op, int err, const struct mrcd_qp_addr *remote,
		     const char *why);
void mrcd__lsn_drop(struct mrcd_client *c, struct mrcd_lsn *l);
int mrcd__do_listen(struct mrcd_client *c, const struct mrc_cli_msg *m);
int mrcd__do_unlisten(struct mrcd_client *c, const struct mrc_cli_msg *m);
int mrcd__do_accept(struct mrcd_client *c, const struct mrc_cli_msg *m);
int mrcd__do_connect(struct mrcd_client *c, const struct mrc_cli_msg *m);

#endif
