/* Ranks of one communicator as threads of a test process, each with its
 * own libmrc context, against the test's mrcd (mrcd_spawn.h mrcd_group):
 * the runner of tests/test_coll_loop.c and tests/test_coll_moe.c. */
#ifndef MRC_TESTS_SUPPORT_COLL_RANKS_H
#define MRC_TESTS_SUPPORT_COLL_RANKS_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "mrc/coll.h"

struct coll_rank {
	pthread_t th;
	struct mrc_coll_cfg cfg;
	int (*body)(struct coll_rank *);
	struct mrc_coll *c;
	int rc;
	int64_t t_end;             /* when body returned (ms) */
	size_t wrong;
	char why[160];
	void *arg;
	uint32_t nshm;             /* at the end: peers over shared memory */
	uint64_t qp_msgs;          /* at the end: data messages posted on QPs */
};

/* What the next coll_ranks_run gives every rank's configuration; a test
 * that changes one puts it back. */
struct coll_ranks_opts {
	int timeout_ms;            /* 30000: a loaded machine cannot fail a correct run */
	uint32_t root_host;        /* 0, or MRC_COLL_HOST_ANY to probe */
	int algo;                  /* MRC_COLL_ALGO_* */
	uint32_t planes;           /* cfg.planes */
};
extern struct coll_ranks_opts coll_ranks_opts;

/* Runs body on n ranks (a new service id each call) and joins them;
 * chunk 0: the default. */
void coll_ranks_run(struct coll_rank *R, uint32_t n, int (*body)(struct coll_rank *),
		    uint32_t chunk, void *arg);
/* Fails the test naming the first rank that failed or counted wrong
 * elements. */
void coll_ranks_check_ok(const struct coll_rank *R, uint32_t n);

/* Bodies: every collective x type x op x size x placement of
 * tests/support/coll_matrix.h, checked element by element; and an
 * all-to-allv with uneven counts (some zero), every pair checked, flat or
 * (arg: a uint32_t L > 0) 2-D with nodes of L ranks. */
int coll_body_matrix(struct coll_rank *r);
int coll_body_alltoallv(struct coll_rank *r);

#endif
