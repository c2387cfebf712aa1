/* mpi_check: point-to-point and collective MPI traffic with every byte
 * checked, in rounds, for tests/root/libfabric.sh (Open MPI over a
 * libfabric provider on the emulated fabric).
 *
 *   mpirun ... mpi_check [-s SEED] [-n ROUNDS] [-m MAXBYTES] [-S STOPFILE]
 *                        [-P PROGRESSFILE] [-T SECONDS]
 *
 * One round: (1) a ring exchange (MPI_Sendrecv to rank+1 from rank-1) at
 * sizes 0, 1, 7, 4 KiB, 64 KiB+1, 1 MiB+3 and MAXBYTES (default 4 MiB:
 * eager and rendezvous paths of a provider); (2) every rank to every other
 * with MPI_Isend/MPI_Irecv, one tag per sender, received with
 * MPI_ANY_SOURCE and the sender checked from the status; (3) a message
 * whose size the receiver learns with MPI_Probe + MPI_Get_count (the
 * provider's peek); (4) MPI_Allreduce (int64 sum, against its closed
 * form), MPI_Alltoall, MPI_Bcast from a root that moves each round,
 * MPI_Allgather, MPI_Barrier.  Every byte comes from a stream seeded by
 * (seed, round, sender, receiver, size) and is compared on arrival.
 *
 * Rounds: -n of them (default 3); with -S, rounds go on until the file
 * STOPFILE exists (rank 0 looks, and broadcasts the answer, so all ranks
 * stop after the same round), at most -n (then a bound, default 100000).
 * -P: rank 0 appends "round N wrong W" to PROGRESSFILE after each round
 * (a file, not stdout: mpirun's forwarding of stdout may ride the very
 * connection a fault stalls).  -T bounds MPI_Init and each round: a rank
 * past it prints "# stalled" and exits 3.  The seed (default: the time)
 * is printed first and on any wrong byte.  Exit 0 when no byte was wrong.
 * -X flips one byte rank 1 received in round 0 before checking it: the
 * checker's own test (it must then report 1 wrong byte and exit 1).
 */
#include <errno.h>
#include <inttypes.h>
#include <mpi.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tests/support/mpi_stall.h"

static volatile int cur_round = -1;
static const char *env_rank = "?";

/* SIGALRM: the -T bound.  Only async-signal-safe calls. */
static void on_alarm(int sig)
{
	char buf[96];
	int r = cur_round;
	size_t len = mrc__stall_line(buf, sizeof(buf), env_rank, r < 0 ? " in MPI_Init" : " in round ",
				     r);
	if (write(STDOUT_FILENO, buf, len) < 0)
		_exit(3);
	_exit(3);
	(void)sig;
}

/* splitmix64: the byte stream of one message, reproducible on both ends. */
static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static uint64_t key(uint64_t seed, int round, int src, int dst, size_t size, int what)
{
	return mix(seed ^ mix(((uint64_t)round << 40) ^ ((uint64_t)src << 28) ^
			      ((uint64_t)dst << 16) ^ ((uint64_t)what << 8)) ^ mix(size));
}

static void fill(unsigned char *p, size_t n, uint64_t k)
{
	uint64_t s = k;
	for (size_t i = 0; i < n; i += 8) {
		uint64_t v = mix(s++);
		size_t m = n - i < 8 ? n - i : 8;
		memcpy(p + i, &v, m);
	}
}

/* Wrong bytes of p[0..n) against the stream of k. */
static long long wrong_bytes(const unsigned char *p, size_t n, uint64_t k)
{
	long long w = 0;
	uint64_t s = k;
	for (size_t i = 0; i < n; i += 8) {
		uint64_t v = mix(s++);
		unsigned char e[8];
		size_t m = n - i < 8 ? n - i : 8;
		memcpy(e, &v, 8);
		for (size_t j = 0; j < m; j++)
			w += p[i + j] != e[j];
	}
	return w;
}

struct ctx {
	uint64_t seed;
	int rank, n, round;
	size_t maxb;
	unsigned char *sbuf, *rbuf;   /* maxb * n bytes each */
	long long checked;
	int corrupt;   /* -X: flip one received byte (the checker's own test) */
};

#define CK(call) do { int rc_ = (call); if (rc_ != MPI_SUCCESS) return rc_; } while (0)

/* (1) ring exchange at each size. */
static int ring(struct ctx *c, long long *wrong)
{
	const size_t sizes[] = { 0, 1, 7, 4096, 65537, (1u << 20) + 3, c->maxb };
	int to = (c->rank + 1) % c->n, from = (c->rank + c->n - 1) % c->n;
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t s = sizes[i] > c->maxb ? c->maxb : sizes[i];
		fill(c->sbuf, s, key(c->seed, c->round, c->rank, to, s, 1));
		memset(c->rbuf, 0, s);
		MPI_Status st;
		int got;
		CK(MPI_Sendrecv(c->sbuf, (int)s, MPI_BYTE, to, 100 + (int)i, c->rbuf, (int)s, MPI_BYTE,
				from, 100 + (int)i, MPI_COMM_WORLD, &st));
		MPI_Get_count(&st, MPI_BYTE, &got);
		if (c->corrupt && c->rank == 1 % c->n && c->round == 0 && s == 4096)
			c->rbuf[s / 2] ^= 0x20;
		*wrong += wrong_bytes(c->rbuf, s, key(c->seed, c->round, from, c->rank, s, 1)) +
			  ((size_t)got != s);
		c->checked += (long long)s;
	}
	return MPI_SUCCESS;
}

/* (2) every rank to every other, tag = sender's rank, ANY_SOURCE. */
static int pairs(struct ctx *c, long long *wrong)
{
	size_t s = 65536 + 17 * (size_t)c->round % 4096;
	if (s > c->maxb)
		s = c->maxb;
	int n = c->n, k = 0;
	MPI_Request *rq = calloc(2 * (size_t)n, sizeof(*rq));
	MPI_Status *st = calloc(2 * (size_t)n, sizeof(*st));
	if (!rq || !st) {
		free(rq);
		free(st);
		return MPI_ERR_NO_MEM;
	}
	for (int p = 0; p < n; p++) {
		if (p == c->rank)
			continue;
		/* Receives from any source: each lands in the slot of its tag. */
		MPI_Irecv(c->rbuf + (size_t)p * s, (int)s, MPI_BYTE, MPI_ANY_SOURCE, 200 + p,
			  MPI_COMM_WORLD, &rq[k++]);
	}
	for (int p = 0; p < n; p++) {
		if (p == c->rank)
			continue;
		fill(c->sbuf + (size_t)p * s, s, key(c->seed, c->round, c->rank, p, s, 2));
		MPI_Isend(c->sbuf + (size_t)p * s, (int)s, MPI_BYTE, p, 200 + c->rank, MPI_COMM_WORLD,
			  &rq[k++]);
	}
	int rc = MPI_Waitall(k, rq, st);
	for (int i = 0, p = 0; rc == MPI_SUCCESS && p < n; p++) {
		if (p == c->rank)
			continue;
		*wrong += wrong_bytes(c->rbuf + (size_t)p * s, s, key(c->seed, c->round, p, c->rank, s, 2)) +
			  (st[i].MPI_SOURCE != p);
		c->checked += (long long)s;
		i++;
	}
	free(rq);
	free(st);
	return rc;
}

/* (3) the receiver learns the size by probing. */
static int probe(struct ctx *c, long long *wrong)
{
	int to = (c->rank + 1) % c->n, from = (c->rank + c->n - 1) % c->n, got;
	size_t s = 1000 + (size_t)(mix(c->seed ^ (uint64_t)c->round ^ ((uint64_t)c->rank << 20)) % 300000);
	if (s > c->maxb)
		s = c->maxb;
	fill(c->sbuf, s, key(c->seed, c->round, c->rank, to, s, 3));
	MPI_Request rq;
	MPI_Status st;
	CK(MPI_Isend(c->sbuf, (int)s, MPI_BYTE, to, 300, MPI_COMM_WORLD, &rq));
	CK(MPI_Probe(from, 300, MPI_COMM_WORLD, &st));
	MPI_Get_count(&st, MPI_BYTE, &got);
	size_t exp = 1000 + (size_t)(mix(c->seed ^ (uint64_t)c->round ^ ((uint64_t)from << 20)) % 300000);
	if (exp > c->maxb)
		exp = c->maxb;
	if ((size_t)got != exp) {
		*wrong += 1;
		got = got < 0 ? 0 : got > (int)c->maxb ? (int)c->maxb : got;
	}
	CK(MPI_Recv(c->rbuf, got, MPI_BYTE, from, 300, MPI_COMM_WORLD, &st));
	*wrong += wrong_bytes(c->rbuf, (size_t)got, key(c->seed, c->round, from, c->rank, exp, 3));
	c->checked += got;
	return MPI_Wait(&rq, MPI_STATUS_IGNORE);
}

/* (4) collectives. */
static int colls(struct ctx *c, long long *wrong)
{
	int n = c->n;
	size_t cnt = 32768 + (size_t)c->round % 7;   /* int64s in the all-reduce */
	if (cnt * 8 > c->maxb)
		cnt = c->maxb / 8;
	int64_t *a = (int64_t *)c->sbuf, *b = (int64_t *)c->rbuf;
	for (size_t i = 0; i < cnt; i++)
		a[i] = (int64_t)(c->rank + 1) * (int64_t)(i + 1) + c->round;
	CK(MPI_Allreduce(a, b, (int)cnt, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD));
	for (size_t i = 0; i < cnt; i++)   /* sum over r of (r+1)(i+1) + round */
		*wrong += b[i] != (int64_t)n * (n + 1) / 2 * (int64_t)(i + 1) + (int64_t)n * c->round;
	c->checked += (long long)(cnt * 8);

	size_t s = c->maxb / (size_t)n < 65536 ? c->maxb / (size_t)n : 65536;   /* per peer */
	for (int p = 0; p < n; p++)
		fill(c->sbuf + (size_t)p * s, s, key(c->seed, c->round, c->rank, p, s, 4));
	CK(MPI_Alltoall(c->sbuf, (int)s, MPI_BYTE, c->rbuf, (int)s, MPI_BYTE, MPI_COMM_WORLD));
	for (int p = 0; p < n; p++)
		*wrong += wrong_bytes(c->rbuf + (size_t)p * s, s, key(c->seed, c->round, p, c->rank, s, 4));
	c->checked += (long long)(s * (size_t)n);

	int root = c->round % n;
	size_t bs = c->maxb;
	if (c->rank == root)
		fill(c->rbuf, bs, key(c->seed, c->round, root, 0, bs, 5));
	else
		memset(c->rbuf, 0, bs);
	CK(MPI_Bcast(c->rbuf, (int)bs, MPI_BYTE, root, MPI_COMM_WORLD));
	*wrong += wrong_bytes(c->rbuf, bs, key(c->seed, c->round, root, 0, bs, 5));
	c->checked += (long long)bs;

	fill(c->sbuf, s, key(c->seed, c->round, c->rank, 0, s, 6));
	CK(MPI_Allgather(c->sbuf, (int)s, MPI_BYTE, c->rbuf, (int)s, MPI_BYTE, MPI_COMM_WORLD));
	for (int p = 0; p < n; p++)
		*wrong += wrong_bytes(c->rbuf + (size_t)p * s, s, key(c->seed, c->round, p, 0, s, 6));
	c->checked += (long long)(s * (size_t)n);
	return MPI_Barrier(MPI_COMM_WORLD);
}

int main(int argc, char **argv)
{
	struct ctx c = { .seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32), .maxb = 4u << 20 };
	const char *stop = NULL, *prog = NULL;
	long rounds = -1;
	int tmo = 0, o, seeded = 0;
	while ((o = getopt(argc, argv, "s:n:m:S:P:T:X")) != -1) {
		switch (o) {
		case 's': c.seed = strtoull(optarg, NULL, 0); seeded = 1; break;
		case 'n': rounds = atol(optarg); break;
		case 'm': c.maxb = strtoull(optarg, NULL, 0); break;
		case 'S': stop = optarg; break;
		case 'P': prog = optarg; break;
		case 'T': tmo = atoi(optarg); break;
		case 'X': c.corrupt = 1; break;
		default:
			fprintf(stderr, "usage: mpi_check [-s SEED] [-n ROUNDS] [-m MAXBYTES] [-S STOPFILE] "
				"[-P PROGRESSFILE] [-T SECONDS] [-X]\n");
			return 2;
		}
	}
	if (rounds < 0)
		rounds = stop ? 100000 : 3;
	env_rank = mrc__stall_arm(tmo, on_alarm);
	MPI_Init(&argc, &argv);
	alarm(0);
	MPI_Comm_rank(MPI_COMM_WORLD, &c.rank);
	MPI_Comm_size(MPI_COMM_WORLD, &c.n);
	/* Every rank uses rank 0's seed (a time-derived one differs per rank). */
	MPI_Bcast(&c.seed, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
	if (c.maxb < 8 || c.maxb > (1u << 30)) {
		if (!c.rank)
			fprintf(stderr, "mpi_check: -m %zu out of 8..1G\n", c.maxb);
		MPI_Finalize();
		return 2;
	}
	size_t bufsz = c.maxb * (size_t)c.n + 8;
	c.sbuf = malloc(bufsz);
	c.rbuf = malloc(bufsz);
	if (!c.sbuf || !c.rbuf) {
		fprintf(stderr, "mpi_check: %s\n", strerror(ENOMEM));
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	if (!c.rank) {
		printf("# mpi_check: %d ranks, seed %" PRIu64 "%s, up to %zu bytes per message\n", c.n,
		       c.seed, seeded ? "" : " (from the time)", c.maxb);
		fflush(stdout);
	}
	long long total = 0;
	int rc = MPI_SUCCESS, done = 0;
	for (c.round = 0; c.round < rounds && !done && rc == MPI_SUCCESS; c.round++) {
		long long w = 0;
		cur_round = c.round;
		if (tmo > 0)
			alarm((unsigned)tmo);
		rc = ring(&c, &w);
		if (rc == MPI_SUCCESS)
			rc = pairs(&c, &w);
		if (rc == MPI_SUCCESS)
			rc = probe(&c, &w);
		if (rc == MPI_SUCCESS)
			rc = colls(&c, &w);
		if (rc == MPI_SUCCESS)
			rc = MPI_Allreduce(MPI_IN_PLACE, &w, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
		alarm(0);
		total += w;
		if (!c.rank && prog) {
			FILE *f = fopen(prog, "a");
			if (f) {
				fprintf(f, "round %d wrong %lld\n", c.round, w);
				fclose(f);
			}
		}
		if (w && !c.rank)
			printf("# round %d: %lld wrong (seed %" PRIu64 ")\n", c.round, w, c.seed);
		if (stop && rc == MPI_SUCCESS) {
			done = !c.rank && access(stop, F_OK) == 0;
			rc = MPI_Bcast(&done, 1, MPI_INT, 0, MPI_COMM_WORLD);
		}
	}
	long long checked = c.checked;
	if (rc == MPI_SUCCESS)
		MPI_Allreduce(MPI_IN_PLACE, &checked, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
	if (rc != MPI_SUCCESS) {
		fprintf(stderr, "mpi_check: rank %d: MPI error %d in round %d\n", c.rank, rc, c.round);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	if (!c.rank)
		printf("# mpi_check: %d rounds on %d ranks, %lld bytes checked, %lld wrong %s (seed %" PRIu64 ")\n",
		       c.round, c.n, checked, total, total ? "FAILED" : "OK", c.seed);
	free(c.sbuf);
	free(c.rbuf);
	MPI_Finalize();
	return total ? 1 : 0;
}
