/* The communicator's bootstrap (docs/coll.md "Bootstrap"): every rank
 * sends rank 0 a hello (its receive region's key and the address of its
 * QP for every peer) over a connection to rank 0's listener, rank 0 sends
 * back the table of all hellos, every rank connects its mesh QPs out of
 * band, tells rank 0 "connected", and waits for its "go". */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "coll/coll_int.h"

#define BOOT_MAGIC 0x6d726370u     /* "mrcp" (the hello with shm and nonce) */

struct hello {
	uint32_t magic, n, rank, host, rkey, window, chunk, sets;
	uint32_t shm, pad;         /* offers shared memory to the ranks of its host */
	uint64_t nonce;            /* rank 0's names the communicator's rings */
	struct mrc_qp_addr qp[];   /* n x sets: this rank's QP for each peer */
};

static size_t hello_len(uint32_t n)
{
	return sizeof(struct hello) + (size_t)n * sizeof(struct mrc_qp_addr);
}

/* Tests: this rank plays one that got "go" and destroyed its bootstrap QP
 * before its ACK reached rank 0 (it posts no receive for "go", so rank 0's
 * SEND can only end on the gone QP).  UINT32_MAX: none. */
uint32_t mrc__coll_test_leave_before_go = UINT32_MAX;

static int leaves_before_go(const struct mrc_coll *c)
{
	return c->me == mrc__coll_test_leave_before_go;
}

/* Rank 0's "go" SEND to one rank ended with r.  "go" is the bootstrap's
 * last message: a rank that has it destroys its bootstrap QP at once, and
 * when its ACK is lost or late (a spurious RTO under load), our
 * retransmission finds no QP and the SEND fails with -ECONNRESET although
 * the rank has "go" (seen under make check's load as rank 0's
 * "mrc_coll_init: Connection reset by peer" in tests/root/coll.sh).  No
 * further message could settle it (it would be the last one instead), so
 * a gone QP is not an error here: a rank that really failed is seen by
 * the first collective (its mesh QPs reset, or its abort). */
static int go_done(struct mrc_coll *c, int r)
{
	if (r != -ECONNRESET)
		return r;
	c->boot_gone++;
	return 0;
}

static int left_ms(int64_t end)
{
	int64_t l = end - mrc__coll_now_ms();
	return l > 0 ? (int)l : 0;
}

/* One completion of qp before end (its status is the result). */
static int boot_wait(struct mrc_qp *qp, int64_t end)
{
	for (;;) {
		struct mrc_completion wc;
		int k = mrc_poll_cq(qp, &wc, 1);
		if (k < 0)
			return k;
		if (k == 1)
			return wc.status;
		int l = left_ms(end);
		if (!l)
			return -ETIMEDOUT;
		int r = mrc_wait(qp, l);
		if (r && r != -ETIMEDOUT)
			return r;
	}
}

/* Connects a fresh bootstrap QP to rank 0 (probing every host when its
 * host is not given), retrying while rank 0 is not listening yet. */
static int boot_connect(struct mrc_coll *c, const struct mrc_coll_cfg *cfg, uint32_t n_hosts,
			int64_t end, struct mrc_qp **out)
{
	uint32_t h = cfg->root_host == MRC_COLL_HOST_ANY ? 0 : cfg->root_host;
	for (;;) {
		struct mrc_qp *qp;
		int r = mrc_create_qp(c->ctx, NULL, &qp);
		if (r)
			return r;
		r = mrc_connect(qp, h, cfg->sid, c->me, NULL);
		if (!r) {
			*out = qp;
			return 0;
		}
		mrc_destroy_qp(qp);   /* a timed-out request may leave it half set up */
		if (r != -ECONNREFUSED && r != -ETIMEDOUT)
			return r;
		if (!left_ms(end))
			return -ETIMEDOUT;
		if (cfg->root_host == MRC_COLL_HOST_ANY)
			h = (h + 1) % n_hosts;
		if (cfg->root_host != MRC_COLL_HOST_ANY || h == 0)
			usleep(20000);   /* a retry interval, not synchronisation */
	}
}

static void fill_hello(struct mrc_coll *c, struct hello *h)
{
	*h = (struct hello){ .magic = BOOT_MAGIC, .n = c->n, .rank = c->me, .host = c->host,
			     .rkey = mrc_mr_key(c->rx), .window = c->window, .chunk = c->chunk,
			     .sets = c->sets, .shm = c->shm_on, .nonce = c->nonce };
	for (uint32_t j = 0; j < c->np; j++)
		if (j % c->n != c->me)
			mrc_qp_info_get(c->p[j].qp, &h->qp[j]);
}

static int check_hello(const struct mrc_coll *c, const struct hello *h, uint32_t rank)
{
	return h->magic == BOOT_MAGIC && h->n == c->n && h->rank == rank && h->sets == c->sets &&
	       h->window == c->window && h->chunk == c->chunk ? 0 : -EPROTO;
}

/* Rank 0: accepts every other rank, gathers the hellos, sends the table,
 * then waits for every rank's "connected" and answers "go".
 *
 * The listener stays open until every hello is in.  Under load a rank's
 * mrc_connect can time out on its side after we accepted it; the rank
 * then destroys that QP and connects again.  Counting the first
 * connection as done and closing the listener (as this did before) left
 * us waiting on a QP whose peer was gone (its receives end with
 * -ECONNRESET: the "Connection reset by peer" of 8-rank bootstraps under
 * make check's load) while the rank's new request was never accepted.
 * So a rank's newest connection replaces the older, and a connection
 * whose receive fails is dropped and waited for again. */
static int boot_root(struct mrc_coll *c, const struct mrc_coll_cfg *cfg, struct mrc_mr *bm,
		     struct mrc_qp **bq, int64_t end)
{
	size_t hl = hello_len(c->np);
	uint32_t have = 0;   /* hellos in */
	uint8_t *got = calloc(c->n, 1);
	int r = got ? mrc_listen(c->ctx, cfg->sid, c->n < 128 ? c->n : 128) : -ENOMEM;
	if (r) {
		free(got);
		return r;
	}
	while (!r && have < c->n - 1) {
		for (uint32_t k = 1; k < c->n && !r; k++) {
			struct mrc_completion wc;
			int n = bq[k] && !got[k] ? mrc_poll_cq(bq[k], &wc, 1) : 0;
			if (n < 0) {
				r = n;
			} else if (n == 1 && wc.status) {
				mrc_destroy_qp(bq[k]);   /* gone: the rank connects again */
				bq[k] = NULL;
			} else if (n == 1 && wc.wr_id == 1) {
				r = check_hello(c, (struct hello *)((uint8_t *)mrc_mr_addr(bm) + k * hl), k);
				got[k] = 1;
				have++;
			}
		}
		if (r || have == c->n - 1)
			break;
		int l = left_ms(end);
		if (!l) {
			r = -ETIMEDOUT;
			break;
		}
		/* Short accepts, so that hellos and failures are seen meanwhile. */
		struct mrc_qp *qp;
		struct mrc_qp_addr remote;
		if ((r = mrc_create_qp(c->ctx, NULL, &qp)))
			break;
		r = mrc_accept(qp, cfg->sid, 0, l < 20 ? l : 20, &remote);
		if (!r && (remote.priv == 0 || remote.priv >= c->n))
			r = -EPROTO;
		if (r) {
			mrc_destroy_qp(qp);
			if (r == -ETIMEDOUT)
				r = 0;
			continue;
		}
		uint32_t k = remote.priv;
		if (bq[k])
			mrc_destroy_qp(bq[k]);
		if (got[k])
			have--, got[k] = 0;
		bq[k] = qp;
		if ((r = mrc_post_recv(qp, 1, mrc_mr_key(bm), k * hl, hl)) ||
		    (r = mrc_post_recv(qp, 2, mrc_mr_key(bm), (uint64_t)c->n * hl, 8)))
			break;
	}
	mrc_unlisten(c->ctx, cfg->sid);
	free(got);
	if (r)
		return r;
	fill_hello(c, mrc_mr_addr(bm));
	for (uint32_t k = 1; k < c->n && !r; k++)
		r = mrc_post_send(bq[k], 3, mrc_mr_key(bm), 0, (uint64_t)c->n * hl);
	for (uint32_t k = 1; k < c->n && !r; k++)
		r = boot_wait(bq[k], end);
	return r;
}

static int boot_rank(struct mrc_coll *c, const struct mrc_coll_cfg *cfg, uint32_t n_hosts,
		     struct mrc_mr *bm, struct mrc_qp **bq, int64_t end)
{
	size_t hl = hello_len(c->np);
	int r;
	for (;;) {
		if ((r = boot_connect(c, cfg, n_hosts, end, &bq[0])))
			return r;
		/* Receives first (table, then "go"); the hello goes from past the table. */
		uint8_t *hb = (uint8_t *)mrc_mr_addr(bm) + (uint64_t)c->n * hl + 8;
		fill_hello(c, (struct hello *)hb);
		if ((r = mrc_post_recv(bq[0], 1, mrc_mr_key(bm), 0, (uint64_t)c->n * hl)) ||
		    (!leaves_before_go(c) &&
		     (r = mrc_post_recv(bq[0], 2, mrc_mr_key(bm), (uint64_t)c->n * hl, 8))) ||
		    (r = mrc_post_send(bq[0], 3, mrc_mr_key(bm), (uint64_t)c->n * hl + 8, hl)))
			return r;
		/* Completions in posting order on the send side, receives as they
		 * come: two waits see the SEND and the table. */
		for (int i = 0; i < 2 && !r; i++)
			r = boot_wait(bq[0], end);
		/* Rank 0 gave this connection up before the table: its short
		 * accept timed out just as mrcd completed the connection, or it
		 * took a newer one of ours.  It keeps listening until every hello
		 * is in, so connect again (seen under make check's load as
		 * "mrc_coll_init: Connection reset by peer"). */
		if (r != -ECONNRESET || !left_ms(end))
			break;
		mrc_destroy_qp(bq[0]);
		bq[0] = NULL;
	}
	for (uint32_t k = 0; k < c->n && !r; k++)
		r = check_hello(c, (struct hello *)((uint8_t *)mrc_mr_addr(bm) + k * hl), k);
	return r;
}

/* Runs the bootstrap over a region and a QP per rank of its own (rank 0:
 * one per other rank), released before it returns: the mesh is connected,
 * every peer's receive key and every rank's leaf are known, and no rank
 * writes before every QP of every rank is connected. */
int mrc__coll_boot(struct mrc_coll *c, const struct mrc_coll_cfg *cfg, uint32_t n_hosts,
		   int64_t end)
{
	size_t hl = hello_len(c->np);
	struct mrc_mr *bm = NULL;
	struct mrc_qp **bq = calloc(c->n, sizeof(*bq));
	int r = bq ? mrc_alloc_mr(c->ctx, (uint64_t)(c->n + 1) * hl + 8,
				  MRC_MR_LOCAL_READ | MRC_MR_LOCAL_WRITE, &bm)
		   : -ENOMEM;
	if (!r)
		r = c->me == 0 ? boot_root(c, cfg, bm, bq, end) : boot_rank(c, cfg, n_hosts, bm, bq, end);
	for (uint32_t j = 0; j < c->np && !r; j++) {
		const struct hello *h = (const struct hello *)((uint8_t *)mrc_mr_addr(bm) + j % c->n * hl);
		c->leaf[j % c->n] = h->host / c->hosts_per_leaf;
		if (j % c->n == c->me)
			continue;
		c->p[j].rkey = h->rkey;
		r = mrc_connect_oob(c->p[j].qp, &h->qp[j - j % c->n + c->me]);
	}
	/* Our rings to the ranks of our host exist before we say "connected",
	 * so every ring exists once "go" comes: each rank maps its peers'. */
	uint32_t *hosts = r ? NULL : calloc(c->n, sizeof(*hosts));
	uint8_t *shm = r ? NULL : calloc(c->n, 1);
	if (!r && (!hosts || !shm))
		r = -ENOMEM;
	for (uint32_t k = 0; !r && k < c->n; k++) {
		const struct hello *h = (const struct hello *)((uint8_t *)mrc_mr_addr(bm) + k * hl);
		hosts[k] = h->host;
		shm[k] = h->shm != 0;
		if (k == 0)
			c->nonce = h->nonce;
	}
	if (!r)
		r = mrc__coll_shm_create(c, hosts, shm);
	free(hosts);
	free(shm);
	/* Nobody writes before every QP of every rank is connected:
	 * "connected" to rank 0, which answers "go" once it has all. */
	if (!r && c->me == 0) {
		for (uint32_t k = 1; k < c->n && !r; k++)
			r = boot_wait(bq[k], end);
		for (uint32_t k = 1; k < c->n && !r; k++)
			r = mrc_post_send(bq[k], 4, mrc_mr_key(bm), 0, 8);
		for (uint32_t k = 1; k < c->n && !r; k++)
			r = go_done(c, boot_wait(bq[k], end));
	} else if (!r) {
		if (!(r = mrc_post_send(bq[0], 4, mrc_mr_key(bm), 0, 8)))
			r = boot_wait(bq[0], end);   /* our SEND */
		if (!r && !leaves_before_go(c))
			r = boot_wait(bq[0], end);   /* "go" */
	}
	if (!r)
		r = mrc__coll_shm_open(c);
	for (uint32_t k = 0; bq && k < c->n; k++)
		if (bq[k])
			mrc_destroy_qp(bq[k]);
	free(bq);
	if (bm)
		mrc_dereg_mr(bm);
	return r;
}
