/* Non-blocking collectives and MoE calls (coll/req.c, mrc/coll.h
 * "Non-blocking calls") against a real mrcd on the loopback fabric, 4
 * ranks as threads of this process (tests/support/coll_ranks.h):
 *   - overlap: a seeded sequence of every collective (and the 2-D
 *     all-to-allv) started all at once, then tested in a random order
 *     between slices of "compute", equals the same calls made blocking,
 *     byte for byte; over QPs, shared memory, and QPs pinned to 2 planes;
 *   - MoE dispatch and combine started non-blocking with all-reduces in
 *     flight around them equal the blocking ones byte for byte;
 *   - order: calls complete in the order they were started;
 *   - the in-flight bound: -EAGAIN, nothing started, and a blocking call
 *     waiting for room;
 *   - errors: an abort on one rank completes every request in flight on
 *     the others with an error, and a rank that leaves with requests in
 *     flight (its own complete with -ECANCELED) fails the others' within
 *     the no-progress bound; a rank that hangs: requests only tested (never
 *     waited on) complete with -ETIMEDOUT within the bound; none hangs.
 * Seeded (MRC_TEST_SEED replays; the seed is printed).  Skipped when
 * build/bin/mrcd has not been built. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "tests/support/mrcd_spawn.h"
#include "tests/support/coll_ranks.h"
#include "tests/support/skip.h"
#include "tests/support/seeded.h"
#include "tests/support/coll_nb.h"

#include "coll/coll_int.h"
#include "common/clock.h"

#define NEED_DAEMON() MRCD_GROUP_NEED()
#define TIMEOUT_MS 3000
#define NOPS 16

/* The "compute" between tests: a busy loop of about us microseconds. */
#define compute coll_nb_compute

/* ---- overlap -------------------------------------------------------------- */

enum { K_AR, K_RS, K_AG, K_BC, K_A2A, K_A2A2D, K_BARRIER, K_N };
struct op {
	int kind, dt, op, inplace;
	size_t count;
	uint32_t root;
	size_t inb, outb;
	uint8_t *in, *ref, *out;   /* input, blocking result, non-blocking result */
	size_t *v;                 /* 2-D: sc, sd, rc, rd */
};

/* The same sequence on every rank (the case seed), inputs per rank. */
static void ops_make(struct op *o, uint32_t n, uint32_t me, uint64_t seed)
{
	struct mrc_rng g, d;
	mrc_rng_seed(&g, seed);
	mrc_rng_seed(&d, seed * 31 + me + 1);
	for (int i = 0; i < NOPS; i++) {
		struct op *x = &o[i];
		*x = (struct op){ .kind = (int)mrc_rng_below(&g, K_N),
				  .dt = (int)mrc_rng_below(&g, MRC_COLL_NTYPES),
				  .op = (int)mrc_rng_below(&g, MRC_COLL_NOPS),
				  .root = (uint32_t)mrc_rng_below(&g, n) };
		/* 0, 1, a few, or many chunks (the tests' chunk is 4 KiB) */
		static const size_t sizes[] = { 0, 1, 9, 1000, 40000, 150001 };
		x->count = sizes[mrc_rng_below(&g, 6)];
		x->inplace = (x->kind == K_AR || x->kind == K_AG || x->kind == K_BC) &&
			     mrc_rng_below(&g, 2);
		size_t esz = mrc_coll_dtype_size(x->dt), cin = x->count, cout = x->count;
		switch (x->kind) {
		case K_RS: cin = n * x->count; break;
		case K_AG: cout = n * x->count; break;
		case K_A2A: case K_A2A2D: cin = cout = n * x->count; break;
		case K_BARRIER: cin = cout = 0; break;
		}
		x->inb = cin * esz, x->outb = cout * esz;
		x->in = malloc(x->inb + 1), x->ref = malloc(x->outb + 1), x->out = malloc(x->outb + 1);
		for (size_t e = 0; e < cin; e++)   /* small integers: no NaN, no overflow in float */
			mrc__coll_put(x->in, x->dt, e, (double)(int)mrc_rng_below(&d, 7) - 3);
		if (x->kind == K_A2A2D) {
			/* uneven counts, some zero: rank me sends (me + j) % 3 * count / 2 to j */
			x->v = calloc(4 * n, sizeof(*x->v));
			for (uint32_t j = 0; j < n; j++) {
				x->v[j] = (me + j) % 3 * x->count / 2;
				x->v[2 * n + j] = (j + me) % 3 * x->count / 2;
				x->v[n + j] = j * x->count, x->v[3 * n + j] = j * x->count;
			}
		}
	}
}

static void ops_free(struct op *o)
{
	for (int i = 0; i < NOPS; i++)
		free(o[i].in), free(o[i].ref), free(o[i].out), free(o[i].v);
}

/* Op i into dst (in place: the input copied into dst first); req NULL:
 * blocking. */
static int op_call(struct mrc_coll *c, struct op *x, uint8_t *dst, struct mrc_coll_req **req)
{
	uint32_t n = mrc_coll_size(c), me = mrc_coll_rank(c);
	size_t esz = mrc_coll_dtype_size(x->dt);
	memset(dst, 0xa5, x->outb);
	const uint8_t *src = x->in;
	if (x->inplace) {
		/* NCCL's in-place layouts (mrc/coll.h) */
		if (x->kind == K_AG) {
			memcpy(dst + me * x->count * esz, x->in, x->inb);
			src = dst + me * x->count * esz;
		} else if (x->kind == K_RS) {
			return -EINVAL;   /* not generated */
		} else {
			memcpy(dst, x->in, x->inb);
			src = dst;
		}
	}
	uint8_t *s = (uint8_t *)src;
	switch (x->kind) {
	case K_AR:
		return req ? mrc_coll_iallreduce(c, s, dst, x->count, x->dt, x->op, req)
			   : mrc_coll_allreduce(c, s, dst, x->count, x->dt, x->op);
	case K_RS:
		return req ? mrc_coll_ireduce_scatter(c, s, dst, x->count, x->dt, x->op, req)
			   : mrc_coll_reduce_scatter(c, s, dst, x->count, x->dt, x->op);
	case K_AG:
		return req ? mrc_coll_iallgather(c, s, dst, x->count, x->dt, req)
			   : mrc_coll_allgather(c, s, dst, x->count, x->dt);
	case K_BC:
		return req ? mrc_coll_ibroadcast(c, s, dst, x->count, x->dt, x->root, req)
			   : mrc_coll_broadcast(c, s, dst, x->count, x->dt, x->root);
	case K_A2A:
		return req ? mrc_coll_ialltoall(c, s, dst, x->count, x->dt, req)
			   : mrc_coll_alltoall(c, s, dst, x->count, x->dt);
	case K_A2A2D: {
		const size_t *v = x->v;
		return req ? mrc_coll_ialltoallv_2d(c, 2, s, v, v + n, dst, v + 2 * n, v + 3 * n, x->dt,
						    req)
			   : mrc_coll_alltoallv_2d(c, 2, s, v, v + n, dst, v + 2 * n, v + 3 * n, x->dt);
	}
	default:
		return req ? mrc_coll_ibarrier(c, req) : mrc_coll_barrier(c);
	}
}

struct overlap_arg {
	uint64_t seed;
	uint32_t peak[4];          /* most calls seen in flight at once, per rank */
};

struct overlap_start {
	struct mrc_coll *c;
	struct op *o;
};

static int overlap_start(void *arg, size_t i, struct mrc_coll_req **q)
{
	struct overlap_start *st = arg;
	return op_call(st->c, &st->o[i], st->o[i].out, q);
}

static int body_overlap(struct coll_rank *r)
{
	struct overlap_arg *a = r->arg;
	struct mrc_coll *c = r->c;
	uint32_t n = mrc_coll_size(c), me = mrc_coll_rank(c);
	struct op o[NOPS];
	ops_make(o, n, me, a->seed);
	int rc = 0;
	for (int i = 0; i < NOPS && !rc; i++)
		rc = op_call(c, &o[i], o[i].ref, NULL);
	/* All at once, then tested in a random order (this rank's) between
	 * slices of compute. */
	int res[NOPS];
	struct mrc_rng g;
	mrc_rng_seed(&g, a->seed ^ (me + 77));
	struct overlap_start st = { .c = c, .o = o };
	if (!rc)
		rc = coll_nb_run(c, NOPS, overlap_start, &st, &g, 50, res, &a->peak[me]);
	for (int i = 0; i < NOPS && !rc; i++) {
		if (res[i] || memcmp(o[i].ref, o[i].out, o[i].outb)) {
			size_t e = 0, esz = mrc_coll_dtype_size(o[i].dt);
			while (e * esz < o[i].outb &&
			       !memcmp(o[i].ref + e * esz, o[i].out + e * esz, esz))
				e++;
			snprintf(r->why, sizeof(r->why),
				 "op %d (kind %d %s %s count %zu%s): rc %d, element %zu differs from the blocking call's",
				 i, o[i].kind, mrc_coll_dtype_name(o[i].dt), mrc_coll_op_name(o[i].op),
				 o[i].count, o[i].inplace ? " in place" : "", res[i], e);
			r->wrong++;
		}
	}
	ops_free(o);
	return rc;
}

static void overlap_run(const char *what, uint32_t planes)
{
	struct coll_rank R[4];
	for (int k = 0; k < 3; k++) {
		struct overlap_arg a = { .seed = rnd() };
		coll_ranks_opts.planes = planes;
		coll_ranks_run(R, 4, body_overlap, 4096, &a);
		coll_ranks_opts.planes = 0;
		for (uint32_t i = 0; i < 4; i++)
			CHECK(!R[i].rc && !R[i].wrong, "%s, case seed %llu: rank %u: %s (%s)", what,
			      (unsigned long long)a.seed, i, strerror(-R[i].rc), R[i].why);
		/* Several really were in flight at once (the last started
		 * cannot have completed before the first's peers answered). */
		for (uint32_t i = 0; i < 4; i++)
			CHECK(a.peak[i] >= 2, "%s: rank %u had at most %u calls in flight", what, i,
			      a.peak[i]);
	}
}

static void test_overlap_qp(void **state)
{
	NEED_DAEMON();
	setenv("MRC_COLL_SHM", "0", 1);
	overlap_run("over QPs", 0);
}

static void test_overlap_shm(void **state)
{
	NEED_DAEMON();
	setenv("MRC_COLL_SHM", "1", 1);
	overlap_run("over shared memory", 0);
	setenv("MRC_COLL_SHM", "0", 1);
}

/* The all-to-alls spread over QPs pinned to 2 planes (loopback has one:
 * the plane-1 QPs fall back to it). */
static void test_overlap_planes(void **state)
{
	NEED_DAEMON();
	setenv("MRC_COLL_SHM", "0", 1);
	overlap_run("over 2 plane-pinned QP sets", 2);
}

/* ---- MoE -------------------------------------------------------------------- */

struct moe_arg {
	uint64_t seed;
	uint32_t L;
};

/* One layer: dispatch, the experts (x (global expert + 1)), combine;
 * nb: started non-blocking with all-reduces in flight around them.
 * out: the combine's; ein: a copy of the experts' input. */
static int moe_layer(struct mrc_coll *c, const struct mrc_coll_moe_cfg *cfg, size_t T,
		     const int32_t *idx, const float *w, const void *x, int nb, float *ar,
		     size_t arn, void *out, void **ein_copy, size_t *ein_bytes)
{
	uint32_t n = mrc_coll_size(c), me = mrc_coll_rank(c), epr = cfg->n_experts / n;
	size_t H = cfg->hidden, counts[8];
	struct mrc_coll_moe_plan *plan = NULL;
	void *ein = NULL;
	struct mrc_coll_req *q[4] = { 0 };
	int rc;
	if (nb) {
		if ((rc = mrc_coll_iallreduce(c, ar, ar, arn, MRC_COLL_FLOAT32, MRC_COLL_SUM, &q[0])) ||
		    (rc = mrc_coll_moe_idispatch(c, cfg, T, idx, w, x, &plan, &ein, counts, &q[1])) ||
		    (rc = mrc_coll_iallreduce(c, ar + arn, ar + arn, arn, MRC_COLL_FLOAT32,
					      MRC_COLL_SUM, &q[2])))
			goto out;
		while ((rc = mrc_coll_test(q[1])) == -EINPROGRESS)
			compute(20);
		q[1] = NULL;
	} else {
		if ((rc = mrc_coll_allreduce(c, ar, ar, arn, MRC_COLL_FLOAT32, MRC_COLL_SUM)) ||
		    (rc = mrc_coll_moe_dispatch(c, cfg, T, idx, w, x, &plan, &ein, counts)) ||
		    (rc = mrc_coll_allreduce(c, ar + arn, ar + arn, arn, MRC_COLL_FLOAT32,
					     MRC_COLL_SUM)))
			goto out;
	}
	if (rc)
		goto out;
	size_t rows = 0;
	for (uint32_t e = 0; e < epr; e++)
		rows += counts[e];
	*ein_bytes = rows * H * 4;
	*ein_copy = malloc(*ein_bytes + 1);
	memcpy(*ein_copy, ein, *ein_bytes);
	size_t row = 0;
	for (uint32_t e = 0; e < epr; e++)
		for (size_t i = 0; i < counts[e]; i++, row++)
			for (size_t h = 0; h < H; h++)
				((float *)ein)[row * H + h] *= (float)(me * epr + e + 1);
	if (nb) {
		if ((rc = mrc_coll_moe_icombine(c, plan, ein, out, &q[3])))
			goto out;
		rc = mrc_coll_waitall(q, 4);
	} else {
		rc = mrc_coll_moe_combine(c, plan, ein, out);
	}
out:
	if (rc)
		mrc_coll_waitall(q, 4);
	mrc_coll_moe_plan_free(plan);
	free(ein);
	return rc;
}

static int body_moe(struct coll_rank *r)
{
	struct moe_arg *a = r->arg;
	struct mrc_coll *c = r->c;
	uint32_t n = mrc_coll_size(c), me = mrc_coll_rank(c);
	struct mrc_coll_moe_cfg cfg = { .n_experts = 8, .top_k = 2, .hidden = 64,
					.dtype = MRC_COLL_FLOAT32, .capacity_factor = 1.25,
					.local_ranks = a->L };
	size_t T = 50 + me * 3, H = cfg.hidden, arn = 30000;
	struct mrc_rng g;
	mrc_rng_seed(&g, a->seed + me);
	int32_t *idx = malloc(T * 2 * sizeof(*idx));
	float *w = malloc(T * 2 * sizeof(*w)), *x = malloc(T * H * 4);
	float *ar[2] = { malloc(2 * arn * 4), malloc(2 * arn * 4) };
	void *out[2] = { malloc(T * H * 4), malloc(T * H * 4) }, *ein[2] = { 0 };
	size_t eb[2] = { 0 };
	for (size_t t = 0; t < T; t++) {
		idx[2 * t] = (int32_t)mrc_rng_below(&g, 8);
		do
			idx[2 * t + 1] = (int32_t)mrc_rng_below(&g, 8);
		while (idx[2 * t + 1] == idx[2 * t]);
		w[2 * t] = 0.25f * (float)(1 + mrc_rng_below(&g, 3));
		w[2 * t + 1] = 0.25f;
	}
	for (size_t i = 0; i < T * H; i++)
		x[i] = (float)((int)mrc_rng_below(&g, 9) - 4);
	for (size_t i = 0; i < 2 * arn; i++)
		ar[0][i] = ar[1][i] = (float)((int)mrc_rng_below(&g, 5) - 2);
	int rc = moe_layer(c, &cfg, T, idx, w, x, 0, ar[0], arn, out[0], &ein[0], &eb[0]);
	if (!rc)
		rc = moe_layer(c, &cfg, T, idx, w, x, 1, ar[1], arn, out[1], &ein[1], &eb[1]);
	(void)n;
	if (!rc && (eb[0] != eb[1] || memcmp(ein[0], ein[1], eb[0]) ||
		    memcmp(out[0], out[1], T * H * 4) || memcmp(ar[0], ar[1], 2 * arn * 4))) {
		snprintf(r->why, sizeof(r->why), "L=%u: the non-blocking layer differs (experts' input %s, output %s, all-reduces %s)",
			 a->L, eb[0] != eb[1] || memcmp(ein[0], ein[1], eb[0]) ? "differs" : "same",
			 memcmp(out[0], out[1], T * H * 4) ? "differs" : "same",
			 memcmp(ar[0], ar[1], 2 * arn * 4) ? "differ" : "same");
		r->wrong = 1;
	}
	free(idx), free(w), free(x), free(ar[0]), free(ar[1]), free(out[0]), free(out[1]);
	free(ein[0]), free(ein[1]);
	return rc;
}

static void test_moe(void **state)
{
	NEED_DAEMON();
	setenv("MRC_COLL_SHM", "0", 1);
	struct coll_rank R[4];
	for (uint32_t L = 0; L <= 2; L += 2) {   /* flat, and 2-D with nodes of 2 */
		struct moe_arg a = { .seed = rnd(), .L = L };
		coll_ranks_run(R, 4, body_moe, 4096, &a);
		for (uint32_t i = 0; i < 4; i++)
			CHECK(!R[i].rc && !R[i].wrong, "MoE L=%u, case seed %llu: rank %u: %s (%s)", L,
			      (unsigned long long)a.seed, i, strerror(-R[i].rc), R[i].why);
	}
}

/* ---- order and the bound ------------------------------------------------- */

/* A large all-reduce, a small one, a barrier, started in that order and
 * the small one tested alone: when it completes, the large one started
 * before it has completed too (and is right); the barrier after it has
 * not been needed for either. */
static int body_order(struct coll_rank *r)
{
	struct mrc_coll *c = r->c;
	uint32_t n = mrc_coll_size(c), me = mrc_coll_rank(c);
	size_t N = 1 << 20;
	float *big = malloc(N * 4);
	int32_t one = (int32_t)me;
	mrc__coll_fill(MRC__C_ALLREDUCE, big, n, me, N, MRC_COLL_FLOAT32, MRC_COLL_SUM, 0);
	struct mrc_coll_req *q[3];
	uint64_t base = c->req_done;
	int rc = mrc_coll_iallreduce(c, big, big, N, MRC_COLL_FLOAT32, MRC_COLL_SUM, &q[0]);
	if (!rc)
		rc = mrc_coll_iallreduce(c, &one, &one, 1, MRC_COLL_INT32, MRC_COLL_SUM, &q[1]);
	if (!rc)
		rc = mrc_coll_ibarrier(c, &q[2]);
	if (rc)
		return rc;
	int polls = 0;
	while ((rc = mrc_coll_test(q[1])) == -EINPROGRESS)
		polls++;
	if (rc)
		return rc;
	uint64_t done = c->req_done - base;
	if (done != 2 || mrc_coll_inflight(c) > 1) {
		snprintf(r->why, sizeof(r->why), "the second completed with %llu done, %u in flight",
			 (unsigned long long)done, mrc_coll_inflight(c));
		return -EPROTO;
	}
	/* The first is already complete: its test needs no progress. */
	if ((rc = mrc_coll_test(q[0])) || (rc = mrc_coll_wait(q[2])))
		return rc;
	r->wrong = mrc__coll_wrong(MRC__C_ALLREDUCE, big, n, me, N, MRC_COLL_FLOAT32, MRC_COLL_SUM, 0);
	if (one != (int32_t)(n * (n - 1) / 2))
		r->wrong++;
	free(big);
	if (!polls) {   /* the small one was in flight behind the large one */
		snprintf(r->why, sizeof(r->why), "no poll saw it in flight");
		return -EPROTO;
	}
	return 0;
}

static void test_order(void **state)
{
	NEED_DAEMON();
	setenv("MRC_COLL_SHM", "0", 1);
	struct coll_rank R[4];
	coll_ranks_run(R, 4, body_order, 0, NULL);
	coll_ranks_check_ok(R, 4);
}

static int body_bound(struct coll_rank *r)
{
	struct mrc_coll *c = r->c;
	uint32_t n = mrc_coll_size(c), me = mrc_coll_rank(c);
	size_t N = 100000;
	float *x[3];
	for (int i = 0; i < 3; i++) {
		x[i] = malloc(N * 4);
		mrc__coll_fill(MRC__C_ALLREDUCE, x[i], n, me, N, MRC_COLL_FLOAT32, MRC_COLL_SUM, 0);
	}
	if (mrc_coll_set_max_inflight(c, 0) != -EINVAL ||
	    mrc_coll_set_max_inflight(c, MRC_COLL_MAX_INFLIGHT + 1) != -EINVAL ||
	    mrc_coll_set_max_inflight(c, 2))
		return -EINVAL;
	struct mrc_coll_req *q[3] = { 0 };
	int rc = mrc_coll_iallreduce(c, x[0], x[0], N, MRC_COLL_FLOAT32, MRC_COLL_SUM, &q[0]);
	if (!rc)
		rc = mrc_coll_iallreduce(c, x[1], x[1], N, MRC_COLL_FLOAT32, MRC_COLL_SUM, &q[1]);
	if (rc)
		return rc;
	/* Both need the peers: still in flight.  A third is refused, nothing
	 * started. */
	uint64_t started = c->req_started;
	struct mrc_coll_req *z = (struct mrc_coll_req *)1;
	if (mrc_coll_inflight(c) != 2 ||
	    mrc_coll_iallreduce(c, x[2], x[2], N, MRC_COLL_FLOAT32, MRC_COLL_SUM, &z) != -EAGAIN ||
	    z != NULL || c->req_started != started) {
		snprintf(r->why, sizeof(r->why), "in flight %u, third not refused with nothing started",
			 mrc_coll_inflight(c));
		return -EPROTO;
	}
	/* A blocking call waits for room (the first completes), then runs. */
	if ((rc = mrc_coll_barrier(c)))
		return rc;
	if ((rc = mrc_coll_iallreduce(c, x[2], x[2], N, MRC_COLL_FLOAT32, MRC_COLL_SUM, &q[2])) ||
	    (rc = mrc_coll_waitall(q, 3)))
		return rc;
	for (int i = 0; i < 3; i++) {
		r->wrong += mrc__coll_wrong(MRC__C_ALLREDUCE, x[i], n, me, N, MRC_COLL_FLOAT32,
					    MRC_COLL_SUM, 0);
		free(x[i]);
	}
	/* Bad arguments: refused at the start, nothing queued. */
	if (mrc_coll_iallreduce(c, x, x, 1, MRC_COLL_NTYPES, MRC_COLL_SUM, &q[0]) != -EINVAL ||
	    mrc_coll_iallreduce(c, x, x, 1, MRC_COLL_INT32, MRC_COLL_SUM, NULL) != -EINVAL ||
	    mrc_coll_ibroadcast(c, x, x, 1, MRC_COLL_INT32, n, &q[0]) != -EINVAL ||
	    mrc_coll_inflight(c) != 0 || mrc_coll_test(NULL) != -EINVAL)
		return -EPROTO;
	return 0;
}

static void test_bound(void **state)
{
	NEED_DAEMON();
	setenv("MRC_COLL_SHM", "0", 1);
	struct coll_rank R[4];
	coll_ranks_run(R, 4, body_bound, 0, NULL);
	coll_ranks_check_ok(R, 4);
}

/* ---- errors ------------------------------------------------------------ */

struct fail_arg {
	int64_t t0;
	int rcs[4][4];             /* each rank's requests' results */
};

/* Four in-place float32 all-reduces of count elements each, at x. */
struct ar_start {
	struct mrc_coll *c;
	float *x;
	size_t count;
};

static int ar_start(void *arg, size_t i, struct mrc_coll_req **q)
{
	struct ar_start *st = arg;
	float *b = st->x + i * st->count;
	return mrc_coll_iallreduce(st->c, b, b, st->count, MRC_COLL_FLOAT32, MRC_COLL_SUM, q);
}

/* Rank 1 aborts instead of starting the calls; the others have four in
 * flight, each completes with -ECONNABORTED (the abort message, well
 * inside the no-progress bound), none with 0. */
static int body_abort(struct coll_rank *r)
{
	static float x[4][4][65536];
	struct fail_arg *a = r->arg;
	struct mrc_coll *c = r->c;
	uint32_t me = mrc_coll_rank(c);
	/* A rank still finishing the barrier when the fault comes fails
	 * there: its calls fail with it. */
	int rc = mrc_coll_barrier(c);
	for (int i = 0; rc && i < 4; i++)
		a->rcs[me][i] = rc;
	if (rc)
		return rc;
	if (me == 1) {
		a->t0 = mrcd_spawn_now_ms();
		return mrc_coll_abort(c, -ECANCELED);
	}
	struct ar_start st = { .c = c, .x = x[me][0], .count = 65536 };
	struct mrc_rng g;
	mrc_rng_seed(&g, g_seed + me);
	coll_nb_run(c, 4, ar_start, &st, &g, 0, a->rcs[me], NULL);
	return a->rcs[me][3];
}

static void test_abort_fails_all(void **state)
{
	NEED_DAEMON();
	setenv("MRC_COLL_SHM", "0", 1);
	struct coll_rank R[4];
	struct fail_arg a = { 0 };
	coll_ranks_opts.timeout_ms = TIMEOUT_MS;
	coll_ranks_run(R, 4, body_abort, 0, &a);
	coll_ranks_opts.timeout_ms = 30000;
	assert_int_equal(R[1].rc, -ECANCELED);   /* the abort happened */
	for (uint32_t i = 0; i < 4; i++) {
		if (i == 1)
			continue;
		for (int k = 0; k < 4; k++)
			CHECK(a.rcs[i][k] == -ECONNABORTED, "rank %u request %d: %s", i, k,
			      strerror(-a.rcs[i][k]));
		print_message("rank %u: every request failed %lld ms after the abort\n", i,
			      (long long)(R[i].t_end - a.t0));
		assert_true(R[i].t_end - a.t0 < TIMEOUT_MS / 2);
	}
}

/* Rank 2 starts two calls and destroys its communicator (its QPs go):
 * its own requests complete with -ECANCELED; every other rank's four
 * complete with an error within the bound (timeout_ms plus a delivery). */
static int body_leave(struct coll_rank *r)
{
	static float x[4][4][65536];
	struct fail_arg *a = r->arg;
	struct mrc_coll *c = r->c;
	uint32_t me = mrc_coll_rank(c);
	struct mrc_coll_req *q[4] = { 0 };
	/* A rank still finishing the barrier when the fault comes fails
	 * there: its calls fail with it. */
	int rc = mrc_coll_barrier(c);
	for (int i = 0; rc && i < 4; i++)
		a->rcs[me][i] = rc;
	if (rc)
		return rc;
	int k = me == 2 ? 2 : 4;
	for (int i = 0; i < k && !rc; i++)
		rc = mrc_coll_iallreduce(c, x[me][i], x[me][i], 65536, MRC_COLL_FLOAT32,
					 MRC_COLL_SUM, &q[i]);
	if (me == 2) {
		a->t0 = mrcd_spawn_now_ms();
		mrc_coll_destroy(c);
		r->c = NULL;
	}
	for (int i = 0; i < k; i++)
		a->rcs[me][i] = q[i] ? mrc_coll_wait(q[i]) : rc;
	return a->rcs[me][k - 1];
}

static void test_leave_fails_all(void **state)
{
	NEED_DAEMON();
	setenv("MRC_COLL_SHM", "0", 1);
	struct coll_rank R[4];
	struct fail_arg a = { 0 };
	coll_ranks_opts.timeout_ms = TIMEOUT_MS;
	coll_ranks_run(R, 4, body_leave, 0, &a);
	coll_ranks_opts.timeout_ms = 30000;
	for (int k = 0; k < 2; k++)
		CHECK(a.rcs[2][k] == -ECANCELED, "the leaver's request %d: %s", k,
		      strerror(-a.rcs[2][k]));
	for (uint32_t i = 0; i < 4; i++) {
		if (i == 2)
			continue;
		for (int k = 0; k < 4; k++)
			CHECK(a.rcs[i][k] < 0, "rank %u request %d completed without rank 2", i, k);
		print_message("rank %u: %s, %lld ms after rank 2 left\n", i, strerror(-a.rcs[i][0]),
			      (long long)(R[i].t_end - a.t0));
		assert_true(R[i].t_end - a.t0 <= TIMEOUT_MS + 1000);
	}
}

/* Rank 2 stays alive and never starts the calls (a hung process); the
 * others start four and only test them between slices of compute (no
 * wait, so nothing sleeps on the doorbells): test's own no-progress bound
 * completes them with -ETIMEDOUT (or the abort of the first to time
 * out), within timeout_ms plus a delivery. */
static int n_returned;

static int others_done(void *arg)
{
	(void)arg;
	return __atomic_load_n(&n_returned, __ATOMIC_ACQUIRE) == 3;
}

static int body_hang(struct coll_rank *r)
{
	static float x[4][4][4096];
	struct fail_arg *a = r->arg;
	struct mrc_coll *c = r->c;
	uint32_t me = mrc_coll_rank(c);
	int rc = mrc_coll_barrier(c);
	for (int i = 0; rc && i < 4; i++)
		a->rcs[me][i] = rc;
	if (rc)
		return rc;
	if (me == 2) {
		a->t0 = mrcd_spawn_now_ms();
		/* Not a synchronisation sleep: the hung rank waits (bounded)
		 * for the others to give up, so that its QPs outlive them. */
		mrcd_spawn_wait_for(others_done, NULL, 3 * TIMEOUT_MS);
		return -EOWNERDEAD;
	}
	struct ar_start st = { .c = c, .x = x[me][0], .count = 4096 };
	struct mrc_rng g;
	mrc_rng_seed(&g, g_seed + me);
	coll_nb_run(c, 4, ar_start, &st, &g, 200, a->rcs[me], NULL);
	r->t_end = mrcd_spawn_now_ms();
	__atomic_add_fetch(&n_returned, 1, __ATOMIC_RELEASE);
	return a->rcs[me][3];
}

static void test_hang_times_out(void **state)
{
	NEED_DAEMON();
	setenv("MRC_COLL_SHM", "0", 1);
	struct coll_rank R[4];
	struct fail_arg a = { 0 };
	n_returned = 0;
	coll_ranks_opts.timeout_ms = TIMEOUT_MS;
	coll_ranks_run(R, 4, body_hang, 0, &a);
	coll_ranks_opts.timeout_ms = 30000;
	assert_int_equal(R[2].rc, -EOWNERDEAD);
	int timed_out = 0;
	for (uint32_t i = 0; i < 4; i++) {
		if (i == 2)
			continue;
		for (int k = 0; k < 4; k++)
			CHECK(a.rcs[i][k] == -ETIMEDOUT || a.rcs[i][k] == -ECONNABORTED,
			      "rank %u request %d: %s", i, k, strerror(-a.rcs[i][k]));
		timed_out += a.rcs[i][0] == -ETIMEDOUT;
		print_message("rank %u: %s, %lld ms after rank 2 hung\n", i, strerror(-a.rcs[i][0]),
			      (long long)(R[i].t_end - a.t0));
		assert_true(R[i].t_end - a.t0 <= TIMEOUT_MS + 1000);
	}
	assert_true(timed_out >= 1);   /* the bound, not something else, ended it */
}

int main(void)
{
	seed_init("test_coll_nb");
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_bound, reseed),
		cmocka_unit_test_setup(test_order, reseed),
		cmocka_unit_test_setup(test_overlap_qp, reseed),
		cmocka_unit_test_setup(test_overlap_shm, reseed),
		cmocka_unit_test_setup(test_overlap_planes, reseed),
		cmocka_unit_test_setup(test_moe, reseed),
		cmocka_unit_test_setup(test_abort_fails_all, reseed),
		cmocka_unit_test_setup(test_leave_fails_all, reseed),
		cmocka_unit_test_setup(test_hang_times_out, reseed),
	};
	return cmocka_run_group_tests(tests, mrcd_group_setup, mrcd_group_teardown);
}
