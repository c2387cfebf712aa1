/* A seeded, deterministic in-memory multipath network for engine tests.
 *
 * It connects 2..CHAN_MAX_NODES engines (full mesh, every pair with the
 * same EV table) under a virtual clock in nanoseconds.  Every (src, dst, EV)
 * is one path with its own delay, jitter, loss, duplication, trimming,
 * corruption, ECN marking, blackhole window and optional serialization
 * rate with a finite queue.  Packets are copied into channel memory when an
 * engine hands them over (the engine's payload pointer only lives until its
 * next call) and delivered from a binary heap ordered by (time, sequence),
 * so a run is a pure function of the seed.
 *
 * The driver (chan_run) never hangs: it stops on the caller's predicate, on
 * a virtual-time bound, on a step bound, or when nothing is left to happen,
 * and says which.
 */
#ifndef MRC_TESTS_CHAN_H
#define MRC_TESTS_CHAN_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "transport/engine.h"
#include "common/heap.h"
#include "common/prng.h"

#define CHAN_MAX_NODES 8
#define CHAN_T0 ((uint64_t)1000000000)   /* virtual time starts at 1 s, not 0 */

struct chan_path_cfg {
	uint64_t delay_ns;         /* base one-way delay */
	uint64_t jitter_ns;        /* plus uniform [0, jitter) per packet */
	double loss, dup, trim, corrupt, ecn;   /* per-packet probabilities */
	double rate;               /* bytes per ns; 0: infinitely fast */
	uint64_t q_drop;           /* queued bytes above which a packet drops */
	uint64_t q_trim;           /* ... above which a data packet is trimmed */
	uint64_t q_ecn;            /* ... above which a packet is ECN-CE marked */
	uint64_t bh_from, bh_until;/* blackhole during [from, until) */
};

/* Per-path state and counters (payload bytes of data packets only). */
struct chan_path {
	struct chan_path_cfg cfg;
	uint64_t busy_until;       /* serializer free at */
	uint64_t tx_pkts, tx_bytes, rx_pkts, rx_bytes;
};

struct chan_cfg {
	uint32_t nodes;            /* 2..CHAN_MAX_NODES */
	uint32_t nev;              /* EVs per peer, <= MRCE_MAX_EVS */
	uint32_t planes;           /* EV e is in plane e % planes */
	uint64_t seed;
	struct mrce_cfg ecfg;/* every engine's config */
	/* When non-zero, node i's engine gets this rnr_delay_ns instead (an
	 * RNR test where sender and receiver disagree). */
	uint64_t node_rnr_delay_ns[CHAN_MAX_NODES];
	struct chan_path_cfg path; /* every path starts as this */
	/* When delay_max > 0, each path's base delay is drawn from
	 * [delay_min, delay_max] (same both ways), so spraying reorders. */
	uint64_t delay_min, delay_max;
	int keep_logs;             /* keep every completion and event */
	uint32_t rx_flags;         /* ORed into every delivery (MRCE_RX_LOCAL) */
	int split;                 /* data with payload delivered by mrce_rx_split,
	                              the payload first copied apart */
};

struct chan_node {
	struct mrce *e;
	uint32_t peer[CHAN_MAX_NODES];     /* this engine's peer id of node j */
	struct mrce_wc *wc;
	size_t nwc, wc_cap;
	struct mrce_event *evt;
	size_t nevt, evt_cap;
	uint64_t wc_total, evt_total, rx_err;
};

struct chan_stats {
	uint64_t handed, delivered, lost, blackholed, q_dropped, dups, trimmed,
		 corrupted, ecn_marked, max_queued;
	uint64_t corrupt_accepted;  /* corrupted packets the engine took (must be 0) */
};

struct chan;
typedef void (*chan_wc_fn)(struct chan *ch, uint32_t node, const struct mrce_wc *wc, void *arg);
typedef void (*chan_evt_fn)(struct chan *ch, uint32_t node, const struct mrce_event *ev, void *arg);
typedef int (*chan_pred_fn)(struct chan *ch, void *arg);
/* Sees every packet as handed over (before impairments). */
typedef void (*chan_tx_fn)(struct chan *ch, uint32_t src, uint32_t dst, uint16_t ev,
			   const uint8_t *pkt, size_t len, void *arg);

struct chan_pkt;

struct chan {
	struct chan_cfg cfg;
	uint64_t now;
	struct mrc_rng rng;
	struct chan_node node[CHAN_MAX_NODES];
	struct chan_path *paths;           /* [src][dst][ev] */
	uint8_t *plane_of;                 /* [ev] */
	/* Data payload bytes by EV and by plane, all directions together. */
	uint64_t *ev_tx_bytes, *ev_rx_bytes;
	uint64_t plane_tx_bytes[MRCE_MAX_PLANES], plane_rx_bytes[MRCE_MAX_PLANES];
	uint64_t plane_tx_pkts[MRCE_MAX_PLANES];
	struct chan_stats st;
	uint64_t steps;

	/* An on_tx hook may set this to hold the packet in hand this much
	 * longer (to force one precise reordering); reset after each packet. */
	uint64_t hold_ns;

	chan_wc_fn on_wc;
	chan_evt_fn on_evt;
	chan_tx_fn on_tx;
	void *hook_arg;

	/* delivery heap (packets by time, then seq) and packet pools */
	struct mrc__heap heap;
	uint64_t seq;
	struct chan_pkt *free_small, *free_big;
	size_t big_cap;
};

/* Creates the engines and the full mesh of peers; 0 or -errno (why set). */
int chan_create(const struct chan_cfg *cfg, struct chan **out, const char **why);
void chan_destroy(struct chan *ch);
/* A config with defaults: 2 nodes, 8 EVs in 2 planes, 5..20 us delays. */
void chan_cfg_default(struct chan_cfg *cfg, uint64_t seed);

static inline struct chan_path *chan_path(struct chan *ch, uint32_t src, uint32_t dst,
					  uint32_t ev)
{
	return &ch->paths[((size_t)src * ch->cfg.nodes + dst) * ch->cfg.nev + ev];
}

/* Applies cfg to every path (keeping each path's drawn delay when
 * keep_delay is set). */
void chan_set_all(struct chan *ch, const struct chan_path_cfg *cfg, int keep_delay);
/* Blackholes a path both ways / a whole plane between all pairs. */
void chan_blackhole_ev(struct chan *ch, uint32_t a, uint32_t b, uint32_t ev,
		       uint64_t from, uint64_t until);
void chan_blackhole_plane(struct chan *ch, uint32_t plane, uint64_t from, uint64_t until);
void chan_blackhole_all(struct chan *ch, uint64_t from, uint64_t until);
/* Largest round-trip base delay (plus jitter) over all paths. */
uint64_t chan_max_rtt(const struct chan *ch);

/* Creates a QP on node a and one on node b and connects them with seeded
 * initial PSNs (half of the time close to the 32-bit wrap) and tokens
 * (chan_qp_token: what node `from`'s QP puts in the packets it sends). */
int chan_qp_pair(struct chan *ch, uint32_t a, uint32_t b, const struct mrce_qp_attr *aa,
		 const struct mrce_qp_attr *ab, uint32_t *qa, uint32_t *qb);

/* The tokens chan_create / chan_qp_pair give the engines (never 0):
 * those of probes node `from` sends to node `to`, and those of packets QP
 * from_qpn of node `from` sends to QP to_qpn of node `to`. */
uint64_t chan_probe_token(const struct chan *ch, uint32_t from, uint32_t to);
uint64_t chan_qp_token(const struct chan *ch, uint32_t from, uint32_t from_qpn,
		       uint32_t to, uint32_t to_qpn);

/* Runs until done(ch, arg) is true (0), or: -ETIMEDOUT when virtual time
 * would pass now + max_ns, -EDEADLK when nothing is pending and done is
 * still false, -E2BIG after max_steps loop iterations.  With done == NULL it
 * runs to now + max_ns and returns 0.  Failures print a diagnosis. */
int chan_run(struct chan *ch, chan_pred_fn done, void *arg, uint64_t max_ns,
	     uint64_t max_steps);
/* Drains tx of every engine into the network and polls completions and
 * events (the first half of one driver step). */
void chan_pump(struct chan *ch);

/* Completions logged for node n with qpn (any qpn: UINT32_MAX). */
size_t chan_count_wc(const struct chan *ch, uint32_t n, uint32_t qpn, int op);
size_t chan_count_evt(const struct chan *ch, uint32_t n, int type);
void chan_clear_logs(struct chan *ch);
void chan_dump(const struct chan *ch, FILE *f);

#endif
