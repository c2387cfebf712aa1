/* libnccl-net-mrc.so, the data path (docs/nccl.md): the comms'
 * completions (CTSs, eager advertisements and data arriving, sends done),
 * test and iflush; isend is send.c's, irecv recv.c's (memory
 * registration: reg.c; the exported tables: tables.c).
 *
 * Protocol (receiver-driven, like a CTS): irecv reserves, per grouped
 * receive, an id and room in the receiver's bounce arena, and SENDs a
 * clear-to-send {id, tag, size, offset} to the sender's posted RECVs.  isend
 * takes the oldest CTS of its tag (none yet: a NULL request, NCCL retries),
 * copies, and WRITE_IMMs the data to that offset with imm = id; the
 * receiver's RECV_WRITE_IMM completion gives the size.  A receive no
 * larger than an eager slot sends no CTS: its message comes at once into
 * the receiver's eager ring (credits; docs/nccl.md "Eager messages"),
 * paired with it by tag and per-tag number, and a CTS goes only when the
 * ring is full.  Host buffers are
 * copied with memcpy, CUDA buffers by the comm's copy engine
 * (nccl/stage.c), each finished before the data moves on. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mrc/mrc.h>

#include "common/clock.h"
#include "common/trace.h"
#include "nccl/plugin.h"

/* ---- data path --------------------------------------------------------- */
/* The peer broke the protocol: the comm fails with -EPROTO (a first error
 * stays) and the log says why, at the caller's line (WARN's __LINE__). */
#define PROTO_ERR(c, ...)                       \
	do {                                    \
		if (!(c)->err)                  \
			(c)->err = -EPROTO;     \
		WARN(__VA_ARGS__);              \
	} while (0)

struct req *mrcn_req_get(struct comm *c)
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

/* An id is free again once its receive has its data (or was satisfied
 * eagerly) and its CTS SEND completed: a CTS may still be (re)sent from
 * its buffer until then. */
void mrcn_id_release(struct comm *c, int id)
{
	if (!c->ids[id].r && !c->cts_busy[id])
		c->free_ids[c->nfree_ids++] = id;
}

void mrcn_refuse(struct comm *c, const char *why, uint64_t v)
{
	c->st.refused++;
	PROTO_ERR(c, "eager message from host %u refused: %s (%llu)", c->host, why,
		  (unsigned long long)v);
}

/* A CTS or the eager ring's advertisement from the receiver: its credits
 * taken, and a CTS kept for isend unless its message already went
 * eagerly (its number below the tag's sends). */
static void cts_arrived(struct comm *c, const struct mrc_completion *e)
{
	int slot = (int)(e->wr_id & 0xffff);
	struct mrcn_cts in;
	if (slot >= MRCN_NRECV || mrcn_cts_parse(CTS_IN(c, slot), e->byte_len, &in) ||
	    (in.magic == MRCN_CTS_MAGIC && c->ncts == MRCN_NCTS)) {
		PROTO_ERR(c, "malformed clear-to-send from host %u", c->host);
		return;
	}
	/* Credits are a count, so a late or repeated one is harmless;
	 * more than was ever sent is not. */
	if ((int32_t)(in.credits - c->eg_credit) > 0) {
		if ((int32_t)(in.credits - c->eg_sent) > 0) {
			PROTO_ERR(c, "host %u returned %u eager credits, %u sent", c->host,
				  in.credits, c->eg_sent);
			return;
		}
		c->eg_credit = in.credits;
	}
	if (in.magic == MRCN_EGR_MAGIC) {
		if (!c->eg_slots) {
			c->eg_compact = (in.tag & MRCN_EGR_F_COMPACT) != 0;
			c->eg_pieces = (in.tag & MRCN_EGR_F_PIECES) != 0;
			c->eg_slots = in.id;
			c->eg_stride = in.size;
			c->eg_off = in.off;
		} else if (c->eg_slots != in.id || c->eg_stride != in.size ||
			   c->eg_off != in.off) {
			PROTO_ERR(c, "host %u changed its eager ring", c->host);
			return;
		}
	} else {
		const uint32_t *sent = mrcn_tag_count(c, in.tag, 0);
		if (sent && in.tseq < *sent) {
			c->st.paired++;     /* its message went eagerly */
			goto repost;
		}
		c->cts[c->ncts++] = in;
		MRC_TRACE(MRC_TR_N_CTS, TRC(c), in.id, in.size);
	}
repost:;
	int r = mrcn_post_cts_recv(c, slot);
	if (r && !c->err)
		c->err = r;
}

/* Bytes [from, from + n) of receive (r, s) from its arena room to its
 * buffer: memcpy, or for a CUDA buffer a device copy waited for. */
static void copy_out(struct comm *c, struct req *r, int s, uint64_t from, uint64_t n)
{
	uint64_t off = mrcn_arena_off(&c->arena, r->sub[s].alloc) + from;
	if (!n)
		return;
	if (r->sub[s].cuda) {
		int ce = mrcn_cuda_copy(c, 1, (uint8_t *)r->sub[s].data + from, off, n);
		if (ce) {
			r->err = ce;
			r->cuda_fail = 1;
		}
	} else {
		memcpy((uint8_t *)r->sub[s].data + from, c->base + off, n);
	}
}

/* A message, or a piece of one, landed in the bounce region for one of
 * our receives (or in the eager ring): copied out to NCCL's buffer; the
 * last piece frees its room and completes the receive. */
static void data_arrived(struct comm *c, const struct mrc_completion *e)
{
	if (c->err)
		return;         /* failed (a refused piece): nothing more is taken */
	if (e->imm & MRCN_IMM_EAGER) {
		mrcn_eg_arrived(c, e);
		return;
	}
	uint32_t id = e->imm & ~MRCN_IMM_PIECE;
	if (id >= MRCN_NCTS || !c->ids[id].r) {
		PROTO_ERR(c, "data for unknown id %u", id);
		return;
	}
	struct req *r = c->ids[id].r;
	int s = c->ids[id].sub, piece;
	if (r->sub[s].deferred) {
		/* no CTS offered it room: the peer guessed the id */
		PROTO_ERR(c, "data for id %u, whose clear-to-send was never sent", id);
		return;
	}
	uint64_t got = r->sub[s].got;
	int pe = mrcn_data_parse(e->imm, e->byte_len, got, r->sub[s].size, &id, &piece);
	if (pe && piece) {
		/* our sender never makes one: the receive stays mapped, so the
		 * comm fails rather than the receive alone */
		PROTO_ERR(c, "piece of %u bytes at %llu into %llu for id %u", e->byte_len,
			  (unsigned long long)got, (unsigned long long)r->sub[s].size, id);
		return;
	}
	if (pe) {
		r->err = -EMSGSIZE;    /* larger than its receive: nothing copied */
	} else {
		if (!r->err)
			copy_out(c, r, s, got, e->byte_len);
		r->sub[s].got = (uint32_t)(got + e->byte_len);
	}
	if (piece) {
		c->st.pieces++;
		if (r->err && !c->err)
			c->err = r->err;    /* a failed device copy, the same way */
		return;
	}
	c->ids[id].r = NULL;
	mrcn_id_release(c, (int)id);
	r->sub[s].pending = 0;
	MRC_TRACE(MRC_TR_N_DATA, TRC(c), id, r->sub[s].got);
	if (r->sub[s].alloc >= 0)
		mrcn_arena_free(&c->arena, r->sub[s].alloc);
	r->sub[s].alloc = -1;
	r->ndone++;
}

static void on_cqe(struct comm *c, const struct mrc_completion *e)
{
	if (e->status) {
		if (!c->err)
			c->err = e->status;
		WARN("%s completion failed: %s", mrc_cqe_op_name(e->op), mrc_strerror(e->status));
		/* A failed data WRITE_IMM's request was reported done at
		 * its post: the comm's error fails every later call. */
		if ((e->wr_id >> 32) == (MRCN_WR_DATA >> 32) ||
		    (e->wr_id >> 32) == (MRCN_WR_PIECE >> 32))
			c->data_inflight--;
		return;
	}
	switch (e->op) {
	case MRC_CQE_WRITE_IMM: {       /* a send's data arrived: its bounce room is free */
		uint32_t a = (uint32_t)e->wr_id;
		if ((e->wr_id >> 32) == (MRCN_WR_PIECE >> 32)) {
			/* a piece: its message's last WRITE_IMM frees the room */
		} else if (a != MRCN_WR_NOALLOC && (a & MRCN_WR_ZC)) {
			struct req *r = &c->reqs[a & ~MRCN_WR_ZC & (MRCN_MAX_REQS - 1)];
			r->ndone = r->n;    /* its buffer is NCCL's again */
		} else if (a != MRCN_WR_NOALLOC) {
			mrcn_arena_free(&c->arena, (int)a);
		}
		c->data_inflight--;
		break;
	}
	case MRC_CQE_RECV:              /* a CTS or the eager advertisement arrived */
		cts_arrived(c, e);
		break;
	case MRC_CQE_RECV_WRITE_IMM:    /* data landed */
		data_arrived(c, e);
		break;
	default:                        /* our CTS and advertisement SENDs */
		if (e->wr_id == MRCN_WR_EGR) {
			c->egr_busy = 0;
		} else if ((e->wr_id >> 32) == (MRCN_WR_CTS >> 32) &&
			   (e->wr_id & 0xffffffffu) < MRCN_NCTS) {
			int id = (int)(e->wr_id & 0xffffffffu);
			c->cts_busy[id] = 0;
			mrcn_id_release(c, id);
		}
		break;
	}
}

int mrcn_progress(struct comm *c)
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
	/* Credits ride on CTSs, else a message of their own in batches; a
	 * full ring sends the deferred receives' CTSs. */
	int r = mrcn_eg_check(c);
	if (r && !c->err)
		c->err = r;
	return c->err;
}

int mrcn_send_drain(struct comm *c, int ms)
{
	int64_t end = mrc__mono_ms() + ms;
	while (c->data_inflight > 0 && !c->err && mrc__mono_ms() < end) {
		if (mrcn_progress(c))
			break;
		if (c->data_inflight > 0)
			mrc_wait(c->qp, 10);
	}
	return c->data_inflight > 0 ? -ETIMEDOUT : 0;
}

ncclResult_t mrcn_comm_failed(struct comm *c, const char *what)
{
	WARN("%s: the connection to host %u failed: %s", what, c->host, mrc_strerror(c->err));
	return ncclRemoteError;
}

/* Nothing is ever left to flush: host buffers are written by the CPU, and
 * CUDA buffers by a device copy that test waited for (its event) before
 * it reported the receive done, so the data is visible to every later
 * GPU operation by then.  A NULL request means "done at once" to NCCL,
 * as net_ib returns when it needs no flush. */
ncclResult_t mrcn_iflush(void *recvComm, int n, void **data, int *sizes,
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

ncclResult_t mrcn_test(void *request, int *done, int *sizes)
{
	struct req *r = request;
	struct comm *c = r->c;
	*done = 0;
	if (mrcn_progress(c) && r->ndone < r->n)
		return mrcn_comm_failed(c, "test");
	if (r->err) {
		WARN("request failed: %s", mrc_strerror(r->err));
		r->used = 0;
		return r->cuda_fail ? ncclUnhandledCudaError
		       : r->err == -EMSGSIZE ? ncclInvalidUsage : ncclRemoteError;
	}
	if (r->ndone < r->n)
		return ncclSuccess;
	*done = 1;
	MRC_TRACE(MRC_TR_N_TEST_DONE, TRC(c), (uint64_t)(r - c->reqs), c->kind == K_SEND);
	if (sizes)
		for (int i = 0; i < r->n; i++)
			sizes[i] = (int)(c->kind == K_SEND ? r->sub[i].size : r->sub[i].got);
	r->used = 0;
	return ncclSuccess;
}

/* The comm's counters (struct mrcn_stats), for tests: the test build of
 * the plugin (tests/support/nccl_fake.map) exports it, the real one only
 * its tables.  Called on NCCL's (the test's) thread; polls the comm's
 * completions first, as test does. */
int mrcn_comm_stats(void *comm, struct mrcn_stats *out);
__attribute__((visibility("default"))) int mrcn_comm_stats(void *comm, struct mrcn_stats *out)
{
	struct comm *c = comm;
	if (!c || (c->kind != K_SEND && c->kind != K_RECV))
		return -EINVAL;
	mrcn_progress(c);
	*out = c->st;
	out->ring_slots = c->eg_slots;
	return 0;
}
