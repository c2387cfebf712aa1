/* What the NCCL plugin's loopback tests share (tests/test_nccl_plugin.c,
 * tests/test_nccl_cuda.c, tests/test_nccl_eager.c): a loopback mrcd on MRC_SOCKET, and comm pairs
 * connected by calling connect and accept until both give comms, as NCCL
 * does.  cmocka assertions inside. */
#ifndef MRC_TESTS_NCCL_PAIRS_H
#define MRC_TESTS_NCCL_PAIRS_H

#include <stdint.h>

#include <jansson.h>

#include "codec/operjson.h"
#include "nccl/net_abi.h"
#include "tests/support/mrcd_spawn.h"

/* Starts d (room for the plugin's many clients) and points MRC_SOCKET at
 * it: 0, or -1 when it did not start. */
int nccl_pairs_daemon_start(struct mrcd_proc *d);
void nccl_pairs_daemon_stop(struct mrcd_proc *d);
/* A cmocka group's setup and teardown around d: *state = d when a daemon
 * runs, NULL when mrcd is not built (tests then skip); 8 MiB bounce
 * regions, so 1 MiB messages at most and rounds stay short. */
int nccl_pairs_group_setup(void **state, struct mrcd_proc *d);
int nccl_pairs_group_teardown(void **state);

/* In a test of the group: skips when mrcd (*state NULL) or the plugin at
 * path (net, its table, NULL) is not built. */
#define NCCL_PAIRS_NEED(state, net, path)                                              \
	do {                                                                            \
		if (!*(state))                                                          \
			MRC_SKIP("%s is not built", mrcd_spawn_bin());                  \
		if (!(net))                                                             \
			MRC_SKIP("%s is not built", path);                              \
	} while (0)

struct nccl_pair {
	void *lc, *sc, *rc;
	uint8_t handle[NCCL_NET_HANDLE_MAXSIZE];
};

/* d's answer to verb v on its operator socket (what mrcctl shows): the
 * result, a new reference; cmocka assertions inside.  engine_stat: one
 * counter of the "stats" verb's engine object. */
json_t *nccl_pairs_ctl(const struct mrcd_proc *d, enum mrc_oper_verb v);
uint64_t nccl_pairs_engine_stat(const struct mrcd_proc *d, const char *name);

/* Connects np pairs; returns how many calls came back without a comm. */
unsigned nccl_connect_pairs(const ncclNet_v11_t *n, void *ctx, struct nccl_pair *p, int np);

#endif
