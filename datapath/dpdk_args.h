/* The dpdk datapath's options (datapath_args, docs/datapaths.md) and the
 * EAL command line and per-plane device arguments made from them.  No
 * DPDK type here: this part is built and tested without DPDK. */
#ifndef MRC_DATAPATH_DPDK_ARGS_H
#define MRC_DATAPATH_DPDK_ARGS_H

#include <stddef.h>
#include <stdint.h>

#include "datapath/datapath.h"

#define MRC__DPDK_MAX_ARGS 48
/* af_packet's frame slot: a 9216-byte datagram with its headers and the
 * kernel's packet header; every mbuf has room for one (dpdk.c). */
#define MRC__DPDK_FRAMESZ 12288
/* idle_us's default: once idle, a poll round sleeps this long (dpdk.c). */
#define MRC__DPDK_IDLE_US 50

/* wait=: how mrcd waits for received frames.  AUTO: on the af_packet
 * driver's socket where there is one (pmd=af_packet), else polling;
 * SOCKET: on the socket, open fails where there is none; POLL: polling
 * (idle_us), as DPDK applications do. */
enum { MRC__DPDK_WAIT_AUTO, MRC__DPDK_WAIT_SOCKET, MRC__DPDK_WAIT_POLL };

struct mrc__dp_dpdk_args {
	char pmd[16];             /* af_packet (default), af_xdp, ring, none */
	char devargs[160];        /* devargs=: appended to every plane's vdev */
	uint8_t dmac[MRC_DP_MAX_PLANES][6];
	uint32_t dmac_set;        /* dmacN= given: bit N */
	uint32_t idle_us;         /* idle_us=: sleep per idle poll round (0: spin) */
	int wait;                 /* wait=: MRC__DPDK_WAIT_* */
	int argc;                 /* the EAL command line */
	char *argv[MRC__DPDK_MAX_ARGS + 1];
	char buf[2048];           /* argv's strings */
};

/* Parses args (NULL: none): words separated by blanks; pmd=NAME,
 * devargs=K=V[,K=V...], dmacN=XX:XX:XX:XX:XX:XX, idle_us=N (0-10000;
 * default MRC__DPDK_IDLE_US, 0 spins always) and wait=auto|socket|poll
 * are ours, every other
 * word goes to the EAL.  EAL words replace the default set (--no-huge
 * --no-shconf --no-pci -m 256); --lcores (the CPUs in cpus, e.g. "0-3":
 * the EAL's main thread keeps the affinity it was given),
 * --no-telemetry and --log-level=warning are added unless the words set
 * them.  0, or -EINVAL with why. */
int mrc__dp_dpdk_args_parse(struct mrc__dp_dpdk_args *a, const char *args, const char *cpus,
			 char *why, size_t whylen);

/* The vdev devargs of plane number id (unique in the process) on NIC
 * ifname, e.g. "net_af_packet3,iface=h0-p0l0,..." into buf; the device's
 * name is its part before the first comma.  -ENOTSUP for pmd=none (the
 * EAL's own devices are the planes, in port order), -ENAMETOOLONG. */
int mrc__dp_dpdk_vdev(char *buf, size_t len, const struct mrc__dp_dpdk_args *a, unsigned id,
		   const char *ifname);

/* The CPUs this thread may run on as an EAL list ("0-1,4"). */
int mrc__dp_dpdk_cpus(char *buf, size_t len);

#endif
