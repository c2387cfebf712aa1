/* The kernel UDP/IPv6 datapath (provider "udp", the default): one socket
 * per plane, bound to that plane's NIC; sends are gathered from the
 * datapath.h pieces and batched per plane with sendmmsg (blocking: a full
 * socket buffer is backpressure from the qdisc); receive is batched with
 * recvmmsg and reports the ECN bits of each datagram.  By default runs
 * of same-size datagrams leave as one UDP_SEGMENT send (not on veth
 * ports) and coalesced receive buffers (UDP_GRO) are split back into
 * datagrams (datapath_args gso=, gro=; docs/datapaths.md).  Runs
 * anywhere, unprivileged, loopback included. */
#ifndef MRC_DATAPATH_UDP_H
#define MRC_DATAPATH_UDP_H

#include "datapath/datapath.h"

/* With mrc_dp_cfg.urgent_dscp set, each plane has a second socket on the
 * same address and port that the kernel fills with the datagrams of that
 * DSCP only (udp_urgent.c), and recv reads it first: an urgent datagram
 * waits for at most the batch being handed up, not for the plane's bulk
 * backlog.  The plane's descriptor is then an epoll set of both. */
int mrc__dp_udp_port_free(const struct mrc_dp_plane *p, uint16_t port);
int mrc__dp_udp_steer(int fd, uint8_t dscp);
int mrc__dp_udp_epoll(int fd, int ufd);

/* datapath_args (udp_args.c): gso= and gro= into OPT_*; -EINVAL with why
 * filled for anything else. */
enum { OPT_OFF, OPT_ON, OPT_AUTO };
int mrc__dp_udp_args(const char *s, int *gso, int *gro, char *why, size_t whylen);

#endif
