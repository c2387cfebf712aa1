/* libmrc-coll without a network: the reductions of every type and op
 * against a scalar reference (float16 and bfloat16 conversions against
 * the compiler's own where it has them), and every schedule run for all
 * ranks at once over in-memory queues, checked element by element and for
 * the pipelining it promises (which chunk goes where, and when). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "coll/coll_int.h"
#include "common/prng.h"

static uint64_t seed;

static void test_half_conversions(void **state)
{
	/* Every binary16 value survives h -> f -> h (NaNs stay NaN). */
	for (uint32_t h = 0; h < 65536; h++) {
		float f = mrc__coll_h2f((uint16_t)h);
		uint16_t back = mrc__coll_f2h(f);
		if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff))
			assert_true((back & 0x7c00) == 0x7c00 && (back & 0x3ff));
		else
			assert_int_equal(back, h);
	}
#if defined(__FLT16_MAX__)
	/* Rounding of random floats, as the compiler's _Float16 rounds. */
	struct mrc_rng r;
	mrc_rng_seed(&r, seed);
	for (int i = 0; i < 200000; i++) {
		uint32_t u = (uint32_t)mrc_rng_next(&r);
		float f;
		if (i & 1)
			u = (u & 0x8fffffffu) | 0x38000000u;   /* mostly in half's range */
		memcpy(&f, &u, 4);
		if (f != f)
			continue;
		_Float16 ref = (_Float16)f;
		uint16_t rb;
		memcpy(&rb, &ref, 2);
		if (mrc__coll_f2h(f) != rb)
			fail_msg("f2h(%a) = %#x, want %#x (seed %llu)", (double)f, mrc__coll_f2h(f), rb,
				 (unsigned long long)seed);
	}
#endif
	/* bfloat16: round to nearest even, NaN kept quiet. */
	assert_int_equal(mrc__coll_f2bf(1.0f), 0x3f80);
	uint32_t u = 0x3f808000u;   /* exactly half way, even below */
	float f;
	memcpy(&f, &u, 4);
	assert_int_equal(mrc__coll_f2bf(f), 0x3f80);
	u = 0x3f818000u;            /* half way, odd below: up */
	memcpy(&f, &u, 4);
	assert_int_equal(mrc__coll_f2bf(f), 0x3f82);
	u = 0x7f800001u;
	memcpy(&f, &u, 4);
	assert_true((mrc__coll_f2bf(f) & 0x7fff) > 0x7f80);
	assert_true(mrc__coll_bf2f(0x4040) == 3.0f);
}

/* The scalar reference, written independently of the library's. */
static double ref_op(int op, double a, double b)
{
	const double r[MRC_COLL_NOPS] = { a + b, a * b, fmin(a, b), fmax(a, b) };
	return r[op];
}

static void test_reductions(void **state)
{
	struct mrc_rng r;
	mrc_rng_seed(&r, seed);
	enum { N = 1037 };   /* odd: the vector loops' tails run too */
	for (int dt = 0; dt < MRC_COLL_NTYPES; dt++)
		for (int op = 0; op < MRC_COLL_NOPS; op++) {
			size_t esz = mrc_coll_dtype_size(dt);
			uint8_t a[N * 8], b[N * 8], d[N * 8];
			double av[N], bv[N];
			for (int i = 0; i < N; i++) {
				av[i] = (double)(int)(mrc_rng_next(&r) % 41) - 20;
				bv[i] = (double)(int)(mrc_rng_next(&r) % 41) - 20;
			}
			/* Through the checking helpers' own element store. */
			for (int i = 0; i < N; i++) {
				switch (dt) {
				case MRC_COLL_INT32: ((int32_t *)a)[i] = (int32_t)av[i]; ((int32_t *)b)[i] = (int32_t)bv[i]; break;
				case MRC_COLL_INT64: ((int64_t *)a)[i] = (int64_t)av[i]; ((int64_t *)b)[i] = (int64_t)bv[i]; break;
				case MRC_COLL_FLOAT32: ((float *)a)[i] = (float)av[i]; ((float *)b)[i] = (float)bv[i]; break;
				case MRC_COLL_FLOAT64: ((double *)a)[i] = av[i]; ((double *)b)[i] = bv[i]; break;
				case MRC_COLL_FLOAT16: ((uint16_t *)a)[i] = mrc__coll_f2h((float)av[i]); ((uint16_t *)b)[i] = mrc__coll_f2h((float)bv[i]); break;
				default: ((uint16_t *)a)[i] = mrc__coll_f2bf((float)av[i]); ((uint16_t *)b)[i] = mrc__coll_f2bf((float)bv[i]); break;
				}
			}
			/* Out of place, then in place (dst == a). */
			for (int inplace = 0; inplace < 2; inplace++) {
				uint8_t *dst = inplace ? a : d;
				uint8_t save[N * 8];
				memcpy(save, a, N * esz);
				mrc__coll_host_ops.reduce(dst, a, b, N, dt, op);
				for (int i = 0; i < N; i++) {
					double want = ref_op(op, av[i], bv[i]), got;
					switch (dt) {
					case MRC_COLL_INT32: got = ((int32_t *)dst)[i]; break;
					case MRC_COLL_INT64: got = (double)((int64_t *)dst)[i]; break;
					case MRC_COLL_FLOAT32: got = ((float *)dst)[i]; break;
					case MRC_COLL_FLOAT64: got = ((double *)dst)[i]; break;
					case MRC_COLL_FLOAT16: got = mrc__coll_h2f(((uint16_t *)dst)[i]); break;
					default: got = mrc__coll_bf2f(((uint16_t *)dst)[i]); break;
					}
					/* bfloat16 keeps 8 bits: products up to 400 round. */
					if (dt == MRC_COLL_BFLOAT16)
						want = mrc__coll_bf2f(mrc__coll_f2bf((float)want));
					if (got != want)
						fail_msg("%s %s [%d]: %g op %g = %g, want %g (seed %llu)",
							 mrc_coll_dtype_name(dt), mrc_coll_op_name(op), i, av[i],
							 bv[i], got, want, (unsigned long long)seed);
				}
				memcpy(a, save, N * esz);
			}
		}
	/* Integer sums wrap (computed unsigned), they are not undefined. */
	int32_t x = INT32_MAX, y = 1, z;
	mrc__coll_reduce(&z, &x, &y, 1, MRC_COLL_INT32, MRC_COLL_SUM);
	assert_int_equal(z, INT32_MIN);
}

/* The MoE combine's weighted accumulate and rounding against the scalar
 * path it replaced (element through float, acc += w * x, one rounding at
 * the end), for each type it takes, on random values and odd lengths. */
static void test_axpy(void **state)
{
	(void)state;
	struct mrc_rng r;
	mrc_rng_seed(&r, seed ^ 0xa5);
	enum { N = 1027 };
	static const int types[] = { MRC_COLL_FLOAT32, MRC_COLL_FLOAT16, MRC_COLL_BFLOAT16 };
	for (size_t k = 0; k < 3; k++) {
		int dt = types[k];
		float acc[N], ref[N];
		uint8_t x[N * 4], out[N * 4];
		for (int i = 0; i < N; i++)
			acc[i] = ref[i] = (float)((int)(mrc_rng_next(&r) % 2001) - 1000) / 64;
		for (int rep = 0; rep < 3; rep++) {
			float w = (float)(mrc_rng_next(&r) % 1000) / 999;
			for (int i = 0; i < N; i++)
				mrc__coll_put(x, dt, (size_t)i, (double)((int)(mrc_rng_next(&r) % 2001) - 1000) / 37);
			size_t n = N - (size_t)rep;   /* odd tails past the vector width */
			mrc__coll_host_ops.axpy(acc, x, w, n, dt);
			for (size_t i = 0; i < n; i++)
				ref[i] += w * (float)mrc__coll_get(x, dt, i);
		}
		for (int i = 0; i < N; i++)
			if (acc[i] != ref[i])
				fail_msg("%s axpy [%d]: %g, want %g (seed %llu)", mrc_coll_dtype_name(dt), i,
					 acc[i], ref[i], (unsigned long long)seed);
		mrc__coll_host_ops.from_float(out, acc, N, dt);
		for (int i = 0; i < N; i++) {
			uint8_t want[4];
			mrc__coll_put(want, dt, 0, acc[i]);
			if (memcmp(want, out + (size_t)i * mrc_coll_dtype_size(dt), mrc_coll_dtype_size(dt)))
				fail_msg("%s from_float [%d] of %g (seed %llu)", mrc_coll_dtype_name(dt), i,
					 acc[i], (unsigned long long)seed);
		}
	}
}

/* ---- schedules over in-memory queues ------------------------------------ */

struct msg { uint8_t *data; uint64_t len; uint32_t from; struct msg *next; };
struct simrank {
	struct mrc__coll_sched s;
	uint8_t *in, *out, *tmp, *done;
	size_t *sc, *rc;
	struct msg **qh, **qt;     /* per sender: arrived messages */
};

static size_t next_step(const struct mrc__coll_sched *s, size_t i, uint8_t kind, uint32_t peer)
{
	while (i < s->n && !(s->s[i].kind == kind && s->s[i].peer == peer))
		i++;
	return i;
}

static uint8_t *bufp(struct simrank *r, uint8_t b)
{
	return b == SB_IN ? r->in : b == SB_OUT ? r->out : r->tmp;
}

/* Runs every rank's schedule; returns the number of steps never run (a
 * deadlock) and fails on a length mismatch.  max_ahead bounds the sends
 * in flight per link, as the credit window does.  Peers are n x sets
 * virtual ones (the executor's QP sets, one per plane: peer v is rank
 * v % n over set v / n). */
static size_t simulate(struct simrank *R, uint32_t n, uint32_t sets, int dtype, int op, size_t esz,
		       uint32_t max_ahead)
{
	uint32_t nv = n * sets;
	uint32_t *inflight = calloc((size_t)n * nv, sizeof(*inflight));
	for (uint32_t me = 0; me < n; me++) {
		struct simrank *r = &R[me];
		r->done = calloc(r->s.n + 1, 1);
		r->sc = calloc(nv, sizeof(size_t));
		r->rc = calloc(nv, sizeof(size_t));
		r->qh = calloc(nv, sizeof(*r->qh));
		r->qt = calloc(nv, sizeof(*r->qt));
		for (uint32_t j = 0; j < nv; j++) {
			r->sc[j] = next_step(&r->s, 0, SK_SEND, j);
			r->rc[j] = next_step(&r->s, 0, SK_RECV, j);
		}
		for (size_t i = 0; i < r->s.n; i++) {
			assert_true(r->s.s[i].kind == SK_COPY || r->s.s[i].peer < nv);
			if (r->s.s[i].kind == SK_COPY) {
				const struct mrc__coll_step *st = &r->s.s[i];
				mrc__coll_host_ops.copy(bufp(r, st->dst) + st->dst_off,
							bufp(r, st->src) + st->src_off, st->len);
				r->done[i] = 1;
			}
		}
	}
	for (int progress = 1; progress;) {
		progress = 0;
		for (uint32_t me = 0; me < n; me++) {
			struct simrank *r = &R[me];
			for (uint32_t j = 0; j < nv; j++) {
				while (r->rc[j] < r->s.n && r->qh[j]) {
					const struct mrc__coll_step *st = &r->s.s[r->rc[j]];
					if (st->dep >= 0 && !r->done[st->dep])
						break;
					struct msg *m = r->qh[j];
					assert_int_equal(m->len, st->len);
					uint8_t *dst = bufp(r, st->dst) + st->dst_off;
					if (st->reduce)
						mrc__coll_host_ops.reduce(dst, bufp(r, st->src) + st->src_off, m->data,
									  st->len / esz, dtype, op);
					else
						mrc__coll_host_ops.copy(dst, m->data, st->len);
					r->qh[j] = m->next;
					inflight[(j % n) * nv + j - j % n + me]--;
					free(m->data);
					free(m);
					r->done[r->rc[j]] = 1;
					r->rc[j] = next_step(&r->s, r->rc[j] + 1, SK_RECV, j);
					progress = 1;
				}
				while (r->sc[j] < r->s.n) {
					const struct mrc__coll_step *st = &r->s.s[r->sc[j]];
					if ((st->dep >= 0 && !r->done[st->dep]) || inflight[me * nv + j] >= max_ahead)
						break;
					assert_true(st->dep < (int64_t)r->sc[j] || st->dep < 0);
					assert_true(j % n != me);   /* never to itself */
					struct msg *m = calloc(1, sizeof(*m));
					m->data = malloc(st->len ? st->len : 1);
					memcpy(m->data, bufp(r, st->src) + st->src_off, st->len);
					m->len = st->len;
					/* It arrives at rank j % n from us over the same set. */
					struct simrank *to = &R[j % n];
					uint32_t from = j - j % n + me;
					if (to->qt[from] && to->qh[from])
						to->qt[from]->next = m;
					else
						to->qh[from] = m;
					to->qt[from] = m;
					inflight[me * nv + j]++;
					r->done[r->sc[j]] = 1;
					r->sc[j] = next_step(&r->s, r->sc[j] + 1, SK_SEND, j);
					progress = 1;
				}
			}
		}
	}
	size_t left = 0;
	for (uint32_t me = 0; me < n; me++) {
		for (size_t i = 0; i < R[me].s.n; i++)
			left += !R[me].done[i];
		for (uint32_t j = 0; j < nv; j++)
			assert_null(R[me].qh[j]);   /* nothing sent that nobody receives */
		free(R[me].done), free(R[me].sc), free(R[me].rc), free(R[me].qh), free(R[me].qt);
	}
	free(inflight);
	return left;
}

/* The tree and forest all-reduces, checked as all-reduces. */
enum { TREE = MRC__C_N, FOREST };

static int build(int kind, struct mrc__coll_sched *s, uint32_t n, uint32_t me, size_t count,
		 size_t esz, size_t chunk, uint32_t root, const struct mrc__forest_shape *fs)
{
	switch (kind) {
	case TREE: return mrc__coll_sched_allreduce_tree(s, n, me, count, esz, chunk);
	case FOREST: return mrc__coll_sched_allreduce_forest(s, fs, me, count, esz, chunk);
	case MRC__C_ALLREDUCE: return mrc__coll_sched_allreduce_ring(s, n, me, count, esz, chunk);
	case MRC__C_REDUCE_SCATTER: return mrc__coll_sched_reduce_scatter_ring(s, n, me, count, esz, chunk);
	case MRC__C_ALLGATHER: return mrc__coll_sched_allgather_ring(s, n, me, count, esz, chunk);
	case MRC__C_BROADCAST: return mrc__coll_sched_broadcast_chain(s, n, me, count, esz, chunk, root);
	default: {
		size_t v[2 * 64];   /* n <= 64 */
		for (uint32_t j = 0; j < n; j++) {
			v[j] = count;
			v[64 + j] = (size_t)j * count;
		}
		return mrc__coll_sched_alltoallv(s, n, me, v, v + 64, v, v + 64, esz, chunk);
	}
	}
}

#define MAXN 9

/* Every rank's schedule of one collective (bkind: a MRC__C_* or TREE or
 * FOREST) simulated together and checked element by element. */
static void check_sched(int bkind, uint32_t n, size_t count, int dt, int op, int inplace,
			const struct mrc__forest_shape *fs)
{
	int kind = bkind >= TREE ? MRC__C_ALLREDUCE : bkind;
	static const char *const variant[] = { "", " (tree)", " (forest)" };
	const char *var = variant[bkind >= TREE ? bkind - TREE + 1 : 0];
	size_t esz = mrc_coll_dtype_size(dt);
	size_t chunk = 64;   /* many chunks per segment */
	uint32_t root = n > 2 ? 2 : 0, sets = fs && fs->pinned ? 1 + fs->planes : 1;
	struct simrank R[MAXN];
	memset(R, 0, sizeof(R));
	for (uint32_t me = 0; me < n; me++) {
		size_t inb = mrc__coll_in_count(kind, n, count) * esz;
		size_t outb = mrc__coll_out_count(kind, n, count) * esz;
		assert_int_equal(build(bkind, &R[me].s, n, me, count, esz, chunk, root, fs), 0);
		for (size_t i = 0; i < R[me].s.n; i++)
			assert_true((R[me].s.s[i].kind == SK_COPY || R[me].s.s[i].len <= chunk) &&
				    R[me].s.s[i].len % esz == 0);
		R[me].out = calloc(1, inb + outb + 1);
		R[me].in = malloc(inb + 1);
		R[me].tmp = malloc(R[me].s.tmp_bytes + 1);
		uint8_t *src = R[me].in;
		if (inplace && kind == MRC__C_ALLGATHER)
			src = R[me].out + me * count * esz;
		else if (inplace && kind == MRC__C_REDUCE_SCATTER)
			free(R[me].out), R[me].out = R[me].in + me * count * esz;
		else if (inplace)
			src = R[me].out;
		mrc__coll_fill(kind, src, n, me, count, dt, op, root);
		if (src != R[me].in) {
			free(R[me].in);
			R[me].in = src;
		}
	}
	size_t left = simulate(R, n, sets, dt, op, esz, (uint32_t)(1 + (count & 3)));
	if (left)
		fail_msg("%s%s n=%u count=%zu: %zu steps never ran (deadlock)", mrc__coll_name[kind],
			 var, n, count, left);
	for (uint32_t me = 0; me < n; me++) {
		size_t bad = mrc__coll_wrong(kind, R[me].out, n, me, count, dt, op, root);
		if (bad)
			fail_msg("%s%s %s %s n=%u rank %u count=%zu %s: %zu wrong", mrc__coll_name[kind],
				 var, mrc_coll_dtype_name(dt), mrc_coll_op_name(op), n, me, count,
				 inplace ? "in place" : "out of place", bad);
		mrc__coll_sched_free(&R[me].s);
		free(R[me].tmp);
	}
	/* One allocation per rank holds in and out as laid out above. */
	for (uint32_t me = 0; me < n; me++) {
		if (inplace && kind == MRC__C_REDUCE_SCATTER)
			free(R[me].in);
		else if (inplace)
			free(R[me].out);
		else
			free(R[me].in), free(R[me].out);
	}
}

static const size_t counts[] = { 0, 1, 7, 1000 };
#define NCOUNTS (sizeof(counts) / sizeof(counts[0]))

/* Every collective, rank count, size (0, 1, not a multiple of n, many
 * chunks), type, op, in and out of place. */
static void test_schedules_all(void **state)
{
	for (int bkind = 0; bkind <= TREE; bkind++)
		for (uint32_t n = 1; n <= 7; n++)
			for (size_t ci = 0; ci < NCOUNTS; ci++)
				for (int dt = 0; dt < MRC_COLL_NTYPES; dt++)
					for (int op = 0; op < MRC_COLL_NOPS; op++)
						for (int inplace = 0; inplace < 2; inplace++) {
		int kind = bkind == TREE ? MRC__C_ALLREDUCE : bkind;
		if (kind == MRC__C_ALLTOALL && inplace)
			continue;
		if ((kind == MRC__C_ALLGATHER || kind == MRC__C_BROADCAST || kind == MRC__C_ALLTOALL) && op)
			continue;
		check_sched(bkind, n, counts[ci], dt, op, inplace, NULL);
	}
}

/* Fabric shapes for the forest: planes, pinned to per-plane QP sets or
 * not, and ranks per leaf (0: no leaf table).  Rank r sits on leaf
 * r % leaves, so a leaf's ranks are not consecutive; when n is not a
 * multiple of per_leaf the leaves are unequal (the flat fallback). */
struct fshape { uint32_t planes; int pinned; uint32_t per_leaf; };
static const struct fshape fshapes[] = {
	{ 1, 0, 0 }, { 2, 1, 1 }, { 2, 1, 2 }, { 4, 1, 3 }, { 2, 0, 2 },
};
#define NFSHAPES (sizeof(fshapes) / sizeof(fshapes[0]))

static void fshape_make(const struct fshape *f, uint32_t n, uint32_t *leaf,
			struct mrc__forest_shape *out)
{
	uint32_t leaves = f->per_leaf ? (n + f->per_leaf - 1) / f->per_leaf : 1;
	for (uint32_t r = 0; r < n; r++)
		leaf[r] = r % leaves;
	*out = (struct mrc__forest_shape){ .n = n, .planes = f->planes, .pinned = f->pinned,
					   .leaf = f->per_leaf ? leaf : NULL };
}

/* The forest all-reduce: every rank count 1..9, every shape, size, type,
 * op, in and out of place, against the reference. */
static void test_forest_all(void **state)
{
	for (size_t fi = 0; fi < NFSHAPES; fi++)
		for (uint32_t n = 1; n <= MAXN; n++)
			for (size_t ci = 0; ci < NCOUNTS; ci++)
				for (int dt = 0; dt < MRC_COLL_NTYPES; dt++)
					for (int op = 0; op < MRC_COLL_NOPS; op++)
						for (int inplace = 0; inplace < 2; inplace++) {
		uint32_t leaf[MAXN];
		struct mrc__forest_shape fs;
		fshape_make(&fshapes[fi], n, leaf, &fs);
		check_sched(FOREST, n, counts[ci], dt, op, inplace, &fs);
	}
}

/* Bytes a rank sends per QP set (set 0: unpinned; set 1 + p: plane p),
 * from its schedule. */
static void sent_by_set(const struct mrc__coll_sched *s, uint32_t n, uint64_t *by_set)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->s[i].kind == SK_SEND)
			by_set[s->s[i].peer / n] += s->s[i].len;
}

/* The forest's load, from the schedules: on every plane every rank sends
 * the same bytes (within one chunk); no rank sends more than the ring's
 * busiest rank (within the rounding of the split: one element per tree);
 * nothing goes over the unpinned set when pinned; with equal leaves of L
 * ranks (G leaves) only the leaders' links cross leaves, 2(G-1) parts
 * per tree, 2(G-1) x the data in all: the fewest a spanning tree can. */
static void test_forest_load(void **state)
{
	static const size_t lcounts[] = { 1000, 12345, 1 << 16 };
	size_t esz = 4, chunk = 256;
	for (size_t fi = 0; fi < NFSHAPES; fi++)
		for (uint32_t n = 2; n <= MAXN; n++)
			for (size_t ci = 0; ci < 3; ci++) {
		const struct fshape *f = &fshapes[fi];
		size_t count = lcounts[ci];
		uint32_t leaf[MAXN], sets = f->pinned ? 1 + f->planes : 1;
		struct mrc__forest_shape fs;
		fshape_make(f, n, leaf, &fs);
		uint64_t ring_max = 0, lo = UINT64_MAX, hi = 0, cross = 0, total[MAXN] = { 0 };
		for (uint32_t me = 0; me < n; me++) {
			struct mrc__coll_sched s;
			uint64_t by[1 + 4] = { 0 };
			assert_int_equal(mrc__coll_sched_allreduce_ring(&s, n, me, count, esz, chunk), 0);
			sent_by_set(&s, n, by);
			mrc__coll_sched_free(&s);
			ring_max = by[0] > ring_max ? by[0] : ring_max;
			memset(by, 0, sizeof(by));
			assert_int_equal(mrc__coll_sched_allreduce_forest(&s, &fs, me, count, esz, chunk), 0);
			sent_by_set(&s, n, by);
			for (size_t i = 0; i < s.n; i++)
				if (s.s[i].kind == SK_SEND && f->per_leaf && leaf[s.s[i].peer % n] != leaf[me])
					cross += s.s[i].len;
			mrc__coll_sched_free(&s);
			if (f->pinned)
				assert_int_equal(by[0], 0);
			for (uint32_t set = f->pinned; set < sets; set++) {
				lo = by[set] < lo ? by[set] : lo;
				hi = by[set] > hi ? by[set] : hi;
				total[me] += by[set];
			}
		}
		for (uint32_t me = 0; me < n; me++)
			if (total[me] > ring_max + (uint64_t)f->planes * n * esz)
				fail_msg("n=%u shape %zu count %zu: rank %u sends %llu, ring's max %llu", n, fi,
					 count, me, (unsigned long long)total[me],
					 (unsigned long long)ring_max);
		if (hi - lo > chunk)
			fail_msg("n=%u shape %zu count %zu: per-plane bytes from %llu to %llu", n, fi,
				 count, (unsigned long long)lo, (unsigned long long)hi);
		uint32_t G = f->per_leaf ? (n + f->per_leaf - 1) / f->per_leaf : 1;
		if (f->per_leaf && n % f->per_leaf == 0 && cross != 2ull * (G - 1) * count * esz)
			fail_msg("n=%u shape %zu count %zu: %llu bytes cross leaves, want %llu", n, fi,
				 count, (unsigned long long)cross,
				 (unsigned long long)(2ull * (G - 1) * count * esz));
		if (getenv("MRC_FOREST_LOAD"))
			print_message("n=%u shape %zu count %zu: ring max %llu, forest %llu..%llu per plane\n",
				      n, fi, count, (unsigned long long)ring_max, (unsigned long long)lo,
				      (unsigned long long)hi);
	}
}

/* The ring all-reduce: 2(n-1) steps, each rank sends and receives
 * 2(n-1)/n of the data, only to its right and from its left neighbour,
 * and a chunk travels on as soon as it arrived (its send waits for that
 * chunk's receive, not the whole segment's). */
static void test_allreduce_ring_shape(void **state)
{
	uint32_t n = 4;
	size_t count = 4096, esz = 4, chunk = 1024;   /* 4 chunks per segment */
	for (uint32_t me = 0; me < n; me++) {
		struct mrc__coll_sched s;
		assert_int_equal(mrc__coll_sched_allreduce_ring(&s, n, me, count, esz, chunk), 0);
		uint64_t sent = 0, recvd = 0;
		size_t sends = 0;
		for (size_t i = 0; i < s.n; i++) {
			const struct mrc__coll_step *st = &s.s[i];
			if (st->kind == SK_SEND) {
				assert_int_equal(st->peer, (me + 1) % n);
				sent += st->len;
				if (sends++ >= 4) {   /* after the first step, every send waits on ... */
					assert_true(st->dep >= 0);
					const struct mrc__coll_step *d = &s.s[st->dep];
					/* ... the receive of the same bytes, one chunk only */
					assert_int_equal(d->kind, SK_RECV);
					assert_int_equal(d->dst_off, st->src_off);
					assert_int_equal(d->len, st->len);
				} else {
					assert_int_equal(st->dep, -1);
					assert_int_equal(st->src, SB_IN);
				}
			} else if (st->kind == SK_RECV) {
				assert_int_equal(st->peer, (me + n - 1) % n);
				recvd += st->len;
			}
		}
		assert_int_equal(sent, 2 * (n - 1) * count * esz / n);
		assert_int_equal(recvd, sent);
		assert_int_equal(sends, 2 * (n - 1) * 4);
		mrc__coll_sched_free(&s);
	}
}

static void test_segments(void **state)
{
	size_t f, l, total = 0;
	for (uint32_t r = 0; r < 4; r++) {
		mrc__coll_seg(10, 4, r, &f, &l);
		assert_int_equal(f, total);
		assert_int_equal(l, r < 2 ? 3 : 2);
		total += l;
	}
	assert_int_equal(total, 10);
}

/* auto's choice (docs/coll.md "Choosing by size"): the tree up to
 * 64 KiB; the forest in the measured band only with 2+ planes and ranks on
 * 2+ leaves; the ring elsewhere; an algorithm asked for at every size. */
static struct mrc_coll *choice_comm(int algo, uint32_t planes, uint32_t hosts_per_leaf)
{
	static uint32_t leaf[4];
	static struct mrc_coll c;
	c = (struct mrc_coll){ .n = 4, .leaf = leaf };
	struct mrc_coll_cfg cfg = { .nranks = 4, .algo = algo, .planes = planes,
				    .hosts_per_leaf = hosts_per_leaf };
	mrc__coll_algo_init(&c, &cfg);
	for (uint32_t r = 0; r < 4; r++)
		leaf[r] = r / c.hosts_per_leaf;   /* rank r on host r, as the bootstrap fills it */
	return &c;
}

static void test_auto_choice(void **state)
{
	enum { T = MRC_COLL_ALGO_TREE, R = MRC_COLL_ALGO_RING, F = MRC_COLL_ALGO_FOREST };
	static const uint64_t size[] = { 0, 4 << 10, 64 << 10, (64 << 10) + 4, 256 << 10,
					 1 << 20, 4 << 20, 16 << 20, 64 << 20, 1ull << 32 };
	enum { NS = sizeof(size) / sizeof(size[0]) };
	static const struct {
		int algo;
		uint32_t planes, hpl;
		int want[NS];
	} k[] = {
		/* auto, by fabric: the forest's band is empty (it measured
		 * slower than the ring at every size on the 2-plane fabric),
		 * so 2 planes on 2 leaves choose as 1 plane does. */
		{ MRC_COLL_ALGO_AUTO, 1, 1, { T, T, T, R, R, R, R, R, R, R } },
		{ MRC_COLL_ALGO_AUTO, 2, 2, { T, T, T, R, R, R, R, R, R, R } },
		{ MRC_COLL_ALGO_AUTO, 2, 4, { T, T, T, R, R, R, R, R, R, R } },
		{ MRC_COLL_ALGO_AUTO, 4, 1, { T, T, T, R, R, R, R, R, R, R } },
		/* asked for: at every size */
		{ MRC_COLL_ALGO_RING, 2, 2, { R, R, R, R, R, R, R, R, R, R } },
		{ MRC_COLL_ALGO_TREE, 1, 1, { T, T, T, T, T, T, T, T, T, T } },
		{ MRC_COLL_ALGO_FOREST, 2, 2, { F, F, F, F, F, F, F, F, F, F } },
		{ MRC_COLL_ALGO_FOREST, 1, 1, { F, F, F, F, F, F, F, F, F, F } },
	};
	for (size_t i = 0; i < sizeof(k) / sizeof(k[0]); i++) {
		struct mrc_coll *c = choice_comm(k[i].algo, k[i].planes, k[i].hpl);
		/* Pinned QP sets exist exactly when there are planes to pin to. */
		assert_int_equal(c->sets, k[i].planes > 1 ? 1 + k[i].planes : 1);
		for (size_t z = 0; z < NS; z++)
			if (mrc__coll_allreduce_algo(c, size[z]) != k[i].want[z])
				fail_msg("case %zu (algo %d, %u planes, %u hosts per leaf), %llu bytes: %d, want %d",
					 i, k[i].algo, k[i].planes, k[i].hpl, (unsigned long long)size[z],
					 mrc__coll_allreduce_algo(c, size[z]), k[i].want[z]);
	}
}

int main(void)
{
	seed = getenv("MRC_SEED") ? strtoull(getenv("MRC_SEED"), NULL, 0) : (uint64_t)time(NULL);
	print_message("seed %llu\n", (unsigned long long)seed);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_half_conversions),
		cmocka_unit_test(test_reductions),
		cmocka_unit_test(test_axpy),
		cmocka_unit_test(test_segments),
		cmocka_unit_test(test_allreduce_ring_shape),
		cmocka_unit_test(test_schedules_all),
		cmocka_unit_test(test_forest_all),
		cmocka_unit_test(test_forest_load),
		cmocka_unit_test(test_auto_choice),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
