/* Ethernet + IPv6 + UDP frames for the datapaths that move whole frames
 * (dpdk, af_xdp): build one from a struct mrc_dp_out, parse a received
 * one.  Provider-neutral: no DPDK or XDP type appears here.  What a frame
 * carries is what the udp provider's kernel socket would put on the wire:
 * traffic class the packet's DSCP with ECT(0), hop limit 64, UDP checksum 0 (datapath.h says
 * why; the kernel-UDP receivers accept it with UDP_NO_CHECK6_RX), so a
 * frame datapath interoperates with kernel UDP on the other end. */
#ifndef MRC_DATAPATH_FRAME_H
#define MRC_DATAPATH_FRAME_H

#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>

#include "datapath/datapath.h"

#define MRC__FRAME_HDR_LEN (14 + 40 + 8)   /* Ethernet, IPv6, UDP */

/* What every frame of one plane shares. */
struct mrc__dp_frame_hdr {
	uint8_t dmac[6];          /* the plane's next hop (its leaf) */
	uint8_t smac[6];          /* this NIC */
	struct in6_addr src;      /* the plane's local address */
	uint16_t sport;           /* host order; also the dport when o->dport is 0 */
};

/* Writes the frame of o (headers, then o->iov copied in order) into
 * buf[0..cap).  Returns its length, -EMSGSIZE when it does not fit in cap
 * or exceeds MRC_DP_MAX_DGRAM of UDP payload, -EINVAL for a bad iovcnt. */
int mrc__dp_frame_build(uint8_t *buf, size_t cap, const struct mrc__dp_frame_hdr *h,
		     const struct mrc_dp_out *o);
/* Only the MRC__FRAME_HDR_LEN header bytes, for paylen bytes of UDP
 * payload that the caller places after them (scatter-gather); dscp as
 * mrc_dp_out's. */
void mrc__dp_frame_hdr_write(uint8_t *buf, const struct mrc__dp_frame_hdr *h,
			  const struct in6_addr *dst, uint16_t dport, size_t paylen,
			  uint8_t dscp);

/* A received frame's UDP datagram. */
struct mrc__dp_frame_rx {
	const uint8_t *payload;   /* points into the frame */
	size_t len;
	struct in6_addr src, dst;
	uint16_t sport, dport;    /* host order */
	uint8_t ecn;              /* the IPv6 ECN field, 0..3 */
};

/* Parses an Ethernet/IPv6/UDP frame of len bytes, checking every length
 * against what was received (frames are hostile input).  0 and *rx filled
 * for a well-formed datagram; -EPROTONOSUPPORT for a frame that is not
 * IPv6/UDP (neighbour discovery, a VLAN tag, a fragment, a routing header
 * with segments left: not for this host's UDP); -EBADMSG when a length is
 * inconsistent. */
int mrc__dp_frame_parse(const uint8_t *buf, size_t len, struct mrc__dp_frame_rx *rx);

#endif
