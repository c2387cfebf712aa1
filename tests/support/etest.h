/* Shared fixtures of the engine tests: two engines on the in-memory
 * channel, one QP pair, a guarded source buffer on node 0 and a guarded
 * target buffer on node 1, and run-until helpers that never hang. */
#ifndef MRC_TESTS_ETEST_H
#define MRC_TESTS_ETEST_H

#include <stdint.h>

#include "tests/support/chan.h"
#include "tests/support/gbuf.h"

#define ETEST_PD 1u
#define ETEST_GUARD 4096u
#define ETEST_MAX_STEPS 100000000ull

struct etest {
	struct chan *ch;
	uint32_t qa, qb;           /* QP on node 0, its partner on node 1 */
	struct chan_gbuf src, dst; /* node 0 source, node 1 target */
	uint32_t lkey;             /* src: LOCAL_READ | LOCAL_WRITE */
	uint32_t rkey;             /* dst: REMOTE_WRITE | REMOTE_ATOMIC | LOCAL_WRITE */
	uint32_t dst_lkey;         /* same region as rkey (RECV buffers) */
};

/* Sets everything up; src is filled with a seeded pattern, dst with a
 * different one.  sparse: both buffers are MAP_NORESERVE mappings left
 * zero.  Returns 0 or -errno (and prints why). */
int etest_init(struct etest *t, const struct chan_cfg *cfg, size_t src_len,
	       size_t dst_len, int sparse);
void etest_fini(struct etest *t);
/* Finishes every fixture not yet finished (a cmocka teardown). */
void etest_cleanup_all(void);

/* Runs until node n has seen at least want[n] completions in total (since
 * chan creation), for every node n < nodes. */
int etest_run_wcs(struct chan *ch, const uint64_t *want, uint64_t max_ns);
/* Convenience for two nodes. */
int etest_run2(struct chan *ch, uint64_t n0, uint64_t n1, uint64_t max_ns);

/* Posts a WRITE-family / SEND / ATOMIC work request on qpn of node n. */
int etest_post(struct chan *ch, uint32_t n, uint32_t qpn, uint8_t op, uint64_t wr_id,
	       uint32_t lkey, uint64_t loff, uint64_t len, uint32_t rkey,
	       uint64_t roff, uint32_t imm, uint64_t add);

#endif
