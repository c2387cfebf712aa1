/* The af_xdp datapath's internals (datapath.h is the interface): the
 * Ethernet/IPv6/UDP frame it builds and parses in UMEM frames
 * (af_xdp_frame.c), the plane NIC's addresses and next hop
 * (af_xdp_nd.c), and the XDP program that steers mrc's port to the
 * socket (af_xdp_prog.c, af_xdp.bpf.c). */
#ifndef MRC_DATAPATH_AF_XDP_H
#define MRC_DATAPATH_AF_XDP_H

#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>

#define MRC__XDP_ETH_HLEN 14
#define MRC__XDP_HDR_LEN (14 + 40 + 8)   /* Ethernet + IPv6 + UDP */

struct mrc__xdp_addrs {
	uint8_t src_mac[6], dst_mac[6];
	struct in6_addr src;
	uint16_t sport;
};

/* Writes the 62-byte Ethernet/IPv6/UDP header of a datagram of plen
 * payload bytes to dst:dport into f: ECT(0), hop limit 64, UDP checksum
 * zero (datapath.h says why).  -EMSGSIZE when plen does not fit a UDP
 * datagram. */
int mrc__xdp_hdr_build(uint8_t *f, const struct mrc__xdp_addrs *a,
		       const struct in6_addr *dst, uint16_t dport, size_t plen);

struct mrc__xdp_pkt {
	size_t off, len;          /* the UDP payload within the frame */
	struct in6_addr src;
	uint16_t sport;           /* host order */
	uint8_t ecn_ce;
};

/* Parses a received frame (hostile input: every length is checked).
 * 0 and *p when it is IPv6/UDP to port (host order) with consistent
 * lengths; -EPROTO for another protocol or port, -EBADMSG for a
 * malformed or truncated one. */
int mrc__xdp_parse(const uint8_t *f, size_t len, uint16_t port, struct mrc__xdp_pkt *p);

/* The NIC's MAC address.  0 or a negative errno. */
int mrc__xdp_nic_mac(const char *ifname, uint8_t mac[6]);
/* The MAC of the plane NIC's next hop: the gateway of the routes through
 * ifindex (the NIC has one neighbour, its leaf), else a router in its
 * neighbour table.  wait_ms > 0: when the kernel has no valid entry yet,
 * prompts neighbour discovery and polls for the answer up to wait_ms.
 * 0, -EHOSTUNREACH (nothing resolved) or a negative errno. */
int mrc__xdp_nexthop_mac(int ifindex, uint8_t mac[6], int wait_ms);

struct mrc__xdp_prog;
/* Loads the embedded XDP program for port, puts xsk_fd in its XSKMAP at
 * queue and attaches it to ifindex: native (driver) mode, else generic
 * (skb) mode unless mode forces one ("native", "skb"; NULL or "" auto).
 * *native says which.  Fills why on failure. */
int mrc__xdp_prog_attach(struct mrc__xdp_prog **out, int ifindex, uint16_t port,
			 uint32_t queue, int xsk_fd, const char *mode, int *native,
			 char *why, size_t whylen);
void mrc__xdp_prog_detach(struct mrc__xdp_prog *p);

#endif
