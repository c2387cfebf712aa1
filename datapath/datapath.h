/* The datapath interface: what mrcd moves packets with, one provider per
 * way of reaching the NIC (kernel UDP, AF_XDP, DPDK, verbs), each behind a
 * const ops table as rdma-core's providers are.  A datapath moves bytes and
 * knows no protocol: it is handed a destination address (in SRv6 uSID
 * mode the address is the path), a plane, and up to three pieces (header,
 * payload straight from registered memory, trailer) and a DSCP to mark
 * the IPv6 traffic class with; it delivers whole
 * datagrams with their source and ECN mark.  The UDP checksum is zero (the
 * transport's CRC32C protects the data: the UDP checksum cannot cover an
 * address the fabric rewrites hop by hop).  Not thread-safe: one thread
 * drives one datapath.  docs/datapaths.md says which to use where. */
#ifndef MRC_DATAPATH_DATAPATH_H
#define MRC_DATAPATH_DATAPATH_H

#include <errno.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#define MRC_DP_MAX_PLANES 16
#define MRC_DP_BATCH 64
#define MRC_DP_MAX_DGRAM 9216

struct mrc_dp_plane {
	char ifname[16];          /* "" : not bound to a device (loopback use) */
	struct in6_addr local;    /* source address of this plane */
};

struct mrc_dp_cfg {
	const struct mrc_dp_plane *planes;
	uint32_t nplanes;
	uint16_t port;            /* UDP port, both ends */
	const char *args;         /* provider options (docs/datapaths.md); NULL */
	/* udp: datagrams whose IPv6 traffic class carries this DSCP (1..63)
	 * are queued in a second socket per plane, read before the first,
	 * so an urgent datagram never waits behind a bulk backlog (udp.h).
	 * 0: one socket per plane; other providers ignore it. */
	uint8_t urgent_dscp;
};

struct mrc_dp_out {
	uint32_t plane;
	uint16_t dport;           /* 0: the datapath's own port */
	struct in6_addr dst;
	struct iovec iov[3];
	uint32_t iovcnt;
	uint8_t dscp;             /* DSCP of the IPv6 traffic class (0..63;
	                             higher bits ignored), so switches can
	                             queue classes apart; the ECN bits stay
	                             the datapath's ECT(0).  0: as before.
	                             udp, af_xdp, dpdk mark it; verbs does
	                             not yet (its address handles are cached
	                             per destination, traffic class 0x02) */
};

struct mrc_dp_in {
	uint8_t *buf;             /* points into the datapath's receive pool */
	size_t len;
	struct in6_addr src;
	uint16_t sport;           /* UDP source port, host order */
	uint32_t plane;
	uint8_t ecn_ce;           /* IP ECN field was CE (11) */
	uint8_t urgent;           /* read from the plane's urgent receive queue
	                             (recv_urgent; recv hands these first) */
};

struct mrc_dp_stats {
	uint64_t tx_pkts, tx_bytes, tx_errs, tx_eagain;
	uint64_t rx_pkts, rx_bytes, rx_truncated;
	/* Datagrams dropped on the way in before the provider could take
	 * them (AF_XDP: rx ring full or no free fill frame; DPDK: the
	 * port's imissed and rx_nombuf, and on af_packet vdevs the kernel's
	 * rx ring drops); 0 where the provider cannot tell. */
	uint64_t rx_dropped;
	/* udp with gso=on: datagrams sent inside UDP_SEGMENT messages, and
	 * the times the kernel refused those (GSO then off on that plane). */
	uint64_t tx_gso_segs, tx_gso_fallbacks;
	/* udp with gro=on: datagrams that arrived inside coalesced buffers,
	 * and the planes whose kernel refused UDP_GRO (received one datagram
	 * per buffer instead). */
	uint64_t rx_gro_segs, rx_gro_fallbacks;
	/* udp with urgent_dscp: datagrams read from the urgent sockets (ahead
	 * of the plane's backlog), and planes whose kernel refused the
	 * steering (SO_REUSEPORT or its BPF: one socket, one FIFO there). */
	uint64_t rx_urgent, rx_urgent_fallbacks;
};

struct mrc_dp;

/* A provider.  Every entry is required unless marked optional. */
struct mrc_dp_ops {
	const char *name;         /* "udp", "af_xdp", "dpdk", "verbs" */
	/* Opens every plane.  On failure fills why (which plane or device,
	 * what failed and why) and returns a negative errno; -EOPNOTSUPP
	 * when the provider was not built in or the host lacks what it needs
	 * (no RDMA device, no libxdp), -ENODEV for a missing interface. */
	int (*open)(struct mrc_dp **out, const struct mrc_dp_cfg *cfg,
		    char *why, size_t whylen);
	void (*close)(struct mrc_dp *dp);
	/* A descriptor readable when a plane has packets waiting, for the
	 * event loop; -EOPNOTSUPP for poll-mode providers (the loop then
	 * calls recv every turn). */
	int (*fd)(const struct mrc_dp *dp, uint32_t plane);
	/* Sends pkts[0..n) (any planes), batched per plane.  Returns how many
	 * were handed to the NIC or kernel; the rest are lost (a link down:
	 * the transport recovers them like any loss) and counted. */
	int (*send)(struct mrc_dp *dp, const struct mrc_dp_out *pkts, uint32_t n);
	/* Up to max datagrams from one plane (0 when none is waiting).  The
	 * buffers stay valid until the next recv on that plane.  A provider
	 * may hold datagrams its descriptor no longer shows (udp with GRO: a
	 * coalesced buffer split over calls), so a return of max means "call
	 * again", now or at a later loop turn, before sleeping on the fd. */
	int (*recv)(struct mrc_dp *dp, uint32_t plane, struct mrc_dp_in *in, uint32_t max);
	/* Optional (udp with urgent_dscp): what recv would hand first, the
	 * plane's urgent receive queue alone, 0 when empty or absent.  It
	 * reuses the buffers of the urgent datagrams the last recv handed up
	 * (those with .urgent), not the others, which stay valid. */
	int (*recv_urgent)(struct mrc_dp *dp, uint32_t plane, struct mrc_dp_in *in, uint32_t max);
	void (*get_stats)(const struct mrc_dp *dp, struct mrc_dp_stats *st);
	/* Optional: 1 when the plane's link is up, 0 when down, negative
	 * errno when the provider cannot tell (mrcd's netlink monitor then
	 * decides). */
	int (*link_up)(const struct mrc_dp *dp, uint32_t plane);
	/* Optional (NULL where the address alone reaches the peer, as for
	 * udp, af_xdp, dpdk): endpoints.  A verbs UD datagram names the
	 * remote queue pair too, whose number (1..2^24-1) the NIC assigns at
	 * open, so peers swap theirs (mrcd: in its control messages,
	 * docs/datapaths.md "First contact").  ep_local gives plane's own;
	 * ep_set says that sends on plane to dst go to endpoint ep (kept
	 * until set again or close; 0 forgets it), 0 or a negative errno. */
	int (*ep_local)(const struct mrc_dp *dp, uint32_t plane, uint32_t *ep);
	int (*ep_set)(struct mrc_dp *dp, uint32_t plane, const struct in6_addr *dst, uint32_t ep);
	/* Optional: memory the NIC may send payloads from in place (verbs:
	 * ibv_reg_mr, or with dmabuf_fd >= 0 GPU memory by ibv_reg_dmabuf_mr,
	 * addr then being the device address and off its offset in the
	 * dmabuf).  Returns a region id >= 0 or a negative errno; without it
	 * payloads are copied as before, so callers may ignore a failure.
	 * mem_unreg waits for the sends still reading the region. */
	int (*mem_reg)(struct mrc_dp *dp, void *addr, size_t len, int dmabuf_fd, uint64_t off);
	void (*mem_unreg)(struct mrc_dp *dp, int id);
};

/* Every provider's handle begins with this. */
struct mrc_dp {
	const struct mrc_dp_ops *ops;
};

/* The provider named name, NULL when there is none by that name.  Every
 * provider is listed whether or not it was built in (one that was not
 * fails open with -EOPNOTSUPP and says how to build it). */
const struct mrc_dp_ops *mrc_dp_find(const char *name);
/* Provider names, NULL-terminated, in the order docs and --help list them. */
const char *const *mrc_dp_names(void);

/* Opens the datapath named kind (NULL or "": udp). */
int mrc_dp_open(struct mrc_dp **out, const char *kind, const struct mrc_dp_cfg *cfg,
		char *why, size_t whylen);
static inline void mrc_dp_close(struct mrc_dp *dp)
{
	if (dp)
		dp->ops->close(dp);
}
static inline const char *mrc_dp_name(const struct mrc_dp *dp)
{
	return dp->ops->name;
}
static inline int mrc_dp_fd(const struct mrc_dp *dp, uint32_t plane)
{
	return dp->ops->fd(dp, plane);
}
static inline int mrc_dp_send(struct mrc_dp *dp, const struct mrc_dp_out *pkts, uint32_t n)
{
	return dp->ops->send(dp, pkts, n);
}
static inline int mrc_dp_recv(struct mrc_dp *dp, uint32_t plane, struct mrc_dp_in *in,
			      uint32_t max)
{
	return dp->ops->recv(dp, plane, in, max);
}
static inline int mrc_dp_recv_urgent(struct mrc_dp *dp, uint32_t plane, struct mrc_dp_in *in,
				     uint32_t max)
{
	return dp->ops->recv_urgent ? dp->ops->recv_urgent(dp, plane, in, max) : 0;
}
static inline void mrc_dp_get_stats(const struct mrc_dp *dp, struct mrc_dp_stats *st)
{
	dp->ops->get_stats(dp, st);
}
static inline int mrc_dp_link_up(const struct mrc_dp *dp, uint32_t plane)
{
	return dp->ops->link_up ? dp->ops->link_up(dp, plane) : -EOPNOTSUPP;
}

/* Whether the provider has endpoints (ep_local/ep_set above). */
static inline int mrc_dp_has_eps(const struct mrc_dp *dp)
{
	return dp->ops->ep_local && dp->ops->ep_set;
}
static inline int mrc_dp_ep_local(const struct mrc_dp *dp, uint32_t plane, uint32_t *ep)
{
	return dp->ops->ep_local ? dp->ops->ep_local(dp, plane, ep) : -EOPNOTSUPP;
}
static inline int mrc_dp_ep_set(struct mrc_dp *dp, uint32_t plane, const struct in6_addr *dst,
				uint32_t ep)
{
	return dp->ops->ep_set ? dp->ops->ep_set(dp, plane, dst, ep) : -EOPNOTSUPP;
}
static inline int mrc_dp_mem_reg(struct mrc_dp *dp, void *addr, size_t len, int dmabuf_fd,
				 uint64_t off)
{
	return dp->ops->mem_reg ? dp->ops->mem_reg(dp, addr, len, dmabuf_fd, off) : -EOPNOTSUPP;
}
static inline void mrc_dp_mem_unreg(struct mrc_dp *dp, int id)
{
	if (dp->ops->mem_unreg && id >= 0)
		dp->ops->mem_unreg(dp, id);
}

/* Checks a plane count against MRC_DP_MAX_PLANES: mrc_dp_open does for
 * every provider, so an open reached through it need not again. */
int mrc__dp_check_cfg(const struct mrc_dp_cfg *cfg, char *why, size_t whylen);

/* open of a provider that was not built in: says why and how to get it. */
int mrc__dp_unbuilt(const char *name, const char *how, char *why, size_t whylen);
/* The ops table of a provider that was not built in (its file's #else). */
#define MRC__DP_UNBUILT(sym, nm, how)                                           \
	static int sym##_open(struct mrc_dp **out, const struct mrc_dp_cfg *cfg,   \
			      char *why, size_t whylen)                         \
	{                                                                      \
		(void)out;                                                     \
		(void)cfg;                                                     \
		return mrc__dp_unbuilt(nm, how, why, whylen);                  \
	}                                                                      \
	const struct mrc_dp_ops sym = { .name = nm, .open = sym##_open }

/* The providers (datapath/<name>.c). */
extern const struct mrc_dp_ops mrc__dp_udp_ops, mrc__dp_af_xdp_ops, mrc__dp_dpdk_ops,
	mrc__dp_verbs_ops;

#endif
