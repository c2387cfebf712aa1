/* Message-path tracing (docs/client.md "Tracing the message path").
 *
 * MRC_TRACE=DIR in the environment of a client (libmrc, the NCCL plugin)
 * or of mrcd: every stage a message passes records (time, stage, QP, id)
 * in memory, written at exit to DIR/mrc-trace.PID.N (one file per copy of
 * this code in a process: the plugin carries its own libmrc).  The clock
 * is CLOCK_MONOTONIC, common to every process of a host, so one host's
 * files merge into one timeline (bench/trace.py).  Off, a stage costs one
 * load and one predicted branch. */
#ifndef MRC_COMMON_TRACE_H
#define MRC_COMMON_TRACE_H

#include <stdint.h>

enum mrc_trace_stage {
	/* libmrc */
	MRC_TR_C_POST = 1,        /* descriptor published in the SQ (id: wr_id, aux: op) */
	MRC_TR_C_SQBELL,          /* SQ doorbell written (the daemon slept) */
	MRC_TR_C_CQE,             /* a completion taken by mrc_poll_cq (id: wr_id, aux: op) */
	MRC_TR_C_WAKE,            /* mrc_wait's sleep on the CQ bell returned */
	/* the NCCL plugin */
	MRC_TR_N_IRECV,           /* irecv posted its CTS (id: first id) */
	MRC_TR_N_ISEND,           /* isend found its CTS and posted the data (id: CTS id) */
	MRC_TR_N_ISEND_WAIT,      /* isend returned NULL: no CTS of its tag yet */
	MRC_TR_N_CTS,             /* a CTS arrived (id: its id) */
	MRC_TR_N_DATA,            /* a receive's data landed and was copied out (id: id) */
	MRC_TR_N_TEST_DONE,       /* test reported a request done (aux: 1 send, 0 recv) */
	/* mrcd */
	MRC_TR_D_SQBELL,          /* SQ doorbell read */
	MRC_TR_D_PICK,            /* descriptor taken from an SQ (id: wr_id, aux: op) */
	MRC_TR_D_TX,              /* datagrams handed to the datapath (aux: count) */
	MRC_TR_D_RX,              /* datagrams read from the datapath (aux: count) */
	MRC_TR_D_WC,              /* engine completion for a client QP (id: wr_id, aux: op) */
	MRC_TR_D_CQBELL,          /* CQ doorbell written (the client slept) */
	MRC_TR_D_ARM,             /* an SQ armed / parked: the daemon may sleep */
	MRC_TR_MARK,              /* a tool's marker (id: iteration; aux: 1 begin, 2 end) */
	MRC_TR_NSTAGES
};

extern int mrc__trace_on;

void mrc__trace_rec(uint32_t stage, uint32_t qpn, uint64_t id, uint32_t aux);
const char *mrc__trace_name(uint32_t stage);

#define MRC_TRACE(stage, qpn, id, aux)                                          \
	do {                                                                    \
		if (__builtin_expect(mrc__trace_on, 0))                         \
			mrc__trace_rec((stage), (uint32_t)(qpn), (uint64_t)(id), \
				       (uint32_t)(aux));                        \
	} while (0)

#endif
