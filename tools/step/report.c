/* mrc-step's figures: per mode the slowest rank's step times, MLPerf's
 * time to N steps (several runs, the best and the worst dropped), the
 * exposed communication: each rank's times to the slowest rank's, then
 * the figures (print.c). */
#include "mrc/coll.h"
#include "tools/step/step.h"

/* The slowest rank's time of every step (a step waits for it), then the
 * figures on rank 0. */
int mrc__step_collect(struct mrc_coll *c, const struct step_par *p, double *col,
		      struct step_report *rep)
{
	size_t per = (size_t)p->runs * p->steps * STEP_NMODES;
	int r = mrc_coll_allreduce(c, col, col, per * STEP_NCOLS, MRC_COLL_FLOAT64, MRC_COLL_MAX);
	int64_t v[3] = { (int64_t)rep->tokens, (int64_t)rep->dropped, rep->wrong };
	if (!r)
		r = mrc_coll_allreduce(c, v, v, 3, MRC_COLL_INT64, MRC_COLL_SUM);
	if (r)
		return r;
	rep->tokens = (uint64_t)v[0], rep->dropped = (uint64_t)v[1], rep->wrong = v[2];
	rep->ranks = mrc_coll_size(c);
	mrc__step_figures(p, col, rep);
	return 0;
}
