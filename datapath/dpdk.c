/* The dpdk datapath: one DPDK ethdev port per plane (on veth and kernel
 * NICs an af_packet or af_xdp vdev; on real NICs whatever the EAL probes,
 * e.g. vfio-pci), one rx and one tx queue each, Ethernet/IPv6/UDP frames
 * built and parsed in datapath/frame.c.  On af_packet vdevs fd() is the
 * driver's socket and mrcd's event loop waits on it (wait=auto); other
 * ports are polled: fd() is -EOPNOTSUPP and mrcd polls recv every loop
 * turn (daemon/core/node.c), spinning a core as DPDK always does, with
 * idle rounds sleeping idle_us.  docs/datapaths.md says how to run it. */
#include "common/clock.h"
#include "datapath/datapath.h"

#ifdef MRC_HAVE_DPDK
#include <dirent.h>
#include <errno.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <rte_dev.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include "datapath/dpdk_args.h"
#include "datapath/frame.h"
#include "datapath/nexthop.h"

#define RX_DESC 1024
#define TX_DESC 1024
#define POOL_PER_PLANE 2048
#define TX_SPINS 16               /* tx_burst retries while the queue drains */
#define NEIGH_TIMEOUT_MS 3000
/* Busy-poll this long after the last packet in or out before idle rounds
 * start sleeping (idle_us): a burst, and a reply within a round trip of
 * the emulated fabric, still find the loop spinning. */
#define IDLE_AFTER_NS 200000ull
/* Every datagram in one segment (the copy into it is what lets the caller
 * reuse its header and trailer slots as soon as send returns), and room
 * for a whole af_packet frame slot, which its driver requires. */
#define DATA_ROOM (RTE_PKTMBUF_HEADROOM + MRC__DPDK_FRAMESZ)
_Static_assert(MRC__DPDK_FRAMESZ >= MRC__FRAME_HDR_LEN + MRC_DP_MAX_DGRAM, "a datagram per mbuf");

struct plane {
	uint16_t port;
	int vdev;                 /* 1: we created it (a vdev), 0: the EAL's */
	char name[64];            /* the vdev's name */
	struct mrc__dp_frame_hdr fh;
	struct in6_addr local;
	struct rte_mbuf *held[MRC_DP_BATCH];   /* what the last recv handed out */
	uint32_t nheld;
	int sock;                 /* the af_packet driver's socket; -1 */
	uint64_t ring_drops;      /* its rx ring's drops read so far */
};

struct dpdk_dp {
	struct mrc_dp base;
	uint32_t n;
	uint16_t port;
	struct rte_mempool *pool;
	struct mrc_dp_stats st;
	uint32_t idle_us;
	int wait_socket;          /* mrcd waits on the planes' sockets (fd) */
	uint64_t busy_ns;         /* when a packet last moved */
	struct plane pl[MRC_DP_MAX_PLANES];
};

/* The EAL starts once per process and is never torn down (it cannot be
 * started again): a second open reuses it, adding its own vdevs. */
static int eal_up;
static unsigned next_id;

static int eal_init(const struct mrc__dp_dpdk_args *a, char *why, size_t whylen)
{
	if (eal_up)
		return 0;
	char *argv[MRC__DPDK_MAX_ARGS + 1];
	memcpy(argv, a->argv, sizeof(argv));   /* the EAL may permute it */
	if (rte_eal_init(a->argc, argv) < 0) {
		int e = rte_errno;
		size_t o = (size_t)snprintf(why, whylen, "rte_eal_init failed: %s; EAL arguments:",
					    rte_strerror(e));
		for (int i = 1; i < a->argc && o < whylen; i++)
			o += (size_t)snprintf(why + o, whylen - o, " %s", a->argv[i]);
		return e > 0 ? -e : -EIO;
	}
	eal_up = 1;
	return 0;
}

/* The AF_PACKET sockets of this process bound to NIC ifindex, into
 * fds[0..max); how many there are. */
static int packet_socks(int ifindex, int *fds, int max)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;
	if (!d)
		return 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		char *end;
		long fd = strtol(e->d_name, &end, 10);
		struct stat st;
		int dom = 0;
		struct sockaddr_ll sa;
		socklen_t dl = sizeof(dom), sl = sizeof(sa);
		if (*end || end == e->d_name || fd == dirfd(d) || fstat((int)fd, &st) ||
		    !S_ISSOCK(st.st_mode) ||
		    getsockopt((int)fd, SOL_SOCKET, SO_DOMAIN, &dom, &dl) || dom != AF_PACKET ||
		    getsockname((int)fd, (struct sockaddr *)&sa, &sl) || sa.sll_ifindex != ifindex)
			continue;
		if (n < max)
			fds[n] = (int)fd;
		n++;
	}
	closedir(d);
	return n;
}

/* The socket the af_packet driver opened for a vdev on ifindex: the one
 * bound there that was not before the probe (before[0..nb)); -1 when
 * there is not exactly one.  DPDK does not hand it out: it is found as
 * the kernel sees it. */
static int new_packet_sock(int ifindex, const int *before, int nb)
{
	int now[16], found = -1;
	int n = packet_socks(ifindex, now, 16);
	if (n > 16)
		return -1;
	for (int i = 0; i < n; i++) {
		int old = 0;
		for (int k = 0; k < nb; k++)
			old |= now[i] == before[k];
		if (!old) {
			if (found >= 0)
				return -1;
			found = now[i];
		}
	}
	return found;
}

static int start_port(struct dpdk_dp *dp, struct plane *p, char *why, size_t whylen)
{
	struct rte_eth_conf conf;
	memset(&conf, 0, sizeof(conf));
	int sock = rte_eth_dev_socket_id(p->port);
	int rc = rte_eth_dev_configure(p->port, 1, 1, &conf);
	const char *what = "configure";
	if (!rc && (what = "rx queue",
		    rc = rte_eth_rx_queue_setup(p->port, 0, RX_DESC, (unsigned)(sock < 0 ? 0 : sock),
						NULL, dp->pool)) == 0)
		what = "tx queue", rc = rte_eth_tx_queue_setup(p->port, 0, TX_DESC,
							      (unsigned)(sock < 0 ? 0 : sock), NULL);
	if (!rc)
		what = "start", rc = rte_eth_dev_start(p->port);
	if (!rc) {
		struct rte_ether_addr m;
		what = "MAC address";
		rc = rte_eth_macaddr_get(p->port, &m);
		memcpy(p->fh.smac, m.addr_bytes, 6);
	}
	if (rc)
		snprintf(why, whylen, "port %s: %s: %s", p->name, what, rte_strerror(-rc));
	return rc;
}

static void dpdk_close(struct mrc_dp *base);

static int open_plane(struct dpdk_dp *dp, uint32_t i, const struct mrc_dp_plane *cp,
		      const struct mrc__dp_dpdk_args *a, char *why, size_t whylen)
{
	struct plane *p = &dp->pl[i];
	p->local = cp->local;
	p->fh.src = cp->local;
	p->fh.sport = dp->port;
	/* The next hop first: once a poll-mode driver owns the NIC the kernel
	 * may no longer resolve it. */
	int rc = 0;
	if (a->dmac_set & 1u << i)
		memcpy(p->fh.dmac, a->dmac[i], 6);
	else if (cp->ifname[0] && (rc = mrc__dp_nexthop_mac(cp->ifname, NEIGH_TIMEOUT_MS,
							  p->fh.dmac, why, whylen)))
		return rc;
	char dev[256];
	int ifindex = cp->ifname[0] ? (int)if_nametoindex(cp->ifname) : 0;
	int before[16], nb = 0;
	if (ifindex && !strcmp(a->pmd, "af_packet") &&
	    (nb = packet_socks(ifindex, before, 16)) > 16)
		nb = 16;
	rc = mrc__dp_dpdk_vdev(dev, sizeof(dev), a, next_id++, cp->ifname);
	if (rc == -ENOTSUP) {
		/* pmd=none: the EAL's devices, plane i on port i. */
		if (i >= rte_eth_dev_count_avail()) {
			snprintf(why, whylen, "plane %u: the EAL found %u ports (-a PCI addresses "
				 "in datapath_args)", i, rte_eth_dev_count_avail());
			return -ENODEV;
		}
		p->port = (uint16_t)i;
		rte_eth_dev_get_name_by_port(p->port, p->name);
	} else if (rc) {
		snprintf(why, whylen, "plane %u: device arguments too long", i);
		return rc;
	} else {
		size_t nl = strcspn(dev, ",");
		snprintf(p->name, sizeof(p->name), "%.*s", (int)nl, dev);
		if ((rc = rte_dev_probe(dev)) < 0) {
			snprintf(why, whylen, "plane %u: %s: %s", i, dev, rte_strerror(-rc));
			return rc;
		}
		p->vdev = 1;
		if ((rc = rte_eth_dev_get_port_by_name(p->name, &p->port))) {
			snprintf(why, whylen, "plane %u: %s made no ethdev port", i, p->name);
			return -ENODEV;
		}
		if (ifindex && !strcmp(a->pmd, "af_packet"))
			p->sock = new_packet_sock(ifindex, before, nb);
	}
	if (a->wait == MRC__DPDK_WAIT_SOCKET && p->sock < 0) {
		snprintf(why, whylen, "plane %u: wait=socket: no af_packet socket to wait on "
			 "(pmd=af_packet on a NIC)", i);
		return -EOPNOTSUPP;
	}
	if ((rc = start_port(dp, p, why, whylen)))
		return rc;
	if (!cp->ifname[0] && !(a->dmac_set & 1u << i))
		memcpy(p->fh.dmac, p->fh.smac, 6);   /* no NIC: a loopback port */
	return 0;
}

static int dpdk_open(struct mrc_dp **out, const struct mrc_dp_cfg *cfg, char *why, size_t whylen)
{
	int rc;
	char cpus[256];
	struct mrc__dp_dpdk_args *a = malloc(sizeof(*a));
	struct dpdk_dp *dp = calloc(1, sizeof(*dp));
	if (!a || !dp) {
		free(a);
		free(dp);
		return -ENOMEM;
	}
	dp->base.ops = &mrc__dp_dpdk_ops;
	dp->port = cfg->port;
	if (mrc__dp_dpdk_cpus(cpus, sizeof(cpus)))
		cpus[0] = 0;
	if (!(rc = mrc__dp_dpdk_args_parse(a, cfg->args, cpus, why, whylen)))
		rc = eal_init(a, why, whylen);
	if (!rc) {
		char pn[RTE_MEMPOOL_NAMESIZE];
		snprintf(pn, sizeof(pn), "mrc%u", next_id);
		dp->pool = rte_pktmbuf_pool_create(pn, POOL_PER_PLANE * cfg->nplanes, 256, 0,
						   DATA_ROOM, (int)rte_socket_id());
		if (!dp->pool) {
			rc = rte_errno > 0 ? -rte_errno : -ENOMEM;
			snprintf(why, whylen, "mbuf pool of %u x %u bytes: %s (raise -m in "
				 "datapath_args)", POOL_PER_PLANE * cfg->nplanes, DATA_ROOM,
				 rte_strerror(-rc));
		}
	}
	dp->idle_us = a->idle_us;
	for (uint32_t i = 0; i < MRC_DP_MAX_PLANES; i++)
		dp->pl[i].sock = -1;
	dp->wait_socket = a->wait != MRC__DPDK_WAIT_POLL;
	for (uint32_t i = 0; !rc && i < cfg->nplanes; i++) {
		dp->n = i + 1;
		rc = open_plane(dp, i, &cfg->planes[i], a, why, whylen);
		dp->wait_socket &= dp->pl[i].sock >= 0;
	}
	free(a);
	if (rc) {
		dpdk_close(&dp->base);
		return rc;
	}
	*out = &dp->base;
	return 0;
}

static void release(struct plane *p)
{
	rte_pktmbuf_free_bulk(p->held, p->nheld);
	p->nheld = 0;
}

static void dpdk_close(struct mrc_dp *base)
{
	struct dpdk_dp *dp = (struct dpdk_dp *)base;
	for (uint32_t i = 0; i < dp->n; i++) {
		struct plane *p = &dp->pl[i];
		release(p);
		if (!p->name[0])
			continue;
		rte_eth_dev_stop(p->port);
		/* Our vdevs go, so the NIC is the kernel's again; the EAL's own
		 * ports stay, stopped, for a later open. */
		struct rte_eth_dev_info di;
		if (p->vdev && !rte_eth_dev_info_get(p->port, &di)) {
			rte_eth_dev_close(p->port);
			rte_dev_remove(di.device);
		}
	}
	rte_mempool_free(dp->pool);
	free(dp);
}

/* With af_packet vdevs, the driver's socket: readable while its rx ring
 * holds a frame (the kernel's packet_poll), so mrcd's event loop sleeps
 * until one arrives, as with the udp provider.  Polling instead (a core
 * spinning, idle_us) is what other drivers need. */
static int dpdk_fd(const struct mrc_dp *base, uint32_t plane)
{
	const struct dpdk_dp *dp = (const struct dpdk_dp *)base;
	if (!dp->wait_socket || plane >= dp->n)
		return -EOPNOTSUPP;
	return dp->pl[plane].sock;
}

/* Hands pkts to the plane's tx queue, retrying briefly while it drains;
 * what it does not take is freed and counted. */
static uint32_t tx_plane(struct dpdk_dp *dp, struct plane *p, struct rte_mbuf **m, uint32_t cnt)
{
	uint32_t sent = 0;
	for (int spin = 0; sent < cnt && spin < TX_SPINS; spin++) {
		uint16_t k = rte_eth_tx_burst(p->port, 0, m + sent, (uint16_t)(cnt - sent));
		sent += k;
		if (!k && spin)
			break;
	}
	if (sent < cnt) {
		dp->st.tx_eagain += cnt - sent;
		rte_pktmbuf_free_bulk(m + sent, cnt - sent);
	}
	return sent;
}

static int dpdk_send(struct mrc_dp *base, const struct mrc_dp_out *pkts, uint32_t n)
{
	struct dpdk_dp *dp = (struct dpdk_dp *)base;
	struct rte_mbuf *m[MRC_DP_BATCH], *q[MRC_DP_MAX_PLANES][MRC_DP_BATCH];
	uint32_t cnt[MRC_DP_MAX_PLANES];
	uint16_t qlen[MRC_DP_MAX_PLANES][MRC_DP_BATCH];
	int total = 0;
	for (uint32_t off = 0; off < n; off += MRC_DP_BATCH) {
		uint32_t b = n - off < MRC_DP_BATCH ? n - off : MRC_DP_BATCH;
		memset(cnt, 0, sizeof(cnt));
		if (rte_pktmbuf_alloc_bulk(dp->pool, m, b)) {
			dp->st.tx_eagain += b;
			continue;
		}
		for (uint32_t k = 0; k < b; k++) {
			const struct mrc_dp_out *o = &pkts[off + k];
			int len = o->plane < dp->n ?
				mrc__dp_frame_build(rte_pktmbuf_mtod(m[k], uint8_t *),
						 rte_pktmbuf_tailroom(m[k]), &dp->pl[o->plane].fh, o) :
				-EINVAL;
			if (len < 0) {
				dp->st.tx_errs++;
				rte_pktmbuf_free(m[k]);
				continue;
			}
			m[k]->data_len = (uint16_t)len;
			m[k]->pkt_len = (uint32_t)len;
			qlen[o->plane][cnt[o->plane]] = (uint16_t)(len - MRC__FRAME_HDR_LEN);
			q[o->plane][cnt[o->plane]++] = m[k];
		}
		for (uint32_t pl = 0; pl < dp->n; pl++) {
			if (!cnt[pl])
				continue;
			uint32_t s = tx_plane(dp, &dp->pl[pl], q[pl], cnt[pl]);
			total += (int)s;
			for (uint32_t k = 0; k < s; k++)
				dp->st.tx_bytes += qlen[pl][k];
		}
	}
	dp->st.tx_pkts += (uint64_t)total;
	if (total)
		dp->busy_ns = mrc__mono_ns();
	return total ? total : (n ? -EAGAIN : 0);
}

static int dpdk_recv(struct mrc_dp *base, uint32_t plane, struct mrc_dp_in *in, uint32_t max)
{
	struct dpdk_dp *dp = (struct dpdk_dp *)base;
	if (plane >= dp->n)
		return -EINVAL;
	struct plane *p = &dp->pl[plane];
	release(p);
	struct rte_mbuf *m[MRC_DP_BATCH];
	uint16_t got = rte_eth_rx_burst(p->port, 0, m, (uint16_t)(max < MRC_DP_BATCH ? max : MRC_DP_BATCH));
	int out = 0;
	if (got)
		dp->busy_ns = mrc__mono_ns();
	else if (!dp->wait_socket && plane + 1 == dp->n && dp->idle_us &&
		 mrc__mono_ns() - dp->busy_ns > IDLE_AFTER_NS) {
		/* An idle round (the last plane polled, nothing moved for a
		 * while): sleep instead of spinning, leaving the core to the
		 * application and, on veth/af_packet, to the kernel's softirq
		 * work that carries our frames.  Costs up to idle_us (plus
		 * timer slack) of latency on the first packet after a pause;
		 * idle_us=0 spins as DPDK applications do. */
		struct timespec ts = { 0, (long)dp->idle_us * 1000 };
		nanosleep(&ts, NULL);
	}
	for (uint16_t k = 0; k < got; k++) {
		struct mrc__dp_frame_rx fr;
		/* A frame the driver chained is made one segment (there is room:
		 * DATA_ROOM holds the largest datagram), else dropped. */
		if (m[k]->nb_segs > 1 && rte_pktmbuf_linearize(m[k])) {
			dp->st.rx_truncated++;
			rte_pktmbuf_free(m[k]);
			continue;
		}
		if (mrc__dp_frame_parse(rte_pktmbuf_mtod(m[k], const uint8_t *), m[k]->data_len, &fr) ||
		    fr.dport != dp->port || memcmp(&fr.dst, &p->local, sizeof(fr.dst))) {
			rte_pktmbuf_free(m[k]);   /* not ours: ND, other traffic */
			continue;
		}
		in[out] = (struct mrc_dp_in){ .buf = (uint8_t *)fr.payload, .len = fr.len,
			.src = fr.src, .sport = fr.sport, .plane = plane, .ecn_ce = fr.ecn == 3 };
		dp->st.rx_bytes += fr.len;
		p->held[p->nheld++] = m[k];
		out++;
	}
	if (!out && dp->wait_socket) {
		/* Woken with nothing for us: a pending socket error (ENETDOWN
		 * when the NIC went down) keeps the socket ready until it is
		 * read, and mrcd's event loop would spin on it. */
		int err;
		socklen_t el = sizeof(err);
		getsockopt(p->sock, SOL_SOCKET, SO_ERROR, &err, &el);
	}
	dp->st.rx_pkts += (uint64_t)out;
	return out;
}

static void dpdk_get_stats(const struct mrc_dp *base, struct mrc_dp_stats *st)
{
	/* Reading the ring's drops resets the kernel's count: they are
	 * summed here (the handle is not really const). */
	struct dpdk_dp *dp = (struct dpdk_dp *)(uintptr_t)base;
	*st = dp->st;
	for (uint32_t i = 0; i < dp->n; i++) {
		struct plane *p = &dp->pl[i];
		struct rte_eth_stats es;
		if (!rte_eth_stats_get(p->port, &es))
			st->rx_dropped += es.imissed + es.rx_nombuf;
		/* DPDK 22.11's af_packet driver does not report the frames the
		 * kernel dropped for a full rx ring (imissed stays 0): ask the
		 * kernel. */
		struct tpacket_stats ts;
		socklen_t tl = sizeof(ts);
		if (p->sock >= 0 && !getsockopt(p->sock, SOL_PACKET, PACKET_STATISTICS, &ts, &tl))
			p->ring_drops += ts.tp_drops;
		st->rx_dropped += p->ring_drops;
	}
}

const struct mrc_dp_ops mrc__dp_dpdk_ops = {
	.name = "dpdk",
	.open = dpdk_open,
	.close = dpdk_close,
	.fd = dpdk_fd,
	.send = dpdk_send,
	.recv = dpdk_recv,
	.get_stats = dpdk_get_stats,
};

#else
MRC__DP_UNBUILT(mrc__dp_dpdk_ops, "dpdk",
		"install DPDK 22.11 (Debian: libdpdk-dev, pkg-config libdpdk) and rebuild");
#endif
