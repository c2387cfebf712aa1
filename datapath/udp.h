/* UDP/IPv6 datapath: one socket per plane, bound to that plane's NIC.
 * It moves bytes and knows no protocol.  Each packet goes to its own
 * destination address (in SRv6 uSID mode the address is the path), with a
 * zero UDP checksum (the transport's CRC32C protects the data: the UDP
 * checksum cannot cover an address that changes hop by hop), gathered from
 * up to three pieces (header, payload straight from registered memory,
 * trailer) and sent in batches with sendmmsg; receive is batched with
 * recvmmsg and reports the ECN bits of each datagram. */
#ifndef MRC_DATAPATH_UDP_H
#define MRC_DATAPATH_UDP_H

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

struct mrc_dp_out {
	uint32_t plane;
	uint16_t dport;           /* 0: the datapath's own port */
	struct in6_addr dst;
	struct iovec iov[3];
	uint32_t iovcnt;
};

struct mrc_dp_in {
	uint8_t *buf;             /* points into the datapath's receive pool */
	size_t len;
	struct in6_addr src;
	uint16_t sport;           /* UDP source port, host order */
	uint32_t plane;
	uint8_t ecn_ce;           /* IP ECN field was CE (11) */
};

struct mrc_dp_stats {
	uint64_t tx_pkts, tx_bytes, tx_errs, tx_eagain;
	uint64_t rx_pkts, rx_bytes, rx_truncated;
};

struct mrc_dp;

/* Opens one socket per plane on port.  why (optional) receives a precise
 * message on failure, e.g. which interface could not be bound and why. */
int mrc_dp_open(struct mrc_dp **out, const struct mrc_dp_plane *planes,
		uint32_t nplanes, uint16_t port, char *why, size_t whylen);
void mrc_dp_close(struct mrc_dp *dp);
/* The socket of a plane, for an event loop (readable: call mrc_dp_recv). */
int mrc_dp_fd(const struct mrc_dp *dp, uint32_t plane);

/* Sends pkts[0..n) (any planes), batched per plane; blocks while a plane's
 * socket buffer is full (backpressure from the qdisc).  Returns how many
 * were handed to the kernel; the rest failed (link down: the transport
 * recovers them like any loss). */
int mrc_dp_send(struct mrc_dp *dp, const struct mrc_dp_out *pkts, uint32_t n);
/* Up to max datagrams from one plane (0 when none is waiting).  The
 * buffers stay valid until the next mrc_dp_recv on that plane. */
int mrc_dp_recv(struct mrc_dp *dp, uint32_t plane, struct mrc_dp_in *in, uint32_t max);
void mrc_dp_get_stats(const struct mrc_dp *dp, struct mrc_dp_stats *st);

#endif
