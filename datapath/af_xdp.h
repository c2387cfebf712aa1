/* The af_xdp datapath's internals (datapath.h is the interface): the
 * plane NIC's MAC (af_xdp_nd.c), and the XDP program that steers mrc's
 * port to the socket (af_xdp_prog.c, af_xdp.bpf.c).  The frames it builds
 * in UMEM and parses are datapath/frame.h's, the next hop's MAC
 * datapath/nexthop.h's (shared with dpdk). */
#ifndef MRC_DATAPATH_AF_XDP_H
#define MRC_DATAPATH_AF_XDP_H

#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>

#include "datapath/frame.h"
#include "datapath/nexthop.h"

/* The NIC's MAC address.  0 or a negative errno. */
int mrc__dp_xdp_nic_mac(const char *ifname, uint8_t mac[6]);
struct mrc__dp_xdp_prog;
/* Loads the embedded XDP program for port, puts xsk_fd in its XSKMAP at
 * queue and attaches it to ifindex: native (driver) mode, else generic
 * (skb) mode unless mode forces one ("native", "skb"; NULL or "" auto).
 * *native says which.  Fills why on failure. */
int mrc__dp_xdp_prog_attach(struct mrc__dp_xdp_prog **out, int ifindex, uint16_t port,
			 uint32_t queue, int xsk_fd, const char *mode, int *native,
			 char *why, size_t whylen);
void mrc__dp_xdp_prog_detach(struct mrc__dp_xdp_prog *p);

#endif
