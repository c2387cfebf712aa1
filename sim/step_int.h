/* The training-step workload's runtime, shared by its files (sim/step.c
 * the program and its flows, step_a2a.c the MoE all-to-all, step_run.c
 * running it, step_result.c what a run reports).  Private to them. */
#ifndef MRC_SIM_STEP_INT_H
#define MRC_SIM_STEP_INT_H

#include <stddef.h>
#include <stdint.h>

#include "sim/sim_int.h"

enum { I_COMPUTE, I_A2A, I_GRAD, I_END };

struct step_ins {
	uint8_t op, kind;          /* kind: enum mrc_sim_phase of a compute */
	uint32_t arg;              /* A2A: op 0..7; GRAD: 1 for the last layer */
	uint64_t dur_ps;           /* COMPUTE */
	uint64_t bytes;            /* GRAD */
};

struct step_host {
	uint32_t step, pc, nlaunched;
	uint64_t fill;
	uint64_t wait_since, comp_t0;
	uint8_t computing, entered, began, done, busy, again;
	struct mrc_sim_phase_iv *iv;
	uint32_t niv, cap_iv;
	uint64_t compute_ps;
};

struct sim_step_rt {
	struct mrc_sim_step p;
	uint32_t w, H, N;
	struct step_ins *prog;
	uint32_t nprog;
	/* all-to-all: 4 shapes (dispatch phase 1, 2, combine 1, 2), ops
	 * 0..3 forward and 4..7 backward */
	uint32_t nops;             /* 8 with MoE, else 0 */
	uint32_t *soff[4];         /* per shape: flows of host h at soff[h].. */
	uint32_t *rcnt[4];         /* per shape: flows due to host h */
	uint32_t op_start[9];      /* per op: first flow, relative to the step */
	/* buckets */
	uint32_t nb, R, stride;    /* R: ring flows per host per bucket */
	uint32_t bucket_start, bulk_start, per_step;
	uint32_t flow0, nflows;
	uint32_t *recv_cnt, *sent_cnt, *posted;   /* [(st * (8 + nb) + op) * H + h] */
	uint32_t *qhead, *qtail, *qnext;          /* per conn, per flow: SQ full */
	uint32_t conn0, nconns;
	uint64_t *step_end;        /* [st * H + h] */
	struct step_host *hs;
	uint32_t pending;          /* hosts not done */
	uint64_t tokens, dropped;
	uint64_t start_ps;
};

#define SLOT(rt, st, o, h) (((size_t)(st) * (8 + (rt)->nb) + (o)) * (rt)->H + (h))

/* step.c */
int sim_step_push_flow(struct mrc_sim *s, uint32_t *cap, uint32_t src, uint32_t dst,
		       uint64_t size, uint32_t w);
uint64_t sim_step_compute_ps(const struct sim_step_rt *rt);

/* step_a2a.c: the shapes' flows per host and op_start[0..8] (nothing
 * without MoE); one step's routing and its all-to-all flows, appended in
 * op order (P1, P2: scratch of H * local and H * ep/local). */
int sim_step_a2a_layout(struct sim_step_rt *rt);
int sim_step_a2a_gen(struct mrc_sim *s, struct sim_step_rt *rt, uint64_t *P1, uint64_t *P2,
		     uint32_t *cap_flows);

#endif
