/* mrcsim: a discrete-event simulator of a datacenter fabric that runs the
 * real MRC engine (transport/) on every host.  docs/sim.md describes the
 * model, the scenario format and the outputs.
 *
 * Typical use: fill a scenario (mrc_sim_cfg_default, then
 * mrc_sim_cfg_set for each "key value" of the command line or
 * mrc_sim_cfg_load_json), mrc_sim_create, mrc_sim_run, then read the
 * report (mrc_sim_report_json / _text) or the accessors.  The same scenario
 * and seed always give the same report, bit for bit.
 */
#ifndef MRC_SIM_SIM_H
#define MRC_SIM_SIM_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define MRC_SIM_MAX_WORKLOADS 16
#define MRC_SIM_MAX_FAULTS 64
#define MRC_SIM_NAME_MAX 40
#define MRC_SIM_ERRLEN 256

enum mrc_sim_topo_kind { MRC_SIM_CLOS = 0, MRC_SIM_FATTREE = 1 };

struct mrc_sim_topo {
	uint8_t kind;              /* enum mrc_sim_topo_kind */
	uint32_t planes;           /* 1..16 */
	/* clos (2-tier, from topology/'s generator) */
	uint32_t leaves, spines, hosts_per_leaf;
	/* fattree (3-tier, k-ary: k^3/4 hosts per plane) */
	uint32_t k;
	uint64_t rate_mbit;        /* every link, each direction */
	uint64_t delay_ns;         /* propagation delay of every link */
};

enum mrc_sim_wl_kind {
	MRC_SIM_WL_PERMUTATION = 0,
	MRC_SIM_WL_ALLTOALL,       /* MoE-style: all pairs within groups */
	MRC_SIM_WL_RING,           /* ring all-reduce within groups */
	MRC_SIM_WL_INCAST,         /* many senders, one receiver */
	MRC_SIM_WL_FLOW,           /* one flow src -> dst */
	MRC_SIM_WL_STEP,           /* training steps: compute, MoE, gradients
	                              (sim/step.c, docs/sim.md) */
};

/* A training step (MRC_SIM_WL_STEP): per step, layers of forward compute
 * with one MoE layer (dispatch, expert compute, combine: 2-D hierarchical
 * all-to-all within expert-parallel groups, expert capacity drops), then
 * backward compute (the MoE layer's two all-to-alls again) whose gradients
 * are reduced in buckets (ring reduce-scatter + all-gather over dp hosts)
 * while the backward pass goes on; a step ends when its compute and its
 * buckets are done.  Times are ns, sizes bytes. */
struct mrc_sim_step {
	uint32_t layers, steps;
	uint32_t moe_layer;        /* forward index of the MoE layer */
	uint64_t fwd_ns, bwd_ns;   /* per layer (the expert's own the same) */
	uint32_t tokens;           /* per host per MoE all-to-all (0: no MoE) */
	uint32_t tok_bytes, topk;
	double cap;                /* expert capacity factor */
	double skew;               /* expert popularity: weights exp(skew*N(0,1)) */
	uint32_t ep;               /* expert-parallel group (0: all hosts) */
	uint32_t local;            /* its inner dimension (0: hosts per leaf) */
	uint32_t dp;               /* gradient ring size */
	uint64_t grad, bucket;     /* gradient bytes per layer, bucket size */
	uint64_t bulk;             /* background flow per host per step (0: off) */
};

struct mrc_sim_workload {
	uint8_t kind;              /* enum mrc_sim_wl_kind */
	uint64_t size;             /* bytes per flow (ring: per host buffer) */
	uint64_t start_ns;
	uint64_t jitter_ns;        /* starts uniform in [start, start+jitter) */
	uint32_t group;            /* alltoall/ring group size (0: all hosts) */
	uint32_t senders;          /* incast */
	uint32_t src, dst;         /* flow; incast receiver (dst) */
	uint32_t qps;              /* QPs per flow (the flow is split) */
	struct mrc_sim_step step;  /* MRC_SIM_WL_STEP */
};

enum mrc_sim_fault_kind {
	MRC_SIM_F_DOWN = 0,        /* link or switch down (loud) */
	MRC_SIM_F_BLACKHOLE,       /* silently drop everything */
	MRC_SIM_F_LOSS,            /* drop each packet with probability loss */
	MRC_SIM_F_RECOVER,         /* back to healthy */
};

struct mrc_sim_fault {
	uint64_t at_ns;
	uint8_t kind;              /* enum mrc_sim_fault_kind */
	double loss;
	char target[MRC_SIM_NAME_MAX]; /* "p0s1", "p0l0-p0s1", "p0l0>p0s1" */
};

enum mrc_sim_mode { MRC_SIM_SPRAY = 0, MRC_SIM_ECMP = 1 };

struct mrc_sim_cfg {
	struct mrc_sim_topo topo;
	struct mrc_sim_workload wl[MRC_SIM_MAX_WORKLOADS];
	uint32_t n_wl;
	struct mrc_sim_fault faults[MRC_SIM_MAX_FAULTS];
	uint32_t n_faults;
	uint8_t mode;              /* enum mrc_sim_mode */
	uint32_t paths;            /* spray over this many EVs per pair (0: all) */
	/* switch output ports */
	uint64_t buffer;           /* data queue bytes per port */
	uint64_t ecn;              /* mark ECN-CE above this queue (0: off) */
	uint64_t trim;             /* trim above this queue (0: off, drop) */
	uint64_t prio_buffer;      /* control / trimmed-header queue bytes */
	uint32_t frame_overhead;   /* bytes per packet below MRC: IPv6, UDP,
	                              Ethernet, preamble and gap */
	uint32_t nic_queue;        /* data packets queued per NIC (pacing) */
	/* receive batch: arrivals at a host go to its engine as they come,
	 * and the engine is asked for packets (its ACKs among them) once, at
	 * the end of the batch, which closes this long after its first
	 * arrival (0: the same instant), as mrcd sends after a turn's
	 * recvmmsg.  rx_batch_off: after every arrival instead. */
	uint64_t rx_batch_ns;
	uint8_t rx_batch_off;
	/* engine */
	uint32_t mtu, window;      /* window 0: auto (2 BDP, power of 2) */
	uint8_t cc_fixed;          /* 1: MRCE_CC_FIXED, 0: MRCE_CC_NSCC */
	uint64_t rto_min_ns, probe_interval_ns, reorder_slack_ns;
	uint64_t tlp_min_ns;       /* cfg.tlp_min_ns (0: off), if tlp_set */
	uint8_t tlp_set;
	uint8_t tlp_lone;          /* 0: engine default (on); 1 on, 2 off
	                              (mrcd.conf tlp_lone, off there) */
	uint32_t ev_floor;
	/* run */
	uint64_t seed;
	uint64_t until_ns;         /* hard stop (virtual time) */
	uint64_t hold_ns;          /* keep running at least until then */
	uint64_t bin_ns;           /* goodput time-series bin */
	uint64_t verify_limit;     /* per-flow receive buffers (and a byte
	                              comparison) when all flows fit in this */
	uint8_t progress;          /* progress line on stderr */
	uint8_t stalls;            /* account why senders' NICs sit idle
	                              (report "stalls"; sim/stalls.c) */
	uint8_t spray_slot;        /* 1: each engine's cfg.spray_slot is its
	                              host's index under its leaf (clos) or
	                              pod (fat tree); 0: the engine's hash */
	/* fabric-link health per host (sim/health.c; 0: unset, no report) */
	uint8_t health;            /* enum mrc_sim_health */
	uint64_t health_tick_ns;   /* its evaluation tick (10 ms) */
};

enum mrc_sim_health {
	MRC_SIM_HEALTH_UNSET = 0, MRC_SIM_HEALTH_OFF, MRC_SIM_HEALTH_LOCAL,
	MRC_SIM_HEALTH_SHARED,
};

struct mrc_sim;

/* Defaults: a small 2-plane clos, permutation of 1 MiB, spray, NSCC. */
void mrc_sim_cfg_default(struct mrc_sim_cfg *c);
/* One scenario setting, as on the command line: key is the option name
 * without dashes ("topo", "workload", "fault", "seed", "buffer", ...).
 * Returns 0, or -EINVAL with err naming the field, the value and why. */
int mrc_sim_cfg_set(struct mrc_sim_cfg *c, const char *key, const char *val,
		    char *err, size_t errlen);
/* A JSON scenario: an object whose keys are the same settings; "workload"
 * and "fault" may be arrays; values are strings or numbers, or objects
 * {"type": ..., key: value} for topo / workload entries. */
int mrc_sim_cfg_load_json(struct mrc_sim_cfg *c, const char *text, size_t len,
			  char *err, size_t errlen);
/* Keys mrc_sim_cfg_set knows, for --help. */
const char *mrc_sim_cfg_help(void);

int mrc_sim_create(const struct mrc_sim_cfg *c, struct mrc_sim **out, char *err,
		   size_t errlen);
/* Runs to completion (every flow done), until_ns, or a stall.  0, or a
 * negative errno for an internal failure (err says what). */
int mrc_sim_run(struct mrc_sim *s, char *err, size_t errlen);
void mrc_sim_destroy(struct mrc_sim *s);

/* JSON report (malloc'd, NUL-terminated).  timing: add wall time, events
 * per second and memory (the only non-deterministic fields). */
int mrc_sim_report_json(const struct mrc_sim *s, int timing, char **out);
void mrc_sim_report_text(const struct mrc_sim *s, int timing, FILE *f);
/* PNG plots (gnuplot) and their data files into dir. */
int mrc_sim_plot(const struct mrc_sim *s, const char *dir, char *err, size_t errlen);

/* ---- results, for tests and tools ------------------------------------ */
struct mrc_sim_summary {
	uint32_t flows, flows_done, flows_failed;
	uint64_t bytes, bytes_placed;  /* posted, placed by receivers */
	uint64_t end_ns;               /* virtual time at the end */
	double slow_p50, slow_p99, slow_max;  /* FCT / ideal */
	uint64_t events;
	uint64_t drops, trims, ecn_marks, retx;
	uint32_t ev_changes;
	int verified;                  /* 1: bytes compared equal, 0: not
	                                  compared, -1: mismatch */
};
void mrc_sim_summary(const struct mrc_sim *s, struct mrc_sim_summary *out);

struct mrc_sim_flow_info {
	uint32_t src, dst;
	uint64_t size, start_ns, end_ns, ideal_ns;
	int32_t status;
};
uint32_t mrc_sim_flow_count(const struct mrc_sim *s);
int mrc_sim_flow(const struct mrc_sim *s, uint32_t i, struct mrc_sim_flow_info *f);

struct mrc_sim_ev_change {
	uint64_t t_ns;
	uint32_t host, peer_host;      /* engine of host, its peer */
	uint16_t ev;
	uint8_t old_state, new_state, reason;
};
uint32_t mrc_sim_ev_change_count(const struct mrc_sim *s);
const struct mrc_sim_ev_change *mrc_sim_ev_changes(const struct mrc_sim *s);

/* The engine of a host and its peer index for another host (tests). */
struct mrce *mrc_sim_engine(const struct mrc_sim *s, uint32_t host);
int mrc_sim_peer(const struct mrc_sim *s, uint32_t host, uint32_t remote,
		 uint32_t *peer);
/* EV count of the fabric and the EVs of a host pair that cross a node
 * (by name); *n of them stored (at most max). */
uint32_t mrc_sim_ev_count(const struct mrc_sim *s);
int mrc_sim_evs_crossing(const struct mrc_sim *s, uint32_t src, uint32_t dst,
			 const char *node, uint16_t *evs, size_t max, size_t *n);
/* Base RTT (ns) of the pair's longest path: data packet out, ACK back. */
uint64_t mrc_sim_base_rtt(const struct mrc_sim *s, uint32_t src, uint32_t dst);

/* ---- the step workload (sim/step.c) ----------------------------------- */
enum mrc_sim_phase {
	MRC_SIM_PH_FWD = 0,        /* computing: forward layer */
	MRC_SIM_PH_BWD,            /* computing: backward layer */
	MRC_SIM_PH_EXPERT,         /* computing: the MoE layer's expert */
	MRC_SIM_PH_A2A,            /* waiting on an all-to-all phase */
	MRC_SIM_PH_GRAD,           /* waiting on gradient buckets (step end) */
};
/* One interval of a host's step: compute phases and the waits between
 * them (issue 35 reads these as the host's power phases). */
struct mrc_sim_phase_iv {
	uint64_t t0_ns, t1_ns;
	uint32_t step;
	uint8_t kind;              /* enum mrc_sim_phase */
};
/* Intervals of host h in time order (*n of them), or NULL. */
const struct mrc_sim_phase_iv *mrc_sim_phases(const struct mrc_sim *s, uint32_t h,
					      uint32_t *n);
struct mrc_sim_step_result {
	uint32_t steps, hosts;
	uint64_t compute_ns;       /* compute per step per host */
	uint64_t step_ns[64];      /* per step: last host's end - previous */
	uint64_t exposed_mean_ns[64], exposed_max_ns[64];
	uint64_t time_to_n_ns;     /* the last host's end of the last step */
	uint64_t step_trimmed_ns;  /* mean step, best and worst dropped (>=3) */
	uint64_t tokens, dropped;  /* per step, all hosts, token-expert pairs */
	int done;                  /* every host finished every step */
};
/* -ENOENT when the scenario has no step workload. */
int mrc_sim_step_result(const struct mrc_sim *s, struct mrc_sim_step_result *r);

#endif
