/* Schedules: which chunk goes where, as a list of steps per rank
 * (coll_int.h).  Pure functions of (n, rank, sizes), so the tests run all
 * ranks' schedules against each other in memory, without a network. */
#include <errno.h>
#include <stdlib.h>

#include "coll/coll_int.h"

void mrc__coll_sched_free(struct mrc__coll_sched *s)
{
	free(s->s);
	*s = (struct mrc__coll_sched){ 0 };
}

static int64_t add(struct mrc__coll_sched *s, struct mrc__coll_step st)
{
	if (s->err)
		return -1;
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 64;
		struct mrc__coll_step *p = realloc(s->s, cap * sizeof(*p));
		if (!p) {
			s->err = -ENOMEM;
			return -1;
		}
		s->s = p;
		s->cap = cap;
	}
	s->s[s->n] = st;
	return (int64_t)s->n++;
}

void mrc__coll_seg(size_t count, uint32_t n, uint32_t r, size_t *first, size_t *len)
{
	size_t q = count / n, rem = count % n;
	*first = (size_t)r * q + (r < rem ? r : rem);
	*len = q + (r < rem);
}

static uint32_t mod(int64_t a, uint32_t n)
{
	int64_t m = a % (int64_t)n;
	return (uint32_t)(m < 0 ? m + n : m);
}

/* Chunks of one segment of len bytes. */
static size_t nchunks(uint64_t len, size_t chunk)
{
	return (size_t)((len + chunk - 1) / chunk);
}

/* A ring pass: n-1 steps; at step t this rank sends segment
 * sendseg(t) to the right neighbour and receives segment sendseg(t) - 1
 * from the left one (what the left neighbour sends at the same step).
 * The send of chunk c at step t > 0 waits for the receive of chunk c at
 * step t-1 (the same segment: the ring carries it on).  prev[] holds
 * those receive indices between calls and may come from an earlier pass
 * (reduce-scatter then all-gather). */
struct ring_pass {
	uint32_t n, me;
	size_t count, esz, chunk;
	int64_t first_sendseg;     /* sendseg(t) = first_sendseg - t */
	uint8_t send_src_first;    /* buffer of the step-0 send */
	uint8_t send_src;          /* buffer of later sends */
	uint8_t reduce;            /* receives combine (dst = in op chunk) */
	/* Buffer and byte offset where segment s lives: in the caller's
	 * buffers, segments are at their element offsets (base_* = 0, whole
	 * layout); reduce-scatter keeps its partial sums in SB_TMP. */
	uint8_t (*dst_of)(const struct ring_pass *, uint32_t seg, uint32_t t);
	uint64_t (*off_of)(const struct ring_pass *, uint8_t buf, uint32_t seg);
};

static uint64_t seg_off_whole(const struct ring_pass *p, uint8_t buf, uint32_t seg)
{
	size_t first, len;
	mrc__coll_seg(p->count, p->n, seg, &first, &len);
	return (uint64_t)first * p->esz;
}

static void ring_pass(struct mrc__coll_sched *s, const struct ring_pass *p, int64_t *prev,
		      size_t maxch)
{
	for (uint32_t t = 0; t + 1 < p->n; t++) {
		uint32_t sseg = mod(p->first_sendseg - t, p->n), rseg = mod(p->first_sendseg - t - 1, p->n);
		size_t f, slen, rlen;
		mrc__coll_seg(p->count, p->n, sseg, &f, &slen);
		mrc__coll_seg(p->count, p->n, rseg, &f, &rlen);
		uint64_t sb = slen * p->esz, rb = rlen * p->esz;
		uint8_t sbuf = t == 0 ? p->send_src_first : p->send_src;
		uint8_t rdst = p->dst_of(p, rseg, t);
		/* Interleaved chunk by chunk, so chunk c travels on while chunk
		 * c+1 of the same step is still arriving. */
		for (size_t c = 0; c < maxch; c++) {
			uint64_t o = (uint64_t)c * p->chunk;
			if (o < sb) {
				uint64_t len = sb - o < p->chunk ? sb - o : p->chunk;
				add(s, (struct mrc__coll_step){ .kind = SK_SEND, .src = sbuf, .dst = SB_NONE,
					.peer = mod((int64_t)p->me + 1, p->n),
					.src_off = p->off_of(p, sbuf, sseg) + o, .len = len,
					.dep = t == 0 && sbuf != p->send_src ? -1 : prev[c] });
			}
			/* prev[c] was read by this chunk's send just above. */
			prev[c] = -1;
			if (o < rb) {
				uint64_t len = rb - o < p->chunk ? rb - o : p->chunk;
				prev[c] = add(s, (struct mrc__coll_step){ .kind = SK_RECV,
					.src = p->reduce ? SB_IN : SB_NONE, .dst = rdst,
					.reduce = p->reduce, .peer = mod((int64_t)p->me - 1, p->n),
					.src_off = p->reduce ? seg_off_whole(p, SB_IN, rseg) + o : 0,
					.dst_off = p->off_of(p, rdst, rseg) + o, .len = len, .dep = -1 });
			}
		}
	}
}

static size_t max_chunks(size_t count, uint32_t n, size_t esz, size_t chunk)
{
	size_t f, len;
	mrc__coll_seg(count, n, 0, &f, &len);   /* segment 0 is the largest */
	return nchunks((uint64_t)len * esz, chunk);
}

/* Per chunk index: the receive step the next send of that chunk waits for. */
static int64_t *prev_new(size_t mc)
{
	int64_t *p = malloc((mc ? mc : 1) * sizeof(*p));
	for (size_t i = 0; p && i < (mc ? mc : 1); i++)
		p[i] = -1;
	return p;
}

static uint8_t dst_out(const struct ring_pass *p, uint32_t seg, uint32_t t)
{
	return SB_OUT;
}

int mrc__coll_sched_allreduce_ring(struct mrc__coll_sched *s, uint32_t n, uint32_t me, size_t count,
			      size_t esz, size_t chunk)
{
	*s = (struct mrc__coll_sched){ 0 };
	if (n == 1) {
		add(s, (struct mrc__coll_step){ .kind = SK_COPY, .src = SB_IN, .dst = SB_OUT,
						.len = (uint64_t)count * esz, .dep = -1 });
		return s->err;
	}
	size_t mc = max_chunks(count, n, esz, chunk);
	int64_t *prev = prev_new(mc);
	if (!prev)
		return -ENOMEM;
	/* Reduce-scatter: rank me sends its own segment first; after n-1
	 * steps it holds the full reduction of segment me+1 in out. */
	struct ring_pass rs = { .n = n, .me = me, .count = count, .esz = esz, .chunk = chunk,
		.first_sendseg = me, .send_src_first = SB_IN, .send_src = SB_OUT, .reduce = 1,
		.dst_of = dst_out, .off_of = seg_off_whole };
	ring_pass(s, &rs, prev, mc);
	/* That segment's chunks were the last receives of the pass: the
	 * all-gather sends them on from out. */
	struct ring_pass ag = rs;
	ag.first_sendseg = me + 1;
	ag.send_src_first = SB_OUT;
	ag.reduce = 0;
	ring_pass(s, &ag, prev, mc);
	free(prev);
	return s->err;
}

/* Reduce-scatter keeps partial sums of other segments in tmp (packed by
 * segment) and writes its own segment, the last one it receives, to out. */
static uint8_t rs_dst(const struct ring_pass *p, uint32_t seg, uint32_t t)
{
	return t + 2 == p->n ? SB_OUT : SB_TMP;
}

static uint64_t rs_off(const struct ring_pass *p, uint8_t buf, uint32_t seg)
{
	if (buf == SB_OUT)
		return 0;
	return (uint64_t)seg * (p->count / p->n) * p->esz;   /* IN and TMP: block layout */
}

int mrc__coll_sched_reduce_scatter_ring(struct mrc__coll_sched *s, uint32_t n, uint32_t me,
				   size_t recvcount, size_t esz, size_t chunk)
{
	*s = (struct mrc__coll_sched){ 0 };
	if (n == 1) {
		add(s, (struct mrc__coll_step){ .kind = SK_COPY, .src = SB_IN, .dst = SB_OUT,
						.len = (uint64_t)recvcount * esz, .dep = -1 });
		return s->err;
	}
	size_t mc = nchunks((uint64_t)recvcount * esz, chunk);
	int64_t *prev = prev_new(mc);
	if (!prev)
		return -ENOMEM;
	/* Equal segments (count = n * recvcount), so seg_off_whole of the
	 * source matches the block layout. */
	struct ring_pass rs = { .n = n, .me = me, .count = (size_t)n * recvcount, .esz = esz,
		.chunk = chunk, .first_sendseg = (int64_t)me - 1, .send_src_first = SB_IN,
		.send_src = SB_TMP, .reduce = 1, .dst_of = rs_dst, .off_of = rs_off };
	s->tmp_bytes = (uint64_t)n * recvcount * esz;
	ring_pass(s, &rs, prev, mc);
	free(prev);
	return s->err;
}

int mrc__coll_sched_allgather_ring(struct mrc__coll_sched *s, uint32_t n, uint32_t me, size_t count,
			      size_t esz, size_t chunk)
{
	*s = (struct mrc__coll_sched){ 0 };
	uint64_t blk = (uint64_t)count * esz;
	add(s, (struct mrc__coll_step){ .kind = SK_COPY, .src = SB_IN, .dst = SB_OUT,
					.dst_off = me * blk, .len = blk, .dep = -1 });
	if (n == 1)
		return s->err;
	size_t mc = nchunks(blk, chunk);
	int64_t *prev = prev_new(mc);
	if (!prev)
		return -ENOMEM;
	/* Equal blocks: the whole layout of n * count elements.  The first
	 * send reads the caller's send buffer (offset 0). */
	struct ring_pass ag = { .n = n, .me = me, .count = (size_t)n * count, .esz = esz,
		.chunk = chunk, .first_sendseg = me, .send_src_first = SB_IN, .send_src = SB_OUT,
		.reduce = 0, .dst_of = dst_out, .off_of = seg_off_whole };
	ring_pass(s, &ag, prev, mc);
	/* The step-0 sends read block 0 of IN, not block me. */
	for (size_t i = 0; i < s->n && !s->err; i++)
		if (s->s[i].kind == SK_SEND && s->s[i].src == SB_IN)
			s->s[i].src_off -= me * blk;
	free(prev);
	return s->err;
}

int mrc__coll_sched_broadcast_chain(struct mrc__coll_sched *s, uint32_t n, uint32_t me, size_t count,
			       size_t esz, size_t chunk, uint32_t root)
{
	*s = (struct mrc__coll_sched){ 0 };
	uint64_t bytes = (uint64_t)count * esz;
	if (me == root)
		add(s, (struct mrc__coll_step){ .kind = SK_COPY, .src = SB_IN, .dst = SB_OUT,
						.len = bytes, .dep = -1 });
	/* A chain root -> root+1 -> ... pipelined by chunk: each rank
	 * forwards chunk c as soon as it has it. */
	uint32_t pos = mod((int64_t)me - root, n);
	for (uint64_t o = 0; o < bytes; o += chunk) {
		uint64_t len = bytes - o < chunk ? bytes - o : chunk;
		int64_t dep = -1;
		if (pos > 0)
			dep = add(s, (struct mrc__coll_step){ .kind = SK_RECV, .src = SB_NONE,
				.dst = SB_OUT, .peer = mod((int64_t)me - 1, n), .dst_off = o, .len = len,
				.dep = -1 });
		if (pos + 1 < n)
			add(s, (struct mrc__coll_step){ .kind = SK_SEND, .src = pos ? SB_OUT : SB_IN,
				.dst = SB_NONE, .peer = mod((int64_t)me + 1, n), .src_off = o, .len = len,
				.dep = dep });
	}
	return s->err;
}

int mrc__coll_sched_alltoallv(struct mrc__coll_sched *s, uint32_t n, uint32_t me,
			 const size_t *sendcounts, const size_t *sdispls, const size_t *recvcounts,
			 const size_t *rdispls, size_t esz, size_t chunk)
{
	*s = (struct mrc__coll_sched){ 0 };
	add(s, (struct mrc__coll_step){ .kind = SK_COPY, .src = SB_IN, .dst = SB_OUT,
		.src_off = sdispls[me] * esz, .dst_off = rdispls[me] * esz,
		.len = (uint64_t)sendcounts[me] * esz, .dep = -1 });
	/* Chunk-major over peers, each rank starting at its right neighbour,
	 * so all links carry traffic at once and no rank is everybody's first
	 * target. */
	for (uint64_t o = 0;; o += chunk) {
		int more = 0;
		for (uint32_t k = 1; k < n; k++) {
			uint32_t to = (me + k) % n, from = (me + n - k) % n;
			uint64_t sb = (uint64_t)sendcounts[to] * esz, rb = (uint64_t)recvcounts[from] * esz;
			if (o < sb) {
				add(s, (struct mrc__coll_step){ .kind = SK_SEND, .src = SB_IN, .dst = SB_NONE,
					.peer = to, .src_off = sdispls[to] * esz + o,
					.len = sb - o < chunk ? sb - o : chunk, .dep = -1 });
				more = 1;
			}
			if (o < rb) {
				add(s, (struct mrc__coll_step){ .kind = SK_RECV, .src = SB_NONE, .dst = SB_OUT,
					.peer = from, .dst_off = rdispls[from] * esz + o,
					.len = rb - o < chunk ? rb - o : chunk, .dep = -1 });
				more = 1;
			}
		}
		if (!more)
			break;
	}
	return s->err;
}

/* Double binary tree (as NCCL's): the data in two halves, each reduced
 * up one tree and broadcast back down it, chunk by chunk, the two trees
 * interleaved.  Tree 0 is the heap order of the ranks (children of
 * position p: 2p+1, 2p+2), tree 1 the heap order of the reversed ranks,
 * so a rank that is an interior node of one tree is mostly a leaf of the
 * other and every rank's links carry about the same load.  log2(n) steps
 * deep instead of the ring's 2(n-1): the choice for small and middle
 * sizes. */
static uint32_t tree_rank(uint32_t t, uint32_t n, uint32_t pos)
{
	return t == 0 ? pos : n - 1 - pos;
}

/* Up half of a unit: combine the children's partial sums with our input
 * and send the result to the parent; the index of the step that holds
 * our value (-1: the input itself). */
static int64_t tree_up(struct mrc__coll_sched *s, const struct mrc__tree_unit *u)
{
	int64_t last = -1;
	for (uint32_t k = 0; k < u->nchild; k++)
		last = add(s, (struct mrc__coll_step){ .kind = SK_RECV,
			.src = last < 0 ? SB_IN : SB_OUT, .dst = SB_OUT, .reduce = 1, .peer = u->child[k],
			.src_off = u->off, .dst_off = u->off, .len = u->len, .dep = last });
	if (u->parent != UINT32_MAX)
		add(s, (struct mrc__coll_step){ .kind = SK_SEND, .src = last < 0 ? SB_IN : SB_OUT,
			.dst = SB_NONE, .peer = u->parent, .src_off = u->off, .len = u->len, .dep = last });
	else if (last < 0)   /* a root without children: n == 1 in its group of trees */
		last = add(s, (struct mrc__coll_step){ .kind = SK_COPY, .src = SB_IN, .dst = SB_OUT,
			.src_off = u->off, .dst_off = u->off, .len = u->len, .dep = -1 });
	return last;
}

/* Down half: the parent's final value (the root has it from its up
 * half), sent on to the children. */
static void tree_down(struct mrc__coll_sched *s, const struct mrc__tree_unit *u)
{
	int64_t last = u->up;
	if (u->parent != UINT32_MAX)
		last = add(s, (struct mrc__coll_step){ .kind = SK_RECV, .src = SB_NONE, .dst = SB_OUT,
			.peer = u->parent, .dst_off = u->off, .len = u->len, .dep = -1 });
	for (uint32_t k = 0; k < u->nchild; k++)
		add(s, (struct mrc__coll_step){ .kind = SK_SEND, .src = SB_OUT, .dst = SB_NONE,
			.peer = u->child[k], .src_off = u->off, .len = u->len, .dep = last });
}

int mrc__coll_tree_q_init(struct mrc__tree_q *q, struct mrc__coll_sched *s, size_t ahead)
{
	*q = (struct mrc__tree_q){ .s = s, .ahead = ahead ? ahead : 1 };
	q->u = calloc(q->ahead, sizeof(*q->u));
	if (!q->u)
		s->err = -ENOMEM;
	return s->err;
}

void mrc__coll_sched_tree_chunk(struct mrc__tree_q *q, uint64_t off, uint64_t len, uint32_t parent,
			   const uint32_t *child, uint32_t nchild)
{
	if (q->s->err)
		return;
	if (q->n == q->ahead) {   /* the oldest unit's down half goes now */
		tree_down(q->s, &q->u[q->head]);
		q->head = (q->head + 1) % q->ahead;
		q->n--;
	}
	struct mrc__tree_unit *u = &q->u[(q->head + q->n++) % q->ahead];
	*u = (struct mrc__tree_unit){ .off = off, .len = len, .parent = parent, .nchild = nchild };
	for (uint32_t k = 0; k < nchild && k < 4; k++)
		u->child[k] = child[k];
	u->up = tree_up(q->s, u);
}

int mrc__coll_tree_q_flush(struct mrc__tree_q *q)
{
	for (; q->n && !q->s->err; q->n--, q->head = (q->head + 1) % q->ahead)
		tree_down(q->s, &q->u[q->head]);
	free(q->u);
	q->u = NULL;
	return q->s->err;
}

int mrc__coll_sched_allreduce_tree(struct mrc__coll_sched *s, uint32_t n, uint32_t me, size_t count,
			      size_t esz, size_t chunk)
{
	*s = (struct mrc__coll_sched){ 0 };
	if (n == 1) {
		add(s, (struct mrc__coll_step){ .kind = SK_COPY, .src = SB_IN, .dst = SB_OUT,
						.len = (uint64_t)count * esz, .dep = -1 });
		return s->err;
	}
	size_t first[2], len[2];
	mrc__coll_seg(count, 2, 0, &first[0], &len[0]);
	mrc__coll_seg(count, 2, 1, &first[1], &len[1]);
	struct mrc__tree_q q;
	if (mrc__coll_tree_q_init(&q, s, 2 * MRC__TREE_AHEAD))
		return s->err;
	for (uint64_t o = 0; o < (uint64_t)len[0] * esz; o += chunk)
		for (uint32_t t = 0; t < 2; t++) {
			uint64_t bytes = (uint64_t)len[t] * esz;
			if (o >= bytes)
				continue;
			uint64_t off = (uint64_t)first[t] * esz + o, l = bytes - o < chunk ? bytes - o : chunk;
			uint32_t pos = t == 0 ? me : n - 1 - me, child[2], nc = 0;
			for (uint32_t k = 1; k <= 2 && 2 * pos + k < n; k++)
				child[nc++] = tree_rank(t, n, 2 * pos + k);
			mrc__coll_sched_tree_chunk(&q, off, l, pos ? tree_rank(t, n, (pos - 1) / 2) : UINT32_MAX,
					      child, nc);
		}
	return mrc__coll_tree_q_flush(&q);
}
