#include "tests/support/coll_ranks.h"

#include <errno.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdarg.h>
#include <string.h>
#include <cmocka.h>

#include "tests/support/coll_matrix.h"
#include "tests/support/mrcd_spawn.h"

#include "coll/coll_int.h"

struct coll_ranks_opts coll_ranks_opts = { .timeout_ms = 30000 };
static uint32_t next_sid = 7400;

static void *rank_main(void *p)
{
	struct coll_rank *r = p;
	r->rc = mrc_coll_init(&r->cfg, &r->c);
	if (!r->rc)
		r->rc = r->body(r);
	r->t_end = mrcd_spawn_now_ms();
	if (r->c) {
		r->nshm = r->c->nshm;
		for (uint32_t j = 0; j < r->c->np; j++)
			r->qp_msgs += r->c->p[j].sent;   /* counts QP posts only (coll_int.h) */
	}
	mrc_coll_destroy(r->c);
	return NULL;
}

void coll_ranks_run(struct coll_rank *R, uint32_t n, int (*body)(struct coll_rank *),
		    uint32_t chunk, void *arg)
{
	const struct coll_ranks_opts *o = &coll_ranks_opts;
	uint32_t sid = next_sid++;
	for (uint32_t i = 0; i < n; i++) {
		R[i] = (struct coll_rank){ .cfg = { .sock = mrcd_group.d.sock, .nranks = n, .rank = i,
			.root_host = o->root_host, .sid = sid, .chunk_bytes = chunk, .window = 2,
			.timeout_ms = o->timeout_ms, .algo = o->algo, .planes = o->planes },
			.body = body, .arg = arg };
		assert_int_equal(pthread_create(&R[i].th, NULL, rank_main, &R[i]), 0);
	}
	for (uint32_t i = 0; i < n; i++)
		pthread_join(R[i].th, NULL);
}

void coll_ranks_check_ok(const struct coll_rank *R, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		if (R[i].rc || R[i].wrong)
			fail_msg("rank %u of %u: %s (%s)", i, n, strerror(-R[i].rc), R[i].why);
}

/* One case of the matrix on one communicator, checked element by element. */
static int matrix_case(void *arg, const struct coll_case *k)
{
	struct coll_rank *r = arg;
	struct mrc_coll *c = r->c;
	uint32_t n = mrc_coll_size(c), me = mrc_coll_rank(c);
	int kind = k->kind, dt = k->dt, op = k->op, inplace = k->inplace;
	size_t count = k->count, esz = mrc_coll_dtype_size(dt);
	uint32_t root = (uint32_t)(k->ci % n);
	size_t inb = mrc__coll_in_count(kind, n, count) * esz;
	size_t outb = mrc__coll_out_count(kind, n, count) * esz;
	uint8_t *in = malloc(inb + 1), *out = malloc(outb + 1), *src, *dst;
	memset(out, 0xa5, outb);   /* nothing left over from before */
	mrc__coll_place(kind, inplace, me, count, esz, in, out, &src, &dst);
	mrc__coll_fill(kind, src, n, me, count, dt, op, root);
	int rc = mrc__coll_call(c, kind, src, dst, count, dt, op, root);
	size_t bad = rc ? 0 : mrc__coll_wrong(kind, dst, n, me, count, dt, op, root);
	free(in);
	free(out);
	if (rc || bad) {
		snprintf(r->why, sizeof(r->why), "%s %s %s count %zu %s: %s, %zu wrong",
			 mrc__coll_name[kind], mrc_coll_dtype_name(dt), mrc_coll_op_name(op),
			 count, inplace ? "in place" : "out of place", rc ? strerror(-rc) : "ok",
			 bad);
		r->wrong += bad;
		return rc ? rc : -EIO;
	}
	return 0;
}

/* Every collective x type x op x size x placement on one communicator. */
int coll_body_matrix(struct coll_rank *r)
{
	return coll_matrix(mrc_coll_size(r->c), matrix_case, r);
}

/* all-to-allv with uneven counts (some zero), every pair checked. */
int coll_body_alltoallv(struct coll_rank *r)
{
	uint32_t n = mrc_coll_size(r->c), me = mrc_coll_rank(r->c);
	size_t sc[8], sd[8], rcn[8], rd[8], st = 0, rt = 0;
	for (uint32_t j = 0; j < n; j++) {
		sc[j] = (me * 3 + j * 5) % 7 * 1000;    /* what me sends j */
		rcn[j] = (j * 3 + me * 5) % 7 * 1000;   /* what j sends me */
		sd[j] = st;
		rd[j] = rt;
		st += sc[j];
		rt += rcn[j];
	}
	int64_t *in = malloc(st * 8 + 8), *out = calloc(rt + 1, 8);
	for (uint32_t j = 0; j < n; j++)
		for (size_t i = 0; i < sc[j]; i++)
			in[sd[j] + i] = (int64_t)me << 40 | (int64_t)j << 32 | (int64_t)i;
	uint32_t L = r->arg ? *(uint32_t *)r->arg : 0;
	int rc = L ? mrc_coll_alltoallv_2d(r->c, L, in, sc, sd, out, rcn, rd, MRC_COLL_INT64)
		   : mrc_coll_alltoallv(r->c, in, sc, sd, out, rcn, rd, MRC_COLL_INT64);
	for (uint32_t j = 0; !rc && j < n; j++)
		for (size_t i = 0; i < rcn[j]; i++)
			r->wrong += out[rd[j] + i] != ((int64_t)j << 40 | (int64_t)me << 32 | (int64_t)i);
	free(in);
	free(out);
	return rc;
}
