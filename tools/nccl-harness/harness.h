/* mrc-nccl-harness's parts and what they share: harness.c the program
 * (options, main), rdv.c the rendezvous between the ranks, comms.c the
 * plugin's comms, checks.c the checks, bench.c the benchmark through the
 * plugin or libmrc, bench_tcp.c its TCP baseline and the copy cost.
 * drive.c (drive.h), the loading and verified rounds, is shared with the
 * unit tests. */
#ifndef MRC_TOOLS_NCCL_HARNESS_H
#define MRC_TOOLS_NCCL_HARNESS_H

#include <stddef.h>
#include <stdint.h>

#include "tools/nccl-harness/drive.h"

#define MAXR 16                /* ranks */
#define MAXC 16                /* comms per peer */

/* harness.c: the options (the header of harness.c) */
extern int nh_rank, nh_nranks, nh_ncomms, nh_rounds, nh_progress, nh_bench, nh_memfd_bufs;
extern size_t nh_maxsize, nh_onesize, nh_bench_max;
extern uint64_t nh_seed;
extern const char *nh_rdv;
/* Prints "rank R: FAIL: ..." with the seed and exits 1. */
void nh_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/* rdv.c: rank 0 binds nh_rdv, the others connect to it */
void nh_rdv_init(void);
/* all[r * len ...] = rank r's mine. */
void nh_allgather(const void *mine, void *all, size_t len);
void nh_barrier(void);

/* comms.c: the plugin and its comms to every peer */
extern const ncclNet_v11_t *nh_net;
extern void *nh_nctx;
extern void *nh_lcomm[MAXR][MAXC], *nh_scomm[MAXR][MAXC], *nh_rcomm[MAXR][MAXC];
extern struct ndrv_stats nh_st;
extern uint64_t nh_connect_null, nh_accept_null;
#define NC(call) do { ncclResult_t r_ = (call); if (r_ != ncclSuccess) nh_die("%s: %d", #call, r_); } while (0)
/* nc send and receive comms to every peer (non-blocking connect/accept
 * loops, 60 s at most); closed again. */
void nh_make_comms(int nc);
void nh_close_comms(int nc);
/* The links of nc comms per peer, as drive.h's rounds take them. */
int nh_links(struct ndrv_link *s, struct ndrv_link *r, int nc);
/* Waits for one request (deadline 30 s). */
void nh_wait_req(void *req, int *sizes, const char *what);

/* checks.c */
/* devices and properties (in a benchmark: any plugin's, for its sizes) */
void nh_check_props(void);
/* Everything the header of harness.c lists, on mrc's plugin. */
void nh_run_checks(void);

/* bench.c: rank 0 -> rank 1 latency and throughput per message size */
#define NBS 5
#define WIN 8                  /* messages in flight */
extern const size_t nh_bsizes[NBS];
int nh_cmpd(const void *a, const void *b);   /* qsort order of doubles */
/* Transport abstraction of the benchmark: the plugin, libmrc or TCP. */
struct nh_bt {
	int (*post_send)(size_t sz, int slot);  /* 1 posted, 0 retry */
	int (*post_recv)(size_t sz, int slot);
	int (*poll)(int *sends, int *recvs);    /* completions since last call */
};
void nh_run_bench(const struct nh_bt *t, const char *name);
void nh_bench_plugin(void);
void nh_bench_direct(void);
/* bench_tcp.c: the same over loopback TCP; one bounce copy's cost */
void nh_bench_tcp(void);
void nh_copy_cost(void);

#endif
