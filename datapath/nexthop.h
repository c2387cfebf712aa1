/* The Ethernet address a frame datapath (dpdk, af_xdp) sends a plane's
 * frames to: its next hop, from the kernel's routing and neighbour
 * tables, read before the provider takes the NIC (the kernel no longer
 * answers neighbour discovery on a NIC a poll-mode driver owns). */
#ifndef MRC_DATAPATH_NEXTHOP_H
#define MRC_DATAPATH_NEXTHOP_H

#include <stddef.h>
#include <stdint.h>

/* The next hop of ifname: the gateway of the IPv6 routes through it (all
 * routes of a plane NIC share it: the leaf), resolved to its MAC in the
 * neighbour table; when the entry is missing, a datagram to the gateway
 * makes the kernel resolve it, awaited up to timeout_ms.  0 and mac set;
 * -ENODEV (no such NIC), -ENETUNREACH (no route with a gateway through
 * it), -ETIMEDOUT (the gateway did not answer); why says which. */
int mrc__dp_nexthop_mac(const char *ifname, unsigned timeout_ms, uint8_t mac[6],
		     char *why, size_t whylen);

#endif
