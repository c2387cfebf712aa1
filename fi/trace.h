/* FI_MRC_TRACE=DIR: a domain's rendezvous events, timestamped, written to
 * DIR/fitrace.HOST.PID at fi_close(domain) (docs/libfabric.md "The MPI
 * all-to-all"): where a large message waits.  Off: one branch per event. */
#ifndef MRC_FI_TRACE_H
#define MRC_FI_TRACE_H

#include <stdint.h>

enum mrcfi_tev {
	TEV_SEND_POST = 1,   /* a rendezvous send posted (its RTS sent or queued) */
	TEV_RECV_POST,       /* a receive of more than a slot posted */
	TEV_RTS_MATCHED,     /* an RTS met a posted receive */
	TEV_RTS_UNEXP,       /* an RTS met none: queued unexpected */
	TEV_UNEXP_TAKEN,     /* a receive took an unexpected RTS */
	TEV_CTS_OUT,         /* a chunk granted */
	TEV_CTS_WAIT,        /* a grant waits for a receive chunk */
	TEV_CTS_IN,          /* a grant arrived at the sender */
	TEV_WRITE,           /* a chunk written, its RZDATA sent */
	TEV_TX_WAIT,         /* a granted chunk waits for a send chunk or slot */
	TEV_RZDATA_IN,       /* a chunk's data arrived at the receiver */
	TEV_RX_DONE,         /* a rendezvous receive completed */
	TEV_TX_DONE,         /* a rendezvous send completed */
	TEV_EARLY,           /* a rendezvous send's data arrived early (pre-granted) */
};

struct mrcfi_domain;
struct mrcfi_tent {
	uint64_t ns;
	uint32_t peer, id;
	uint32_t len;
	uint8_t ev, prog;    /* prog: the progress thread did it, not the app */
};

void mrcfi_trace_open(struct mrcfi_domain *d);
void mrcfi_trace_close(struct mrcfi_domain *d);
void mrcfi_trace_ev(struct mrcfi_domain *d, int ev, uint32_t peer, uint32_t id, uint64_t len);
extern __thread int mrcfi_in_prog;

#define MRCFI_TRACE(d, ev, peer, id, len) \
	do { if ((d)->trace) mrcfi_trace_ev((d), (ev), (peer), (id), (len)); } while (0)

#endif
