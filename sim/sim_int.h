/* Internals shared by the sim/ files.  Not installed.
 *
 * Units: simulated time is kept in picoseconds (a 4 KiB frame at 100 Gbit/s
 * takes 339.04 ns, which nanoseconds would round); the engine is given
 * nanoseconds (t / 1000).  Sizes are bytes, rates Mbit/s.
 */
#ifndef MRC_SIM_SIM_INT_H
#define MRC_SIM_SIM_INT_H

#include <stdint.h>
#include <stdio.h>

#include "sim/evq.h"
#include "sim/rng.h"
#include "sim/sim.h"
#include "topology/topo.h"
#include "transport/engine.h"

#define SIM_NONE UINT32_MAX
#define SIM_MAX_HOPS 6            /* host, edge, agg, core, agg, edge */
#define SIM_PS_PER_NS 1000ull

/* ---- fabric (fabric.c) ------------------------------------------------ */

/* Ports are link directions: port = link * 2 + dir, dir 0 = up (from the
 * lower-tier end), 1 = down. */
struct sim_fabric {
	uint8_t kind;              /* enum mrc_sim_topo_kind */
	uint32_t planes, n_hosts, nev, max_hops;
	uint32_t n_nodes, n_links;
	/* Nodes by tier: 0 host, 1 leaf/edge, 2 spine/agg, 3 core. */
	const struct mrc_node *nodes;   /* topo's */
	uint32_t *lower, *upper;   /* per link */
	const uint32_t *host_node; /* host index -> node id (topo's) */
	uint8_t *plane_of_ev;
	uint32_t *adj_off, *adj;   /* node -> its links (CSR) */
	struct mrc_topo *topo;     /* the graph, both kinds */
	uint32_t k;                /* fattree */
	uint64_t rate_mbit, delay_ns;
};

int sim_fabric_build(struct sim_fabric *f, const struct mrc_sim_topo *t,
		     char *err, size_t errlen);
void sim_fabric_free(struct sim_fabric *f);
/* Source route of EV ev from host src to host dst: ports in order.
 * Returns the hop count, or -ENOENT when the pair has no such EV. */
int sim_fabric_route(const struct sim_fabric *f, uint32_t src, uint32_t dst,
		     uint32_t ev, uint32_t *ports);
int sim_fabric_node(const struct sim_fabric *f, const char *name, uint32_t *id);
int sim_fabric_link(const struct sim_fabric *f, uint32_t a, uint32_t b,
		    uint32_t *link);
/* NIC port of host h in plane p. */
uint32_t sim_fabric_nic(const struct sim_fabric *f, uint32_t h, uint32_t p);
static inline uint32_t sim_port_from(const struct sim_fabric *f, uint32_t port)
{
	return (port & 1) ? f->upper[port >> 1] : f->lower[port >> 1];
}
static inline uint32_t sim_port_to(const struct sim_fabric *f, uint32_t port)
{
	return (port & 1) ? f->lower[port >> 1] : f->upper[port >> 1];
}
void sim_fabric_describe(const struct sim_fabric *f, char *buf, size_t len);

/* ---- packets and ports (net.c) ----------------------------------------- */

#define PF_ECN  0x1u               /* marked ECN-CE on the way */
#define PF_PRIO 0x2u               /* control or trimmed: priority queue */
#define PF_DATA 0x4u               /* data packet (payload or trimmed) */
#define PF_SRC  0x8u               /* payload: src_buf + poff */
#define PF_INL  0x10u              /* payload: hdr + SIM_INL_OFF */

/* A packet in the fabric.  Only the header travels as bytes; the payload is
 * an offset into the source pattern every sender's registered memory is
 * (which the simulator owns and never changes during a run) and is joined
 * to the header when the packet reaches its destination engine.
 *
 * 128 bytes, so a chunk (line aligned) holds every record on two whole
 * lines, and what each hop reads or writes (next, route, hop, flags,
 * wire) is in the first: at 144 bytes three records in four had those
 * fields across two lines, the first misses of sim_arrive and
 * sim_port_txdone (bench/results/sim_fast.md).  Hence the narrow fields:
 * wire <= MRC_HDR_MAX + MRC_MAX_PAYLOAD + trailer + frame-overhead (at
 * most 1,024) < 2^16, and a 32-bit payload offset (SIM_SRC_MAX). */
struct sim_pkt {
	struct sim_pkt *next;
	uint32_t route[SIM_MAX_HOPS];
	uint8_t hop, nhops, flags, hdr_len;
	uint16_t wire, plen;       /* bytes on the wire, payload bytes */
	uint32_t dst, rx_peer;
	uint32_t poff;             /* PF_SRC: the payload's offset in src_buf */
	/* The header; a data header (SIM_INL_OFF bytes) leaves room for a
	 * small payload not in sim memory (an atomic's operand).  No CRC
	 * trailer: the engines run with skip_payload_crc, so it is zero. */
	uint8_t hdr[MRC_HDR_MAX];
};
_Static_assert(sizeof(struct sim_pkt) == 128, "a packet record is two cache lines");
/* The source pattern's largest size: payload offsets are 32-bit. */
#define SIM_SRC_MAX UINT32_MAX
#define SIM_INL_OFF MRC_DATA_HDR_LEN
#define SIM_INL_MAX (MRC_HDR_MAX - MRC_DATA_HDR_LEN)

enum { PS_OK = 0, PS_DOWN = 1, PS_BLACKHOLE = 2, PS_LOSS = 3 };

/* What every hop reads or writes, in one 64-byte line (the port array is
 * line aligned): the queue byte counts are 32-bit, which the scenario's
 * buffer and prio-buffer limits (at most SIM_QBYTES_MAX) guarantee for
 * switch ports; a NIC's queues hold at most nic-queue data packets per
 * plane plus the ACKs and probes its engine hands out. */
#define SIM_PORT_SW ((1u << 30) - 1)    /* from_host of a switch's port */
#define SIM_QBYTES_MAX (2ull << 30)
struct sim_port {
	struct sim_pkt *qh[2], *qt[2];  /* 0: priority, 1: data */
	struct sim_pkt *cur;            /* being serialised */
	uint32_t qbytes[2];
	uint32_t qmax;                  /* high-water mark of qbytes[1] */
	uint32_t from_host : 30;        /* SIM_PORT_SW: a switch transmits */
	uint32_t state : 2;             /* PS_* */
	uint64_t tx_bytes;
};
/* The rest, touched on drops, trims, marks and lossy links only. */
struct sim_port_cold {
	uint64_t drops, trims, marks;
	uint64_t loss_thr;              /* PS_LOSS: drop if rng < thr (2^64) */
};

struct sim_pool {
	struct sim_pkt *free;
	struct sim_pkt **chunks;
	uint32_t n_chunks, cap_chunks;
	uint64_t live, peak, total;
};

/* ---- hosts (host.c) ---------------------------------------------------- */

struct sim_host {
	struct mrce *eng;
	uint32_t npeers, nqps;
	uint32_t *peer_host;       /* local peer -> remote host */
	uint32_t *peer_rx;         /* local peer -> remote's peer for us */
	uint32_t *qp_conn;         /* qpn & 0xffff -> conn */
	/* Compact EVs (scenarios with a step workload): the engine knows a
	 * peer only by the pair's usable EVs, evmap[peer][i] the fabric EV of
	 * its EV i; NULL: engine EV = fabric EV, unusable ones DENIED. */
	uint16_t **evmap;
	uint16_t *nevmap;
	uint32_t queued;           /* data packets waiting in our NICs */
	uint32_t src_key, sink_key;
	uint64_t timer_at;         /* ps of the pending timer event */
	uint64_t idle_since;       /* stalls: ps its NIC went idle (0: busy) */
	uint8_t idle_why;          /* stalls: enum sim_stall */
	uint16_t denied_planes;    /* planes whose NIC link is down */
	uint8_t rx_open;           /* a receive batch is open (SE_RXEND due) */
};

/* ---- flows (workload.c) ------------------------------------------------ */

struct sim_flow {
	uint32_t src, dst, wl;
	uint32_t conn0, nconn;     /* its parts: conns[conn0 .. +nconn) */
	uint32_t parts_done, parts_recv;
	uint32_t dep;              /* flow posted when this one arrives */
	uint64_t size, start_ps, end_ps, recv_ps, ideal_ps, rtt_ps;
	uint64_t placed;
	int32_t status;
	uint8_t affected, posted, triggered;
	uint8_t *rbuf;             /* verify mode: its own receive buffer */
	uint32_t rkey;
	uint64_t loff;             /* offset in the shared source pattern */
};

/* One QP pair carrying one part of a flow. */
struct sim_conn {
	uint32_t flow;
	uint32_t sqpn, dqpn;
	uint64_t off, len;
};

struct sim_job {               /* one workload entry's summary */
	uint32_t flow0, nflows;
	uint64_t start_ps, end_ps, ideal_ps;
};

/* ---- sender stalls (stalls.c) ------------------------------------------ */

/* Why a host's NIC had no data packet while one of its flows was still
 * sending: the flow's QPs were waiting for ACKs of everything (drain),
 * their congestion window was full (cwnd), every window slot was in
 * flight (window), or neither by the in-flight count (other: the
 * sequence window, held by an unacknowledged packet while later ones are
 * acknowledged; or no usable path). */
enum sim_stall { SIM_STALL_DRAIN, SIM_STALL_CWND, SIM_STALL_WINDOW, SIM_STALL_OTHER,
		 SIM_STALL__N };

struct sim_stalls {
	uint64_t ps[SIM_STALL__N]; /* idle time by cause, summed over hosts */
	uint64_t send_ps;          /* flow send time (start to completion) */
	uint64_t n, cwnd_sum, srtt_sum;  /* QP samples when a NIC went idle */
};

/* ---- the simulator ----------------------------------------------------- */

enum { SE_ARRIVE = 1, SE_TXDONE, SE_TIMER, SE_START, SE_FAULT, SE_STEP, SE_RXEND };

struct sim_fault_rec {
	uint64_t t_ps;
	uint8_t tgt_kind;          /* node, link (both ways), port (one way) */
	uint32_t tgt;
	uint32_t affected;         /* flows whose paths cross the target */
	uint64_t first_bad_ps, last_bad_ps;  /* EV -> ASSUMED_BAD after it */
	uint32_t bad_evs;
	int64_t recover_ps;        /* goodput recovery (-1: not seen) */
	double pre_gbps;
};

struct mrc_sim {
	struct mrc_sim_cfg cfg;
	struct sim_fabric fab;
	struct sim_port *ports;
	struct sim_port_cold *pcold;
	uint32_t n_ports;
	struct sim_host *hosts;
	struct mrce **engs;        /* hosts[h].eng, dense: the loop's prefetch */
	struct sim_flow *flows;
	uint32_t n_flows, flows_done, flows_failed;
	struct sim_conn *conns;
	uint32_t n_conns;
	struct sim_job jobs[MRC_SIM_MAX_WORKLOADS];
	struct sim_evq q;
	struct sim_pool pool;
	struct mrc_rng rng;
	uint64_t now;              /* ps */
	uint64_t ser_num;          /* 8e6: ser_ps = bytes * 8e6 / rate_mbit */
	uint64_t prop_ps;
	uint32_t nic_limit;
	uint8_t rx_batch;          /* arrivals end in a batch (cfg.rx_batch_*) */
	uint32_t *rxq, n_rxq;      /* hosts whose same-instant batch is open */
	uint64_t sched_min;        /* earliest event scheduled since reset */
	uint64_t host_cap_mbit;
	struct mrce_cfg ecfg;
	/* memory shared by every host: the source pattern and a sink */
	uint8_t *src_buf, *sink_buf;
	uint64_t src_len, sink_len;
	uint8_t *rx_buf;           /* header + payload + trailer assembly */
	/* counters */
	uint64_t events;
	uint64_t drop_full, drop_prio, drop_down, drop_blackhole, drop_loss;
	uint64_t drop_noroute, trims, marks;
	uint64_t bytes_placed;
	/* EV state changes */
	struct mrc_sim_ev_change *evc;
	uint32_t n_evc, cap_evc;
	uint64_t evc_total, floor_events, qp_errors;
	/* goodput series: bytes placed per bin, all flows / affected flows */
	uint64_t bin_ps;
	uint64_t *gp_all, *gp_aff;
	uint32_t n_bins, cap_bins;
	struct sim_fault_rec frec[MRC_SIM_MAX_FAULTS];
	uint64_t first_start_ps, last_end_ps;
	struct sim_stalls stalls;  /* cfg.stalls */
	struct sim_step_rt *step;  /* the step workload (step.c), or NULL */
	uint32_t step_ep, step_local;  /* its groups, as resolved */
	int stalled, verified, ran, oom;
	uint32_t progress_every;
	char desc[256];
	/* timing (only reported with --timing) */
	double wall_s, cpu_s;
	long maxrss_kb;
	/* fabric-link health (health.c), with cfg.health set */
	struct sim_health *health;
	struct {
		uint64_t senders, last_ps, share_msgs, denials, suspects;
		uint64_t tell_msgs, recs, refused;  /* tells delivered; records
		                                       delivered, not merged */
	} hfig;
};

/* net.c */
/* Line-aligned memory, in huge pages when at least 2 MiB (free()). */
void *sim_alloc_huge(size_t size);
int sim_pool_init(struct sim_pool *p);
void sim_pool_free(struct sim_pool *p);
struct sim_pkt *sim_pkt_alloc(struct mrc_sim *s);
static inline void sim_pkt_free(struct mrc_sim *s, struct sim_pkt *k)
{
	k->next = s->pool.free;
	s->pool.free = k;
	s->pool.live--;
}
/* A packet enters port (a NIC from its host, or a switch output). */
void sim_port_enqueue(struct mrc_sim *s, uint32_t port, struct sim_pkt *k);
void sim_port_txdone(struct mrc_sim *s, uint32_t port);
void sim_arrive(struct mrc_sim *s, struct sim_pkt *k);
/* Drops everything queued on a port (link or switch down). */
void sim_port_flush(struct mrc_sim *s, uint32_t port);
static inline uint64_t sim_ser_ps(const struct mrc_sim *s, uint32_t bytes)
{
	return ((uint64_t)bytes * s->ser_num + s->fab.rate_mbit - 1) / s->fab.rate_mbit;
}
/* Both set s->oom on failure. sim_schedule_in: delay after now (the
 * event queue's FIFOs: see evq.h). */
int sim_schedule(struct mrc_sim *s, uint64_t t, uint8_t type, uint64_t arg);
int sim_schedule_in(struct mrc_sim *s, uint64_t delay, uint8_t type, uint64_t arg);

/* host.c */
int sim_hosts_create(struct mrc_sim *s, char *err, size_t errlen);
void sim_hosts_free(struct mrc_sim *s);
void sim_host_rx(struct mrc_sim *s, struct sim_pkt *k);
void sim_host_timer(struct mrc_sim *s, uint32_t h, uint64_t t);
void sim_host_service(struct mrc_sim *s, uint32_t h);
void sim_host_nic_free(struct mrc_sim *s, uint32_t h);
void sim_host_rx_end(struct mrc_sim *s, uint32_t h);
/* Ends the same-instant batches (rx-batch 0) of the instant now over. */
void sim_host_rx_flush(struct mrc_sim *s);
void sim_host_plane_link(struct mrc_sim *s, uint32_t h, uint32_t plane, int down);
int sim_host_peer(const struct mrc_sim *s, uint32_t h, uint32_t remote, uint32_t *peer);

/* workload.c */
int sim_workload_build(struct mrc_sim *s, char *err, size_t errlen);
int sim_parse_size(const char *v, uint64_t *out);
int sim_parse_time(const char *v, uint64_t *out);
void sim_flow_start(struct mrc_sim *s, uint32_t f);
void sim_flow_part_done(struct mrc_sim *s, uint32_t flow, int32_t status);
void sim_flow_part_recv(struct mrc_sim *s, uint32_t flow);
uint64_t sim_wire_bytes(const struct mrc_sim *s, uint64_t size);
uint64_t sim_pair_rtt_ps(const struct mrc_sim *s, uint32_t src, uint32_t dst);
const char *sim_wl_name(uint8_t kind);

/* stalls.c: the NIC of h has no data packet / sends one again. */
void sim_stall_begin(struct mrc_sim *s, uint32_t h);
void sim_stall_end(struct mrc_sim *s, uint32_t h);

/* step*.c: the training-step workload (its runtime: step_int.h) */
struct sim_step_rt;
int sim_step_gen(struct mrc_sim *s, uint32_t w, uint32_t *cap_flows, uint32_t *cap_conns,
		 char *err, size_t errlen);
void sim_step_free(struct mrc_sim *s);
int sim_step_kick(struct mrc_sim *s);
void sim_step_event(struct mrc_sim *s, uint32_t h);
int sim_step_owns(const struct mrc_sim *s, uint32_t f);
void sim_step_sent(struct mrc_sim *s, uint32_t f);
void sim_step_recv(struct mrc_sim *s, uint32_t f);
int sim_step_pending(const struct mrc_sim *s);
uint64_t sim_step_ideal_ps(const struct mrc_sim *s);
uint32_t sim_step_nb(const struct mrc_sim *s);

/* fault.c */
int sim_faults_check(struct mrc_sim *s, char *err, size_t errlen);
int sim_faults_mark(struct mrc_sim *s);
void sim_fault_apply(struct mrc_sim *s, uint32_t i);
void sim_faults_analyse(struct mrc_sim *s);
const char *sim_fault_kind_name(uint8_t k);

/* health.c: per-host link health (cfg.health) and its figures */
int sim_health_init(struct mrc_sim *s);
void sim_health_free(struct mrc_sim *s);
void sim_health_event(struct mrc_sim *s, uint32_t h, const struct mrce_event *ev);
void sim_health_tick(struct mrc_sim *s, uint32_t h);
void sim_health_dead(struct mrc_sim *s, const struct sim_pkt *k);
void sim_health_tx(struct mrc_sim *s, uint32_t h, uint32_t peer);
void sim_health_fmt(const struct mrc_sim *s, int json, char *buf, size_t len);

/* sim.c */
void sim_goodput_add(struct mrc_sim *s, uint32_t flow, uint64_t bytes);
void sim_record_event(struct mrc_sim *s, uint32_t h, const struct mrce_event *ev);

/* record.c: qsort order of doubles; percentiles of the slowdowns (sorted
 * copy, nearest rank) */
int sim_dbl_cmp(const void *a, const void *b);
double sim_pct(const double *sorted, uint32_t n, double p);
void sim_human_bytes(uint64_t b, char *buf, size_t len);
void sim_human_time(uint64_t ps, char *buf, size_t len);

#endif
