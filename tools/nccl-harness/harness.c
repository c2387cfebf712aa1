/* mrc-nccl-harness: drives libnccl-net-mrc.so as NCCL's proxy thread does,
 * across N processes (no MPI, no GPU).
 *
 *   mrc-nccl-harness -r RANK -n NRANKS -R RDV_SOCKET [-c COMMS] [-k ROUNDS]
 *                    [-s MAXSIZE] [-S SEED] [-p PLUGIN] [-P]
 *   mrc-nccl-harness -r RANK -n 2 -R RDV_SOCKET -b [-d]     (benchmark)
 *
 * Rank 0 binds the rendezvous Unix socket RDV_SOCKET (a path: it reaches
 * across network namespaces) and relays the 128-byte listen handles, as
 * NCCL's bootstrap does.  Then, with mrcd reached through $MRC_SOCKET:
 * load by NCCL's rules, init/devices/getProperties, COMMS send and recv
 * comms to every peer by non-blocking connect/accept loops, an unsupported
 * pointer type refused, an isend before its receive is posted (a NULL
 * request, retried, or an eager send at once), iflush, ROUNDS verified rounds of grouped tagged
 * receives larger than their sends (drive.h), receives until irecv returns
 * NULL, closes with operations in flight, then fresh comms and one more
 * verified round, finalize.  -P prints "progress N" after each round (the
 * root test injects faults on it).  Exit 0 only if everything held.
 *
 * -b: rank 0 -> rank 1 latency (round trip) and throughput per message
 * size through the plugin (any v11 plugin: -p NAME or a path); -z SIZE:
 * only that size (one of 8, 4096, 65536, 1 MiB, 4 MiB); -d: the same transfers through libmrc directly
 * (WRITE_IMM between registered regions, no copies), the baseline.
 * -T: the same transfers over a loopback TCP connection (TCP_NODELAY),
 * what NCCL's socket transport would use between the two ranks.
 * -m (with -b): the plugin's buffers come from a memfd, which its send
 * side registers in place (mrc_reg_mem) and sends from without a copy.
 * -M (alone): the cost of one bounce copy per message size (memcpy between
 * two host buffers, as the plugin does on each side). */
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/nccl-harness/harness.h"

int nh_rank, nh_nranks = 2, nh_ncomms = 2, nh_rounds = 20, nh_progress, nh_bench;
static int direct, copycost, tcp;
int nh_memfd_bufs;                 /* -m: bench buffers from a memfd */
size_t nh_maxsize = 1 << 20, nh_onesize, nh_bench_max = SIZE_MAX;
uint64_t nh_seed;
const char *nh_rdv;
static const char *plugin = "mrc";
static struct ndrv drv;

void nh_die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "rank %d: FAIL: ", nh_rank);
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, " (seed %llu)\n", (unsigned long long)nh_seed);
	va_end(ap);
	exit(1);
}

static void logger(ncclDebugLogLevel lvl, unsigned long flags, const char *file, int line,
		   const char *fmt, ...)
{
	(void)flags;
	if (lvl > NCCL_LOG_WARN && !getenv("MRC_NCCL_DEBUG"))
		return;
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "rank %d %s:%d ", nh_rank, file, line);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

int main(int argc, char **argv)
{
	int c;
	setvbuf(stdout, NULL, _IOLBF, 0);
	nh_seed = (uint64_t)ndrv_now_us();
	if (getenv("MRC_TEST_SEED"))
		nh_seed = strtoull(getenv("MRC_TEST_SEED"), NULL, 0);
	if (getenv("NCCL_NET_PLUGIN"))
		plugin = getenv("NCCL_NET_PLUGIN");
	while ((c = getopt(argc, argv, "r:n:R:c:k:s:S:p:PbdMz:Tm")) != -1)
		switch (c) {
		case 'r': nh_rank = atoi(optarg); break;
		case 'n': nh_nranks = atoi(optarg); break;
		case 'R': nh_rdv = optarg; break;
		case 'c': nh_ncomms = atoi(optarg); break;
		case 'k': nh_rounds = atoi(optarg); break;
		case 's': nh_maxsize = strtoull(optarg, NULL, 0); break;
		case 'S': nh_seed = strtoull(optarg, NULL, 0); break;
		case 'p': plugin = optarg; break;
		case 'P': nh_progress = 1; break;
		case 'b': nh_bench = 1; break;
		case 'd': direct = 1; break;
		case 'M': copycost = 1; break;
		case 'm': nh_memfd_bufs = 1; break;
		case 'T': tcp = 1; break;
		case 'z': nh_onesize = strtoull(optarg, NULL, 0); break;
		default:
			fprintf(stderr, "usage: see the header of tools/nccl-harness/harness.c\n");
			return 2;
		}
	if (copycost) {
		nh_copy_cost();
		return 0;
	}
	if (!nh_rdv || nh_nranks < 2 || nh_nranks > MAXR || nh_rank < 0 || nh_rank >= nh_nranks || nh_ncomms < 1 ||
	    nh_ncomms > MAXC || nh_rounds < 1 || ((nh_bench || direct || tcp) && nh_nranks != 2))
		nh_die("bad arguments");
	nh_rdv_init();
	/* every rank uses rank 0's seed */
	uint64_t seeds[MAXR];
	nh_allgather(&nh_seed, seeds, sizeof(nh_seed));
	nh_seed = seeds[0];
	if (nh_rank == 0)
		printf("mrc-nccl-harness: %d ranks, seed %llu\n", nh_nranks, (unsigned long long)nh_seed);
	if (direct) {
		nh_bench_direct();
		return 0;
	}
	if (tcp) {
		nh_bench_tcp();
		return 0;
	}
	char err[512];
	if (ndrv_load(&drv, plugin, err, sizeof(err)))
		nh_die("%s", err);
	nh_net = drv.net;
	/* The benchmark drives any v11 plugin; the checks know mrc's. */
	if (!nh_bench && strcmp(nh_net->name, "mrc"))
		nh_die("plugin name %s", nh_net->name);
	if (nh_rank == 0)
		printf("loaded %s: ncclNetPlugin_v11 \"%s\"%s%s%s\n", drv.path, nh_net->name,
		       drv.v10 ? ", _v10" : "", drv.v9 ? ", _v9" : "", drv.v8 ? ", _v8" : "");
	ncclNetCommConfig_t cfg = { .trafficClass = -1 };
	NC(nh_net->init(&nh_nctx, 0x6d7263ull, &cfg, logger, NULL));
	if (nh_bench)
		nh_bench_plugin();
	else
		nh_run_checks();
	nh_barrier();
	NC(nh_net->finalize(nh_nctx));
	ndrv_unload(&drv);
	return 0;
}
