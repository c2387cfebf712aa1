/* Congestion control behind an ops table, so another algorithm can be
 * added without touching the engine.  Window-based, sender-side, per QP. */
#ifndef MRC_TRANSPORT_CC_H
#define MRC_TRANSPORT_CC_H

#include <stddef.h>
#include <stdint.h>

#define MRCE_CC_STATE_MAX 64

struct mrce_cc_params {
	uint32_t mtu;              /* payload bytes per packet */
	uint32_t min_cwnd;         /* bytes */
	uint32_t max_cwnd;         /* bytes (window * mtu) */
	uint32_t planes;           /* planes the QP sprays over (0, 1: one) */
};

struct mrce_cc_sample {
	uint64_t now;
	uint64_t rtt_ns;           /* of the acked packet (0: no sample) */
	uint64_t base_rtt_ns;      /* smallest RTT seen on the QP's peer */
	uint32_t acked_bytes;
	uint8_t ecn;               /* the acked packet was ECN-CE marked */
};

struct mrce_cc_ops {
	const char *name;
	void (*init)(void *st, const struct mrce_cc_params *p);
	void (*on_ack)(void *st, const struct mrce_cc_sample *s);
	/* A congestion signal without an RTT sample: trim NACK or loss. */
	void (*on_trim)(void *st, uint64_t now);
	void (*on_loss)(void *st, uint64_t now);
	uint32_t (*cwnd)(const void *st);  /* bytes allowed in flight */
};

/* The default: delay- and ECN-driven window in the spirit of UET NSCC. */
extern const struct mrce_cc_ops mrce_cc_nscc;
/* No congestion control: the window alone bounds the QP (tests, sim). */
extern const struct mrce_cc_ops mrce_cc_fixed;

#endif
