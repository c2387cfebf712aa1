/* mrcd configuration: key table, INI file via inih, validation. */
#include <errno.h>
#include <ini.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/core/config.h"
#include "datapath/datapath.h"
#include "daemon/core/sidres.h"
#include "topology/addr.h"
#include "topology/topo.h"

enum kind { K_STR, K_U32, K_U32_AUTO, K_OCT, K_LEVEL };

struct key {
	const char *name;
	enum kind kind;
	size_t off, size;
	uint32_t min, max;
	const char *help;
};

#define S(f, h) { #f, K_STR, offsetof(struct mrcd_cfg, f), sizeof(((struct mrcd_cfg *)0)->f), 0, 0, h }
#define U(f, lo, hi, h) { #f, K_U32, offsetof(struct mrcd_cfg, f), 4, lo, hi, h }
/* A number, or "auto" (MRCD_CFG_AUTO): the daemon picks at start. */
#define UA(f, lo, hi, h) { #f, K_U32_AUTO, offsetof(struct mrcd_cfg, f), 4, lo, hi, h }

static const struct key keys[] = {
	S(topology, "topology file (JSON); empty: single-host loopback fabric"),
	S(host, "this node's host in the topology (name or index)"),
	S(socket, "client/control Unix socket"),
	S(ctl_socket, "operator (mrcctl) socket; empty: mrcctl.sock beside socket"),
	{ "socket_mode", K_OCT, offsetof(struct mrcd_cfg, socket_mode), 4, 0, 0777,
	  "permissions of the socket (octal)" },
	S(socket_group, "group admitted to the socket (read-only verbs); empty: root only"),
	S(admin_group, "group admitted to admin verbs; empty: root only"),
	U(port, 1, 65535, "UDP port of the transport (below net.ipv4.ip_unprivileged_port_start, so no local user can bind it)"),
	S(plane_ifs, "plane NICs, comma-separated, plane 0 first; empty: from the topology"),
	{ "log_level", K_LEVEL, offsetof(struct mrcd_cfg, log_level), 4, 3, 7,
	  "err, warning, notice, info or debug" },
	U(mtu, 256, 8896, "payload bytes per packet"),
	U(local_mtu, 256, 8896, "payload bytes per packet between two clients of this mrcd (no wire: the datagram stays on this host); at least mtu"),
	U(loopback_inproc, 0, 1, "loopback mode with the udp datapath: 1 hands this daemon's datagrams to itself over in-process, 0 sends them through the kernel's lo"),
	U(window, 4, 256, "packets in flight per QP (power of two)"),
	U(ev_floor, 0, 4096, "fewest paths per peer kept in use"),
	U(probe_interval_us, 100, 10000000, "probe interval of a bad path"),
	U(probe_max_interval_us, 100, 60000000, "probe interval of a path whose probes keep failing"),
	U(rto_min_us, 100, 10000000, "smallest retransmission timeout"),
	U(rto_max_us, 1000, 60000000, "largest retransmission timeout"),
	S(cc, "congestion control: nscc or fixed"),
	U(max_clients, 1, 4096, "client connections"),
	U(client_max_qps, 1, 65535, "QPs per client"),
	U(client_max_mem_mb, 1, 1048576, "registered memory per client (MiB)"),
	U(ring_entries, 16, 65536, "descriptors per ring (power of two)"),
	UA(busy_poll_us, 0, 1000000, "keep polling rings and sockets this long after the last work; auto: 50 with 8 or more CPUs to run on, else 0"),
	U(gpu_park_us, 1, 10000000, "a polled (GPU-fed) ring idle this long is parked"),
	U(gpu_poll_min_us, 1, 1000000, "first interval of the parked-ring timer"),
	U(gpu_poll_max_us, 1, 1000000, "longest interval of the parked-ring timer (pickup latency bound)"),
	/* h-floor: the power-floor hint (docs/power.md "Power floor") */
	U(power_floor, 0, 1, "1: raise the power-floor word of a client's notify page while its QPs have sends in flight"),
	U(power_floor_hold_us, 0, 10000000, "the power-floor word is lowered this long after the client's last send completes"),
	S(metrics_listen, "Prometheus HTTP listener, e.g. [::1]:9464; empty: off"),
	S(key_file, "cluster key shared by every host (make one with mrcd --genkey FILE)"),
	U(max_clock_skew_ms, 100, 3600000, "control messages stamped further than this from our clock are refused"),
	U(rnr_retry, 0, 7, "RNR NACKs a packet may get before its QP fails (7: forever)"),
	U(no_path_timeout_ms, 1, 3600000, "a QP with every path denied fails after this long"),
	U(ctl_max_conns, 1, 1024, "mrcctl connections at once"),
	U(metrics_max_conns, 1, 1024, "metrics HTTP connections at once"),
	U(client_max_mrs, 1, 65536, "registered regions per client"),
	U(uid_max_clients, 1, 4096, "client connections per uid"),
	U(uid_max_qps, 1, 1048576, "QPs per uid (all its clients)"),
	U(uid_max_mrs, 1, 1048576, "registered regions per uid (all its clients)"),
	U(uid_max_mem_mb, 1, 16777216, "registered memory per uid (MiB, all its clients)"),
	U(uid_max_pending, 1, 4096, "client connections per uid that have not said HELLO yet"),
	U(client_hello_timeout_ms, 10, 3600000, "a client connection that says no HELLO this long is closed"),
	U(ctl_uid_max_conns, 1, 1024, "mrcctl connections per uid (root, mrcd's user and admin_group excepted)"),
	U(ctl_admin_reserve, 0, 1024, "mrcctl connections beyond ctl_max_conns kept for root, mrcd's user and admin_group"),
	U(ctl_idle_timeout_ms, 10, 86400000, "an mrcctl connection with no request this long is closed (followers and probes excepted)"),
	U(metrics_idle_timeout_ms, 10, 600000, "a metrics HTTP connection is closed this long after it opened"),
	S(service_reserve, "service ids reserved for a user: SID[-SID]:uid|user[,...]; empty: none"),
	S(payload_encryption, "data payloads: off, or aes-gcm (encrypted and authenticated; needs AES-NI)"),
	U(dscp_default, 0, 63, "DSCP in the IPv6 traffic class of the packets of default-class QPs (0: unmarked, as before classes)"),
	U(dscp_urgent, 0, 63, "DSCP of urgent-class QPs' packets (46: EF), for switches to queue them apart"),
	U(dscp_bulk, 0, 63, "DSCP of bulk-class QPs' packets (10: AF11)"),
	U(bulk_min_pct, 0, 50, "share of data packets urgent QPs leave to the others while both wait (0: strict priority)"),
	U(xack, 0, 1, "1: ACKs ride on data of another QP to the same peer (wire XACK; only once every host runs a release that takes it; off with payload_encryption)"),
	/* h-hold: the engine timer (docs/client.md "The engine timer") */
	U(engine_timerfd, 0, 1, "1: the engine's deadlines (held ACKs, TLP, RTO) on a timerfd, to the microsecond; 0: libev's timer, which a sleeping mrcd sees to the millisecond"),
	U(ack_delay_us, 0, 1000, "an ACK is held this long for data to ride on (0: never held; at most rto_min_us / 4)"),
	U(tlp_lone, 0, 1, "1: a packet alone in flight gets a tail-loss probe too (needs engine_timerfd = 1 on every host: with libev's millisecond timer the probe races the peer's held ACK)"),
	U(urgent_turn_us, 0, 1000000, "while urgent-class QPs exist, a loop turn that moves bulk stops this often (us of its work) to serve urgent posts and datagrams first; 0: never"),
	U(sched_slice_us, 0, 100000, "the scheduler slice mrcd asks for (Linux 6.12+ EEVDF: a woken task with a shorter slice than the running one preempts it), so a post or an urgent datagram waking mrcd need not wait out another task's slice (no difference measured on a loaded 2-CPU host, docs/step.md); 0: the kernel's default"),
	U(qp_ev_stats, 0, 4096, "EVs whose packets and losses are counted per QP for mrcctl qps (16 bytes each per QP; 0: off)"),
	S(datapath, "how packets reach the plane NICs: udp (kernel sockets), af_xdp, dpdk or verbs (docs/datapaths.md)"),
	S(datapath_args, "options of the datapath (docs/datapaths.md); empty: its defaults"),
	S(spray_slot, "where each peer's spray starts in every plane: topo (this host's slot under its leaf, so a leaf's hosts take distinct spines; docs/sim.md, Spray slots) or hash (of the QP); without a topology: hash"),
	/* h-hfeed: fabric-link health (docs/health.md "Settings") */
	U(health_suspect, 0, 1, "1: a path retired for a failure takes this host's paths through the same leaf uplink out at once (probed back) and is told to the peers at once; 0 (default): off (on the fabric it can hide the evidence that locates the dead link)"),
	U(health_share, 0, 1, "1: send this host's path outcomes to its peers (HEALTH) and merge theirs; 0: each host judges links on its own paths only"),
	U(health_ttl_ms, 200, 600000, "a path outcome, this host's or a peer's, counts this long (at least 2 sharing rounds of 100 ms)"),
	U(health_k_hosts, 1, 1024, "distinct hosts whose failed paths a located link needs before paths across it are taken out of use"),
	U(health_min_paths, 1, 65535, "failed paths a link must be the one explanation of to be located"),
	S(state_dir, "admin state (plane disable, path deny) kept in DIR/admin.json across restarts; empty: $STATE_DIRECTORY if set, else not kept"),
};
#define NKEYS (sizeof(keys) / sizeof(keys[0]))

void mrcd_cfg_default(struct mrcd_cfg *c)
{
	memset(c, 0, sizeof(*c));
	snprintf(c->socket, sizeof(c->socket), "/run/mrcd/mrcd.sock");
	c->socket_mode = 0660;
	c->port = MRC_UDP_PORT;
	c->log_level = 6;
	c->mtu = 4096;
	c->local_mtu = 8192;
	c->loopback_inproc = 1;
	c->window = 256;
	c->ev_floor = 1;
	c->probe_interval_us = 2000;
	c->probe_max_interval_us = 64000;
	c->max_clock_skew_ms = 30000;   /* MRC_AUTH_CTRL_SKEW_NS */
	c->rto_min_us = 1000;
	c->rto_max_us = 200000;
	snprintf(c->cc, sizeof(c->cc), "nscc");
	c->max_clients = 64;
	c->client_max_qps = 256;
	c->client_max_mem_mb = 4096;
	c->ring_entries = 1024;
	c->busy_poll_us = MRCD_CFG_AUTO;
	/* Polled (GPU-fed) rings, docs/operator.md "Polled rings": a ring
	 * stays busy-polled for gpu_park_us after its last descriptor (a
	 * kernel's posts within one step come microseconds apart; between
	 * steps there is compute), then parks; a timer reads the notify
	 * summaries every gpu_poll_min_us doubling to gpu_poll_max_us while
	 * everything is parked.  200 us bounds the pickup of the first post
	 * after a long idle below a collective step, for 5000 wake-ups/s:
	 * a few us each on bare metal, ~20 us (12 % of a core) in a small VM
	 * (bench_poll; docs/operator.md has the trade-off). */
	c->gpu_park_us = 1000;
	c->gpu_poll_min_us = 10;
	c->gpu_poll_max_us = 200;
	/* Off: the hint is for jobs whose GPU side runs a filler on it.
	 * 1 ms hold: the gaps inside a communication phase (between a
	 * collective's steps) are microseconds, the compute between phases
	 * is milliseconds or more, so the word does not flap within one. */
	c->power_floor = 0;
	c->power_floor_hold_us = 1000;
	snprintf(c->key_file, sizeof(c->key_file), "%s", MRCD_KEY_DEFAULT);
	c->rnr_retry = 7;
	c->no_path_timeout_ms = 1000;
	c->ctl_max_conns = 64;
	c->metrics_max_conns = 16;
	c->client_max_mrs = 1024;
	c->uid_max_clients = 16;
	c->uid_max_qps = 1024;
	c->uid_max_mrs = 4096;
	c->uid_max_mem_mb = 16384;
	c->uid_max_pending = 8;
	c->client_hello_timeout_ms = 5000;
	c->ctl_uid_max_conns = 8;
	c->ctl_admin_reserve = 4;
	c->ctl_idle_timeout_ms = 60000;
	c->metrics_idle_timeout_ms = 5000;
	snprintf(c->payload_encryption, sizeof(c->payload_encryption), "off");
	snprintf(c->datapath, sizeof(c->datapath), "udp");
	snprintf(c->spray_slot, sizeof(c->spray_slot), "topo");
	c->qp_ev_stats = 64;
	/* Off until every host understands it and the hold's timer is
	 * precise (docs/wire.md "Cross-QP ACK"). */
	c->xack = 0;
	/* libev's timer: on a loaded 2-CPU host the timerfd's on-time holds
	 * cost more ACK packets and wake-ups than they save
	 * (bench/results/hold.md); 1 where the daemon has a core. */
	c->engine_timerfd = 0;
	c->ack_delay_us = 32;   /* the engine's default */
	/* The lone-tail probe waits out the peer's ACK hold, which libev's
	 * timer stretches to ~1 ms on a sleeping daemon: off with it. */
	c->tlp_lone = 0;
	c->urgent_turn_us = 50;
	/* The kernel's: 100 us made no difference the loaded 2-CPU VM let
	 * through (docs/step.md "Urgent dispatch", "The scheduler slice";
	 * bench/results/tclass-slice.md). */
	c->sched_slice_us = 0;
	/* Traffic classes (docs/wire.md "Traffic classes"): EF for urgent,
	 * AF11 for bulk, default unmarked as before. */
	c->dscp_default = 0;
	c->dscp_urgent = 46;
	c->dscp_bulk = 10;
	c->bulk_min_pct = 10;
	/* Fabric health: as health/'s defaults (docs/health.md). */
	c->health_share = 1;
	c->health_ttl_ms = 1000;
	c->health_k_hosts = 2;
	c->health_min_paths = 2;
}

static const char *levels[] = { "", "", "", "err", "warning", "notice", "info", "debug" };

int mrcd_cfg_set(struct mrcd_cfg *c, const char *key, const char *val,
		 char *err, size_t errlen)
{
	const struct key *k = NULL;
	for (size_t i = 0; i < NKEYS; i++)
		if (!strcmp(keys[i].name, key))
			k = &keys[i];
	if (!k) {
		snprintf(err, errlen, "unknown key '%s'", key);
		return -ENOENT;
	}
	void *dst = (char *)c + k->off;
	switch (k->kind) {
	case K_STR:
		if (strlen(val) >= k->size) {
			snprintf(err, errlen, "key '%s': value is %zu characters, at most %zu",
				 key, strlen(val), k->size - 1);
			return -EINVAL;
		}
		memcpy(dst, val, strlen(val) + 1);
		return 0;
	case K_LEVEL:
		for (uint32_t l = 3; l <= 7; l++)
			if (!strcmp(val, levels[l])) {
				*(uint32_t *)dst = l;
				return 0;
			}
		snprintf(err, errlen, "key '%s': '%s' is not one of err, warning, notice, info, debug",
			 key, val);
		return -EINVAL;
	case K_U32_AUTO:
		if (!strcmp(val, "auto")) {
			*(uint32_t *)dst = MRCD_CFG_AUTO;
			return 0;
		}
		/* fall through */
	case K_U32:
	case K_OCT: {
		char *end;
		errno = 0;
		unsigned long v = strtoul(val, &end, k->kind == K_OCT ? 8 : 10);
		if (!*val || *end || errno || val[0] == '-') {
			snprintf(err, errlen, "key '%s': '%s' is not a%s number%s", key, val,
				 k->kind == K_OCT ? "n octal" : "",
				 k->kind == K_U32_AUTO ? " or auto" : "");
			return -EINVAL;
		}
		if (v < k->min || v > k->max) {
			snprintf(err, errlen, "key '%s': %lu is out of range %u..%u", key, v,
				 k->min, k->max);
			return -EINVAL;
		}
		*(uint32_t *)dst = (uint32_t)v;
		return 0;
	}
	}
	return -EINVAL;
}

struct load_ctx {
	struct mrcd_cfg *c;
	char *err;
	size_t errlen;
	int rc;
};

static int on_kv(void *user, const char *section, const char *name, const char *value)
{
	struct load_ctx *x = user;
	if (x->rc)
		return 0;
	if (strcmp(section, "mrcd")) {
		snprintf(x->err, x->errlen, "unknown section [%s] (only [mrcd])", section);
		x->rc = -EINVAL;
		return 0;
	}
	int rc = mrcd_cfg_set(x->c, name, value, x->err, x->errlen);
	if (rc) {
		x->rc = rc == -ENOENT ? -EINVAL : rc;
		return 0;
	}
	return 1;
}

int mrcd_cfg_parse(struct mrcd_cfg *c, const char *text, const char *name,
		   char *err, size_t errlen)
{
	/* Parse into a copy: nothing is applied unless the whole text is good. */
	struct mrcd_cfg tmp = *c;
	char why[256] = "";
	struct load_ctx x = { &tmp, why, sizeof(why), 0 };
	int line = ini_parse_string(text, on_kv, &x);
	if (line) {
		if (line < 0)
			snprintf(err, errlen, "%s: cannot parse (out of memory)", name);
		else if (x.rc)
			snprintf(err, errlen, "%s:%d: %s", name, line, why);
		else
			snprintf(err, errlen, "%s:%d: syntax error (expected key = value or [section])",
				 name, line);
		return -EINVAL;
	}
	*c = tmp;
	return 0;
}

int mrcd_cfg_load(struct mrcd_cfg *c, const char *path, char *err, size_t errlen)
{
	FILE *f = fopen(path, "r");
	if (!f) {
		int rc = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(-rc));
		return rc;
	}
	/* A configuration file is small; one read keeps a single parser path
	 * for files and for the fuzz target. */
	char *text = malloc(MRCD_CONF_MAX + 1);
	size_t n = text ? fread(text, 1, MRCD_CONF_MAX + 1, f) : 0;
	int bad = ferror(f);
	fclose(f);
	if (!text || bad) {
		free(text);
		snprintf(err, errlen, "%s: cannot read", path);
		return text ? -EIO : -ENOMEM;
	}
	if (n > MRCD_CONF_MAX) {
		free(text);
		snprintf(err, errlen, "%s: larger than %d bytes", path, MRCD_CONF_MAX);
		return -EFBIG;
	}
	if (memchr(text, 0, n)) {
		free(text);
		snprintf(err, errlen, "%s: contains a NUL byte (not a text file)", path);
		return -EINVAL;
	}
	text[n] = 0;
	int rc = mrcd_cfg_parse(c, text, path, err, errlen);
	free(text);
	return rc;
}

int mrcd_cfg_check(const struct mrcd_cfg *c, char *err, size_t errlen)
{
	if (c->window & (c->window - 1)) {
		snprintf(err, errlen, "key 'window': %u is not a power of two", c->window);
		return -EINVAL;
	}
	if (c->ring_entries & (c->ring_entries - 1)) {
		snprintf(err, errlen, "key 'ring_entries': %u is not a power of two", c->ring_entries);
		return -EINVAL;
	}
	if (c->gpu_poll_min_us > c->gpu_poll_max_us) {
		snprintf(err, errlen, "gpu_poll_min_us (%u) is larger than gpu_poll_max_us (%u)",
			 c->gpu_poll_min_us, c->gpu_poll_max_us);
		return -EINVAL;
	}
	if (c->probe_interval_us > c->probe_max_interval_us) {
		snprintf(err, errlen, "probe_interval_us (%u) is larger than probe_max_interval_us (%u)",
			 c->probe_interval_us, c->probe_max_interval_us);
		return -EINVAL;
	}
	if (c->health_share && c->health_k_hosts < 2) {
		snprintf(err, errlen, "health_k_hosts 1 with health_share 1 lets any one host take "
			 "a link out of use on every host: set health_k_hosts >= 2, or health_share = 0");
		return -EINVAL;
	}
	if (c->rto_min_us > c->rto_max_us) {
		snprintf(err, errlen, "rto_min_us (%u) is larger than rto_max_us (%u)",
			 c->rto_min_us, c->rto_max_us);
		return -EINVAL;
	}
	if (strcmp(c->cc, "nscc") && strcmp(c->cc, "fixed")) {
		snprintf(err, errlen, "key 'cc': '%s' is not nscc or fixed", c->cc);
		return -EINVAL;
	}
	if (strcmp(c->payload_encryption, "off") && strcmp(c->payload_encryption, "aes-gcm")) {
		snprintf(err, errlen, "key 'payload_encryption': '%s' is not off or aes-gcm",
			 c->payload_encryption);
		return -EINVAL;
	}
	if (!mrc_dp_find(c->datapath)) {
		size_t o = (size_t)snprintf(err, errlen, "key 'datapath': '%s' is not one of", c->datapath);
		for (const char *const *n = mrc_dp_names(); *n && o < errlen; n++)
			o += (size_t)snprintf(err + o, errlen - o, " %s", *n);
		return -EINVAL;
	}
	if (strcmp(c->spray_slot, "topo") && strcmp(c->spray_slot, "hash")) {
		snprintf(err, errlen, "key 'spray_slot': '%s' is not topo or hash", c->spray_slot);
		return -EINVAL;
	}
	if (c->topology[0] && !c->host[0]) {
		snprintf(err, errlen, "key 'host' is required with a topology (which host is this node?)");
		return -EINVAL;
	}
	if (c->ctl_socket[0] && c->ctl_socket[0] != '/') {
		snprintf(err, errlen, "key 'ctl_socket': '%s' is not an absolute path", c->ctl_socket);
		return -EINVAL;
	}
	if (!c->key_file[0]) {
		snprintf(err, errlen, "key 'key_file' is required (daemons authenticate each other; make a key with mrcd --genkey FILE)");
		return -EINVAL;
	}
	if (c->socket[0] != '/') {
		snprintf(err, errlen, "key 'socket': '%s' is not an absolute path", c->socket);
		return -EINVAL;
	}
	return mrcd_cfg_check_limits(c, err, errlen);
}

/* The engine holds max_clients x client_max_mrs regions (the daemon sizes
 * it so), which must fit its table: every client can reach its own limit,
 * so the engine never refuses a region the limits allow. */
int mrcd_cfg_check_limits(const struct mrcd_cfg *c, char *err, size_t errlen)
{
	uint64_t need = (uint64_t)c->max_clients * c->client_max_mrs;
	if (need > MRCD_ENGINE_MAX_MRS) {
		snprintf(err, errlen,
			 "max_clients (%u) x client_max_mrs (%u) = %llu regions, more than the engine holds (%u): lower one of them",
			 c->max_clients, c->client_max_mrs, (unsigned long long)need,
			 MRCD_ENGINE_MAX_MRS);
		return -EINVAL;
	}
	if (c->uid_max_mrs > need) {
		snprintf(err, errlen,
			 "uid_max_mrs (%u) is more than the engine holds (max_clients x client_max_mrs = %llu)",
			 c->uid_max_mrs, (unsigned long long)need);
		return -EINVAL;
	}
	struct mrcd_sid_res *r;
	size_t n;
	int rc = mrcd_sid_reserve_parse(c->service_reserve, &r, &n, err, errlen);
	free(r);
	return rc;
}

uint16_t mrcd_cfg_side_port(const struct mrcd_cfg *c)
{
	return c->port == 4791 ? 4792 : (uint16_t)c->port;
}

int mrcd_cfg_port_exposed(const struct mrcd_cfg *c, char *why, size_t whylen)
{
	/* Per network namespace; IPv6 sockets obey the ipv4 knob too. */
	unsigned start = 1024;
	FILE *f = fopen("/proc/sys/net/ipv4/ip_unprivileged_port_start", "re");
	if (f) {
		if (fscanf(f, "%u", &start) != 1)
			start = 1024;
		fclose(f);
	}
	unsigned side = mrcd_cfg_side_port(c), hi = side > c->port ? side : c->port;
	if (hi < start)
		return 0;
	char sidetxt[48] = "";
	if (side != c->port)
		snprintf(sidetxt, sizeof(sidetxt), " (side channel %u)", side);
	snprintf(why, whylen, "UDP port %u%s is not privileged here "
		 "(net.ipv4.ip_unprivileged_port_start = %u): any local user can bind it "
		 "while mrcd is not running and receive what peers send it; use a port "
		 "below %u (default %u) or raise the sysctl above %u (docs/security.md)",
		 c->port, sidetxt, start, start, MRC_UDP_PORT, hi);
	return 1;
}

void mrcd_cfg_usage(FILE *out)
{
	struct mrcd_cfg d;
	mrcd_cfg_default(&d);
	for (size_t i = 0; i < NKEYS; i++) {
		const struct key *k = &keys[i];
		const void *v = (const char *)&d + k->off;
		char def[80];
		if (k->kind == K_STR)
			snprintf(def, sizeof(def), "%s", *(const char *)v ? (const char *)v : "\"\"");
		else if (k->kind == K_OCT)
			snprintf(def, sizeof(def), "%04o", *(const uint32_t *)v);
		else if (k->kind == K_LEVEL)
			snprintf(def, sizeof(def), "%s", levels[*(const uint32_t *)v]);
		else if (k->kind == K_U32_AUTO && *(const uint32_t *)v == MRCD_CFG_AUTO)
			snprintf(def, sizeof(def), "auto");
		else
			snprintf(def, sizeof(def), "%u", *(const uint32_t *)v);
		fprintf(out, "  --%-20s %s (default %s)\n", k->name, k->help, def);
	}
}

uint32_t mrcd_cfg_busy_poll_us(const struct mrcd_cfg *c, unsigned ncpus)
{
	if (c->busy_poll_us != MRCD_CFG_AUTO)
		return c->busy_poll_us;
	/* A spinning daemon helps only where it does not take the core its
	 * clients need: with few CPUs it waits for the scheduler instead
	 * (docs/client.md measured both). */
	return ncpus >= MRCD_BUSY_POLL_AUTO_CPUS ? MRCD_BUSY_POLL_AUTO_US : 0;
}

uint32_t mrcd_cfg_spray_slot(const struct mrcd_cfg *c, const struct mrc_topo *t,
			     uint32_t self)
{
	return t && !strcmp(c->spray_slot, "topo") ? mrc_topo_spray_slot(t, self) : 0;
}

const char *const *mrcd_cfg_keys(void)
{
	static const char *names[NKEYS + 1];
	for (size_t i = 0; i < NKEYS; i++)
		names[i] = keys[i].name;
	return names;
}
