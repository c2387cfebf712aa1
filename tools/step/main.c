/* mrc-step: a training step over libmrc-coll through mrcd (docs/step.md,
 * mrc-step(1)).
 *
 *   mrc-step [-S sock] [-s sid] [-H host] [-T ms] [-j] [-m blocking|overlap|both]
 *            [-D stage-file] [-k STEP:FILE] [key=value ...]
 *
 * One process per rank, size and rank from the environment as
 * mrc-coll-perf (mrc_coll_cfg_from_env).  Communicators: sid (MoE and the
 * report), sid + 1 (gradients); background QPs listen on sid + 2 + rank. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mrc/coll.h"
#include "tools/step/step.h"

static void die(const char *what, int err)
{
	fprintf(stderr, "mrc-step: %s: %s\n", what, strerror(-err));
	exit(1);
}

int main(int argc, char **argv)
{
	struct step_par p;
	struct step_cli cli = { 0 };
	struct mrc_coll_cfg cfg;
	mrc__step_defaults(&p);
	int r = mrc_coll_cfg_from_env(&cfg);
	if (r)
		die("MRC_COLL_SIZE/MRC_COLL_RANK (or an MPI launcher's variables)", r);
	if (mrc__step_parse(argc, argv, &p, &cli, stderr))
		return 2;
	if (cli.sock)
		cfg.sock = cli.sock;
	if (cli.have_sid)
		cfg.sid = cli.sid;
	if (cli.have_host)
		cfg.root_host = cli.root_host;
	if (cli.have_timeout)
		cfg.timeout_ms = cli.timeout_ms;
	struct mrc_coll *c, *g;
	struct step_bulk *bk = NULL;
	if ((r = mrc_coll_init(&cfg, &c)))
		die("mrc_coll_init", r);
	cfg.sid++;
	if ((r = mrc_coll_init(&cfg, &g)))
		die("mrc_coll_init (gradients)", r);
	if (p.bulk && (r = mrc__step_bulk_open(c, &p, cfg.sid + 1, cfg.sock, &bk)))
		die("background QPs", r);
	struct step_report rep = { 0 };
	r = mrc__step_run(c, g, bk, &p, &rep);
	if (bk) {
		uint64_t done = 0;
		int w = mrc__step_bulk_close(bk, c, &done);
		r = r ? r : w;
		int64_t v = (int64_t)done;
		if (!r)
			r = mrc_coll_allreduce(c, &v, &v, 1, MRC_COLL_INT64, MRC_COLL_SUM);
		rep.bulk_bytes = (uint64_t)v;
	}
	if (r)
		die("step", r);
	if (mrc_coll_rank(c) == 0) {
		mrc__step_print(&p, &rep, stdout);
		fflush(stdout);
	}
	mrc_coll_destroy(g);
	mrc_coll_destroy(c);
	return rep.wrong ? 1 : 0;
}
