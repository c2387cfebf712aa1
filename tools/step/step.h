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

struct step_par {
	uint32_t layers, moe;      /* moe: the MoE layer's index (UINT32_MAX: none) */
	uint32_t steps, runs, warm;
	double fwd_us, bwd_us;     /* per layer, and the expert's */
	double tick_us;            /* the stub tests requests this often */
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
uint64_t mrc__step_bulk_done(const struct step_bulk *b);        /* bytes completed */
/* Drains what is queued, then (collective) waits for every rank's. */
int mrc__step_bulk_close(struct step_bulk *b, struct mrc_coll *c);

#endif
