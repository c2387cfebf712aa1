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

#endif
