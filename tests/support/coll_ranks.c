#include "tests/support/coll_ranks.h"

#include <setjmp.h>
#include <stdarg.h>
#include <string.h>
#include <cmocka.h>

#include "tests/support/mrcd_spawn.h"

struct coll_ranks_opts coll_ranks_opts = { .timeout_ms = 30000 };
static uint32_t next_sid = 7400;

static void *rank_main(void *p)
{
	struct coll_rank *r = p;
	r->rc = mrc_coll_init(&r->cfg, &r->c);
	if (!r->rc)
		r->rc = r->body(r);
	r->t_end = mrcd_spawn_now_ms();
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
