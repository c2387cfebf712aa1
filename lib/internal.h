/* libmrc internals shared by its modules. */
#ifndef MRC_LIB_INTERNAL_H
#define MRC_LIB_INTERNAL_H

#include <pthread.h>
#include <stdint.h>

#include "codec/climsg.h"
#include "mrc/mrc.h"

#define MRC__API __attribute__((visibility("default")))

struct mrc_ctx {
	int sock;
	pthread_mutex_t lock;      /* the control channel */
	uint32_t next_req;
	int dead;                  /* the daemon hung up */
	struct mrc_ctx_info info;
	char last_error[MRC_CLI_REASON_MAX + 1];
	struct mrc_mr *mrs;        /* lists, for mrc_close */
	struct mrc_qp *qps;
	/* The client's doorbells (docs/client.md "Doorbells"), from HELLO:
	 * the notify page (one pending byte per QP), the SQ bell written
	 * after setting bytes, the CQ bell the daemon writes for an armed
	 * CQ.  The same three for any number of QPs. */
	struct mrc_notify *notify;
	uint64_t notify_len;
	int sq_bell, cq_bell;
	/* mrc_wait: one thread at a time sleeps on cq_bell (the leader)
	 * and wakes the others (gen++, broadcast) when it returns, so a
	 * ring meant for another thread's QP is never swallowed. */
	pthread_mutex_t wlock;
	pthread_cond_t wcond;
	int wleader;
	uint64_t wgen;
	/* MRC_WAIT_SPIN_US: mrc_wait checks the CQ this long before it
	 * sleeps on the bell (0: off, the default; post.c). */
	int64_t wait_spin_ns;
};

struct mrc_mr {
	struct mrc_ctx *ctx;
	struct mrc_mr *next;
	void *map;                 /* page-aligned mapping */
	uint64_t map_len;
	void *addr;
	uint64_t len;
	uint32_t key;
	int own_fd;                /* mrc_alloc_mr's memfd, else -1 */
	struct mrc__moved *moved;  /* the MRC_REG_MOVE memfd it holds, or NULL */
};

struct mrc_ring {
	struct mrc_ring_hdr *hdr;
	void *desc;
	uint32_t mask;
	uint64_t idx;              /* producer: head; consumer: tail */
	uint64_t tail;             /* producer: the consumer's tail, cached */
};

struct mrc_qp {
	struct mrc_ctx *ctx;
	struct mrc_qp *next;
	uint32_t qpn;
	void *map;
	uint64_t map_len;
	int polled;                /* MRC_QP_POLLED: no bell after posting */
	struct mrc_notify *notify; /* ctx->notify */
	uint32_t notify_slot;      /* its pending byte (checked) */
	pthread_mutex_t sq_lock, cq_lock;
	struct mrc_ring sq, cq;
};

/* call.c: closes the descriptors a reply passed (those not kept) */
void mrc__lib_close_fds(int *fds, unsigned n);
/* call.c: one control round trip.  fd_in: -1 or an fd to pass.  The reply body
 * (status 0) is copied to rep (rep_len bytes exactly); received fds go to
 * fds_out (nfds expected, all or none).  Returns the status. */
int mrc__lib_call(struct mrc_ctx *ctx, uint16_t type, const void *body, size_t len, int fd_in,
	      void *rep, size_t rep_len, int *fds_out, unsigned nfds);
void mrc__lib_unlink_mr(struct mrc_mr *mr);
void mrc__lib_free_mr(struct mrc_mr *mr);  /* local side only */
void mrc__lib_unlink_qp(struct mrc_qp *qp);

#endif
