/* Driving a NCCL net plugin as NCCL's proxy thread does, for the harness
 * (mrc-nccl-harness) and the unit tests: load it by NCCL's rules, and run
 * verified rounds of grouped, tagged transfers over comms whose ends may
 * live in this process or in others. */
#ifndef MRC_NCCL_DRIVE_H
#define MRC_NCCL_DRIVE_H

#include <stddef.h>
#include <stdint.h>

#include "nccl/net_abi.h"

struct ndrv {
	void *dl;
	const ncclNet_v11_t *net;
	const ncclNet_v10_t *v10;
	const ncclNet_v9_t *v9;
	const ncclNet_v8_t *v8;
	char path[256];                 /* what dlopen was given */
};

/* Resolves the plugin as NCCL 2.28 does for NCCL_NET_PLUGIN=name: a name
 * without '/' becomes libnccl-net-NAME.so on the library path (then NAME
 * itself); dlsym ncclNetPlugin_v11, _v10, _v9, _v8.  0 or -ENOENT with err. */
int ndrv_load(struct ndrv *d, const char *name, char *err, size_t errlen);
void ndrv_unload(struct ndrv *d);

/* One end of a comm: link (src rank, dst rank, k).  comm is the send comm
 * where this process is src, the recv comm where it is dst. */
struct ndrv_link {
	int src, dst, k;
	void *comm;
};

struct ndrv_stats {
	uint64_t msgs, bytes;
	uint64_t isend_null, irecv_null;    /* retried NULL requests */
	uint64_t larger_recvs, zero_msgs, grouped;
};

/* One round: every link gets a grouped receive of 1..maxrecvs messages
 * with distinct tags, receive sizes above the send sizes, sends posted in
 * a shuffled tag order; plan and data are derived from (seed, round, link)
 * so both ends agree without talking.  Verifies sizes from test, every
 * byte, and that nothing past the sent length was written.  0, or -1 with
 * err. */
int ndrv_round(const ncclNet_v11_t *net, struct ndrv_link *sends, int ns,
	       struct ndrv_link *recvs, int nr, uint64_t seed, uint64_t round, size_t maxsize,
	       int maxrecvs, int timeout_ms, struct ndrv_stats *st, char *err, size_t errlen);

/* The same with the buffers registered as ptr_type (NCCL_PTR_CUDA with a
 * plugin whose copy engine is a fake: host memory standing for device
 * memory). */
int ndrv_round_typed(const ncclNet_v11_t *net, struct ndrv_link *sends, int ns,
		     struct ndrv_link *recvs, int nr, uint64_t seed, uint64_t round,
		     size_t maxsize, int maxrecvs, int timeout_ms, int ptr_type,
		     struct ndrv_stats *st, char *err, size_t errlen);

int64_t ndrv_now_us(void);

#endif
