/* Addressing constants of the fabric, shared by the topology model, the
 * fabric tool, its tc BPF trimmer and the daemon.  docs/fabric.md explains
 * the plan.
 */
#ifndef MRC_TOPOLOGY_ADDR_H
#define MRC_TOPOLOGY_ADDR_H

/* UDP port MRC datagrams are sent to (and from).  Below 1024 on purpose:
 * only root (CAP_NET_BIND_SERVICE) can bind a privileged port, so no local
 * user can take it before mrcd starts or while it restarts and receive
 * what peers send (docs/security.md, "The MRC port").  791 mirrors RoCEv2's
 * 4791, which a fabric that classifies RoCE by port can still be given
 * (`port = 4791`, with the sysctl docs/security.md names). */
#define MRC_UDP_PORT 791

/* Default locator block: fcbb:bb00::/32, 16-bit uSIDs, so one destination
 * address holds up to 6 uSIDs (a 2-tier path needs 4, a 3-tier one 6). */
#define MRC_BLOCK_DEFAULT "fcbb:bb00::/32"
#define MRC_USID_LEN_BITS 16

/* uSIDs the generator hands out (explicit topology files choose their own).
 * Readable in hex: leaf 3 of plane 1 is 0x1103, spine 2 of plane 1 is
 * 0x2102, host 7 is 0x8007.  0x3000-0x3fff is kept for a third tier. */
#define MRC_USID_GEN_LEAF(plane, idx)  (0x1000u + ((plane) << 8) + (idx))
#define MRC_USID_GEN_SPINE(plane, idx) (0x2000u + ((plane) << 8) + (idx))
#define MRC_USID_GEN_HOST(idx)         (0x8000u + (idx))
/* Fat-tree switches (all tiers, all planes) are numbered in build order:
 * 0x1000-0x7fff, so at most 28,672 of them. */
#define MRC_USID_GEN_FT_SWITCH(n)      (0x1000u + (n))
#define MRC_USID_GEN_FT_MAX            0x7000u

/* Baseline (plain IPv6, kernel ECMP) addresses for TCP/MPTCP comparisons:
 * host h's NIC in plane p is fdbb:bb00:P:H::1/64 (P, H in hex). */
#define MRC_BASE_PREFIX_HI 0xfdbbu
#define MRC_BASE_PREFIX_LO 0xbb00u

#endif
