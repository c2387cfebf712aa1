/* mrcd configuration: /etc/mrcd/mrcd.conf (INI, parsed with inih) and the
 * command line, which takes every key of the file as --key=value.  See
 * man/mrcd.conf.5 and docs/operator.md. */
#ifndef MRC_DAEMON_CONFIG_H
#define MRC_DAEMON_CONFIG_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "transport/engine.h"   /* MRCE_MAX_MRS */

#define MRCD_CONF_DEFAULT "/etc/mrcd/mrcd.conf"
#define MRCD_KEY_DEFAULT "/etc/mrcd/cluster.key"
#define MRCD_PATH_MAX 256
#define MRCD_CONF_MAX (1 << 20)   /* bytes in a configuration file */
#define MRCD_CFG_AUTO UINT32_MAX  /* a key's "auto": the daemon picks at start */

struct mrcd_cfg {
	char topology[MRCD_PATH_MAX];   /* "" : built-in single-host loopback */
	char host[64];                  /* name or index of this node */
	char socket[MRCD_PATH_MAX];
	char ctl_socket[MRCD_PATH_MAX]; /* "" : mrcctl.sock beside socket */
	uint32_t socket_mode;
	char socket_group[64];          /* "" : root only */
	char admin_group[64];           /* "" : admin verbs for root only */
	uint32_t port;
	char plane_ifs[MRCD_PATH_MAX];  /* "a,b,..." ; "" : from the topology */
	uint32_t log_level;             /* syslog levels 3..7 */
	uint32_t mtu, local_mtu, window, ev_floor;
	uint32_t loopback_inproc;       /* 1: loopback mode's datagrams to itself in-process */
	uint32_t probe_interval_us, probe_max_interval_us, rto_min_us, rto_max_us;
	char cc[16];                    /* nscc | fixed */
	uint32_t max_clients, client_max_qps, client_max_mem_mb, ring_entries;
	uint32_t busy_poll_us;          /* keep polling after the last work;
	                                   MRCD_CFG_AUTO: mrcd_busy_poll_auto() */
	uint32_t gpu_park_us;           /* polled ring idle this long: parked */
	uint32_t gpu_poll_min_us, gpu_poll_max_us;  /* parked-ring timer */
	uint32_t power_floor, power_floor_hold_us;  /* power-floor hint (notify.c) */
	char metrics_listen[64];        /* "" : off; "[::1]:9464" */
	char key_file[MRCD_PATH_MAX];   /* the cluster key (mrcd --genkey) */
	uint32_t max_clock_skew_ms;     /* CTRL stamps this far from our clock
	                                   are refused (hosts run NTP/PTP) */
	uint32_t rnr_retry;             /* 0..7, 7 = forever */
	uint32_t no_path_timeout_ms;    /* a QP with every path denied fails after */
	/* operator caps, per-uid limits, service id reservations */
	uint32_t ctl_max_conns, metrics_max_conns;
	uint32_t client_max_mrs;
	uint32_t uid_max_clients, uid_max_qps, uid_max_mrs, uid_max_mem_mb;
	/* local sockets: connections not yet identified, admin slots, idle
	 * connections (docs/security.md "Local users") */
	uint32_t uid_max_pending, client_hello_timeout_ms;
	uint32_t ctl_uid_max_conns, ctl_admin_reserve, ctl_idle_timeout_ms;
	uint32_t metrics_idle_timeout_ms;
	char service_reserve[512];      /* "SID[-SID]:uid|user[,...]" */
	char payload_encryption[16];    /* off | aes-gcm (daemon/core/enc.h) */
	char state_dir[MRCD_PATH_MAX];  /* "" : $STATE_DIRECTORY (systemd), else none */
	uint32_t qp_ev_stats;           /* EVs counted per QP (mrcctl qps) */
	uint32_t xack;                  /* mrce_cfg.xack (not with payload_encryption) */
	uint32_t engine_timerfd;        /* 0/1: the engine timer on a timerfd (timer.c) */
	uint32_t ack_delay_us;          /* mrce_cfg.ack_delay_ns (node.c clamps it) */
	uint32_t tlp_lone;              /* mrce_cfg.tlp_lone */
	uint32_t urgent_turn_us;        /* a bulk turn serves urgent work this
	                                   often (urgent.c); 0: never */
	uint32_t sched_slice_us;        /* mrcd's EEVDF slice (core.c); 0: the kernel's */
	uint32_t dscp_default, dscp_urgent, dscp_bulk; /* per enum mrce_tclass */
	uint32_t bulk_min_pct;          /* mrce_cfg.bulk_min_pct */
	char datapath[16];              /* a datapath.h provider: udp (default), ... */
	char datapath_args[MRCD_PATH_MAX]; /* provider options (docs/datapaths.md) */
	char spray_slot[8];             /* topo | hash (mrce_cfg.spray_slot) */
	/* fabric-link health (daemon/core/health.c, docs/health.md) */
	uint32_t health_share;          /* 0/1: HEALTH exchange */
	uint32_t health_suspect;        /* 0/1: suspected uplinks (health/suspect.h) */
	uint32_t health_ttl_ms;         /* mrc_health_cfg.ttl_ns */
	uint32_t health_k_hosts, health_min_paths;  /* mrc_health_cfg */
};

void mrcd_cfg_default(struct mrcd_cfg *c);
/* Sets one key from text; on error fills err with which key, which value
 * and why, and returns -EINVAL (-ENOENT for an unknown key). */
int mrcd_cfg_set(struct mrcd_cfg *c, const char *key, const char *val,
		 char *err, size_t errlen);
/* Parses INI text on top of c; name prefixes error messages ("FILE:LINE"). */
int mrcd_cfg_parse(struct mrcd_cfg *c, const char *text, const char *name,
		   char *err, size_t errlen);
/* Parses a file on top of c.  A missing file is -ENOENT (callers decide
 * whether that is fine); errors name FILE:LINE. */
int mrcd_cfg_load(struct mrcd_cfg *c, const char *path, char *err, size_t errlen);
/* Checks cross-key rules after everything is set. */
int mrcd_cfg_check(const struct mrcd_cfg *c, char *err, size_t errlen);
/* max_clients x client_max_mrs within the engine's region table
 * (MRCD_ENGINE_MAX_MRS, the engine's MRCE_MAX_MRS), uid_max_mrs within that;
 * part of mrcd_cfg_check. */
#define MRCD_ENGINE_MAX_MRS MRCE_MAX_MRS
int mrcd_cfg_check_limits(const struct mrcd_cfg *c, char *err, size_t errlen);
/* The side channel's UDP port (dpep.h): the transport's, unless that is
 * RoCEv2's 4791, which a RoCE NIC takes for itself: then 4792. */
uint16_t mrcd_cfg_side_port(const struct mrcd_cfg *c);
/* 1 when a UDP port mrcd binds is one an unprivileged process may bind in
 * this network namespace (at or above net.ipv4.ip_unprivileged_port_start),
 * with why naming the port, the sysctl and the fix; 0 when both are
 * privileged (or the sysctl cannot be read: a kernel before 4.11, where
 * 1024 holds, is checked against 1024). */
int mrcd_cfg_port_exposed(const struct mrcd_cfg *c, char *why, size_t whylen);
/* One line per key (name, default, help) for --help and the man page. */
void mrcd_cfg_usage(FILE *out);
/* busy_poll_us as configured, or auto's pick for a daemon that may run on
 * ncpus CPUs: MRCD_BUSY_POLL_AUTO_US with MRCD_BUSY_POLL_AUTO_CPUS or
 * more, else 0 (docs/client.md, "Busy polling"). */
#define MRCD_BUSY_POLL_AUTO_US 50u
#define MRCD_BUSY_POLL_AUTO_CPUS 8u
uint32_t mrcd_cfg_busy_poll_us(const struct mrcd_cfg *c, unsigned ncpus);
/* mrce_cfg.spray_slot for host self of topology t (NULL: the loopback
 * fabric): its slot under its leaf (mrc_topo_spray_slot) with spray_slot =
 * topo and a topology, else 0 (the engine's hash). */
struct mrc_topo;
uint32_t mrcd_cfg_spray_slot(const struct mrcd_cfg *c, const struct mrc_topo *t,
			     uint32_t self);
/* Key names, NULL-terminated, for getopt_long tables. */
const char *const *mrcd_cfg_keys(void);

#endif
