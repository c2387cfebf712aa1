/* Two QPs of one client connected to each other through one mrcd, with a
 * source and a target region of len bytes: the smallest real transfer
 * through a daemon.  Include after <cmocka.h>. */
#ifndef MRC_TESTS_QP_PAIR_H
#define MRC_TESTS_QP_PAIR_H

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <unistd.h>

#include "common/prng.h"
#include "mrc/mrc.h"
#include "tests/support/mrcd_spawn.h"

/* A checked transfer's source: len bytes (a multiple of 8) from seed s. */
static inline void qp_pair_fill(void *buf, size_t len, uint64_t s)
{
	struct mrc_rng r;
	mrc_rng_seed(&r, s);
	uint64_t *b = buf;
	for (size_t i = 0; i < len / 8; i++)
		b[i] = mrc_rng_next(&r);
}

struct qp_pair {
	struct mrc_ctx *ctx;
	struct mrc_qp *a, *b;
	struct mrc_mr *src, *dst;
};

static inline void qp_pair_open(const struct mrcd_proc *d, struct qp_pair *p, uint64_t len)
{
	assert_int_equal(mrc_open(d->sock, &p->ctx), 0);
	assert_int_equal(mrc_alloc_mr(p->ctx, len, MRC_MR_LOCAL_READ | MRC_MR_LOCAL_WRITE, &p->src), 0);
	assert_int_equal(mrc_alloc_mr(p->ctx, len, MRC_MR_ALL, &p->dst), 0);
	assert_int_equal(mrc_create_qp(p->ctx, NULL, &p->a), 0);
	assert_int_equal(mrc_create_qp(p->ctx, NULL, &p->b), 0);
	struct mrc_qp_addr la, lb;
	assert_int_equal(mrc_qp_info_get(p->a, &la), 0);
	assert_int_equal(mrc_qp_info_get(p->b, &lb), 0);
	assert_int_equal(mrc_connect_oob(p->a, &lb), 0);
	assert_int_equal(mrc_connect_oob(p->b, &la), 0);
}

/* The same through the connection manager (REQ/REP/RTU are CTRL datagrams
 * to the daemon itself): two clients, service sid; qp WRITEs src into the
 * peer client's dst. */
struct cm_pair {
	struct mrc_ctx *ctx, *peer_ctx;
	struct mrc_qp *qp, *peer_qp;
	struct mrc_mr *src, *dst;
};

struct cm_pair_acc {
	struct cm_pair *p;
	uint16_t sid;
	int rc, fd[2];
};

static inline void *cm_pair_acceptor(void *arg)
{
	struct cm_pair_acc *a = arg;
	struct mrc_qp_addr remote;
	a->rc = mrc_listen(a->p->peer_ctx, a->sid, 1);
	char x = 1;
	if (write(a->fd[1], &x, 1) != 1)
		a->rc = -EIO;
	if (!a->rc)
		a->rc = mrc_accept(a->p->peer_qp, a->sid, 0, MRCD_SPAWN_WAIT_MS, &remote);
	return NULL;
}

static inline void cm_pair_open(const struct mrcd_proc *d, struct cm_pair *p, uint16_t sid,
				uint64_t len)
{
	struct cm_pair_acc a = { .p = p, .sid = sid };
	assert_int_equal(pipe(a.fd), 0);
	assert_int_equal(mrc_open(d->sock, &p->peer_ctx), 0);
	assert_int_equal(mrc_alloc_mr(p->peer_ctx, len, MRC_MR_ALL, &p->dst), 0);
	assert_int_equal(mrc_create_qp(p->peer_ctx, NULL, &p->peer_qp), 0);
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, cm_pair_acceptor, &a), 0);
	char x;
	assert_int_equal(read(a.fd[0], &x, 1), 1);   /* listening */
	assert_int_equal(mrc_open(d->sock, &p->ctx), 0);
	assert_int_equal(mrc_alloc_mr(p->ctx, len, MRC_MR_ALL, &p->src), 0);
	assert_int_equal(mrc_create_qp(p->ctx, NULL, &p->qp), 0);
	assert_int_equal(mrc_connect(p->qp, 0, sid, 0, NULL), 0);
	pthread_join(th, NULL);
	close(a.fd[0]);
	close(a.fd[1]);
	assert_int_equal(a.rc, 0);
}

static inline void cm_pair_close(struct cm_pair *p)
{
	mrc_close(p->ctx);
	mrc_close(p->peer_ctx);
}

#endif
