/* mrc-step (tools/step/): a training step over libmrc-coll through mrcd
 * (docs/step.md).  The parameters carry mrcsim's step workload's names
 * and meaning (docs/sim.md "Training steps"), so the two agree. */
#ifndef MRC_TOOLS_STEP_H
#define MRC_TOOLS_STEP_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct mrc_coll;
struct mrc_coll_req;

/* Modes run side by side, step by step. */
enum { STEP_BLOCKING, STEP_OVERLAP, STEP_NMODES };
/* What is timed per step: the step, and in it the staging read, the waits
 * on the MoE's calls, the wait on the buckets at the end. */
enum { STEP_C_STEP, STEP_C_STAGE, STEP_C_MOE, STEP_C_TAIL, STEP_NCOLS };

struct step_par {
	uint32_t layers, moe;      /* moe: the MoE layer's index (UINT32_MAX: none) */
	uint32_t steps, runs, warm;
	double fwd_us, bwd_us;     /* per layer, and the expert's */
	double tick_us;            /* the stub tests requests this often */
	int sleep;                 /* stub=sleep: the stub sleeps rather than spins */
	uint64_t tokens, tok;      /* per rank; bytes per token (bfloat16 rows) */
	uint32_t topk, local;      /* local: ranks per node of the 2-D all-to-all (0: flat) */
	double cap, skew;
	uint64_t grad, bucket;     /* gradient bytes per layer, bytes per bucket */
	uint64_t bulk;             /* background bytes per rank per step (0: off) */
	uint64_t stage;            /* data staging bytes read per step (0: off) */
	const char *stage_file;    /* read from (NULL: a scratch file) */
	uint64_t seed;
	int modes;                 /* bit per mode */
	int json;
	uint32_t fault_step;       /* pause before this step for a fault (0: none) */
	const char *fault_file;    /* ... until this file exists */
};

/* Parses argv (options and key=value pairs, docs/step.md) into p and the
 * mrc_coll_cfg fields main needs (sock, sid, host, timeout: *sock may be
 * left NULL; the numbers are left as they were when not given).  0, or
 * -EINVAL with a line on err. */
struct step_cli {
	const char *sock;
	uint32_t sid, root_host;
	int timeout_ms, have_sid, have_host, have_timeout;
};
void mrc__step_defaults(struct step_par *p);
int mrc__step_parse(int argc, char **argv, struct step_par *p, struct step_cli *cli, FILE *err);

/* One mode's figures over a run (microseconds; the slowest rank's). */
struct step_stat {
	double step_med, step_min, step_max;
	double exposed_med;        /* per step: step - compute - staging */
	double compute;            /* the stubs' time per step */
	double stage_med;          /* data staging per step */
	double moe_med, tail_med;  /* waits on the MoE's calls, on the buckets at the end */
	double time_to_n[64];      /* per run: the N steps' time */
	double ttn_trimmed;        /* mean over the runs without best and worst */
	double step_trimmed;       /* ttn_trimmed / steps */
};
struct step_report {
	uint32_t ranks;
	uint64_t tokens, dropped;  /* MoE pairs, summed over ranks and steps */
	uint64_t bulk_bytes;       /* background bytes landed (all ranks) */
	int64_t wrong;             /* gradient elements off the all-reduce's result */
	struct step_stat m[STEP_NMODES];
	double fault_before, fault_after;   /* fault run: mean step before / from fault_step */
};
void mrc__step_print(const struct step_par *p, const struct step_report *r, FILE *f);

/* col[STEP_NCOLS][runs][modes][steps]: each step's times (seconds, the
 * slowest rank's: what collect made of every rank's) into rep's figures
 * (print.c, libc only). */
void mrc__step_figures(const struct step_par *p, const double *col, struct step_report *rep);
/* tools/step/report.c: this rank's col to the slowest rank's, the counts
 * summed, then the figures, on every rank (collective). */
int mrc__step_collect(struct mrc_coll *c, const struct step_par *p, double *col,
		      struct step_report *rep);

/* tools/step/work.c: what does not communicate, shared by the libmrc-coll
 * step (run.c) and the Open MPI one (mpi.c). */
#define MRC_STEP_MAX_RANKS 4096
int mrc__step_stub(const struct step_par *p, double t_us, int (*poll)(void *), void *arg);
void mrc__step_route(const struct step_par *p, uint32_t n, uint32_t me, uint64_t step,
		     int32_t *idx, float *w);
size_t mrc__step_buckets(const struct step_par *p, uint32_t n, size_t *cnt, uint32_t *close_at);
struct step_stage {
	int fd;
	uint8_t *buf;
	uint64_t off, size;
};
int mrc__step_stage_open(const struct step_par *p, struct step_stage *s);
int mrc__step_stage_read(const struct step_par *p, struct step_stage *s);
void mrc__step_stage_close(struct step_stage *s);
/* Before fault_step of the first run: rank 0 says so on stdout and waits
 * (bounded: -ETIMEDOUT) for fault_file. */
int mrc__step_fault_wait(const struct step_par *p, uint32_t rank, uint32_t run);

/* The workload, on communicators c (MoE, and everything when g == c) and
 * g (gradients): fills r on rank 0 (the others: the collective parts). */
struct step_bulk;
int mrc__step_run(struct mrc_coll *c, struct mrc_coll *g, struct step_bulk *bk,
		  const struct step_par *p, struct step_report *r);

/* Background traffic (tools/step/bulk.c): rank r writes to rank
 * (r + n/2) % n on a QP of class MRC_QP_BULK; posted and reaped only from
 * the compute stub's ticks, never waited on by the step. */
int mrc__step_bulk_open(struct mrc_coll *c, const struct step_par *p, uint32_t sid,
			const char *sock, struct step_bulk **out);
void mrc__step_bulk_add(struct step_bulk *b, uint64_t bytes);   /* queue bytes to send */
int mrc__step_bulk_poll(struct step_bulk *b);                   /* post, reap: 0 or -errno */
/* Drains what is queued (*done: the bytes completed in all), then
 * (collective) waits for every rank's. */
int mrc__step_bulk_close(struct step_bulk *b, struct mrc_coll *c, uint64_t *done);

#endif
