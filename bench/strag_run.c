/* Helper of bench/fabric/strag.sh (not a benchmark on its own): one rank
 * of a job (mrc_coll_cfg_from_env) that runs R steps of three collectives
 * (all-to-all or all-reduce of BYTES per rank), the rank late_rank(step)
 * sleeping SLEEP_MS before the third when SLEEP_MS > 0, then
 * mrc_coll_straggler; rank 0 prints one JSON line per step: what was
 * injected and what was named.
 *   strag_run R BYTES SLEEP_MS SEED a2a|allreduce
 * Without a job in the environment it says what it is and exits 0. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mrc/coll.h"
#include "common/prng.h"

static uint32_t late_rank(uint64_t seed, int step, uint32_t n)
{
	uint64_t x = seed ^ (uint64_t)step * 0x9e3779b97f4a7c15ull;
	return (uint32_t)(mrc_splitmix64(&x) % n);
}

static int call(struct mrc_coll *c, int a2a, void *in, void *out, size_t bytes)
{
	uint32_t n = mrc_coll_size(c);
	if (a2a)
		return mrc_coll_alltoall(c, in, out, bytes / n / 4, MRC_COLL_FLOAT32);
	return mrc_coll_allreduce(c, in, out, bytes / 4, MRC_COLL_FLOAT32, MRC_COLL_SUM);
}

static int step(struct mrc_coll *c, int a2a, void *in, void *out, size_t bytes, int late,
		long sleep_ms, struct mrc_coll_straggler *rec)
{
	int r = 0;
	for (int k = 0; !r && k < 2; k++)
		r = call(c, a2a, in, out, bytes);
	if (!r && late) {
		struct timespec ts = { sleep_ms / 1000, sleep_ms % 1000 * 1000000L };
		while (nanosleep(&ts, &ts) && errno == EINTR)
			;
	}
	if (!r)
		r = call(c, a2a, in, out, bytes);
	return r ? r : mrc_coll_straggler(c, rec);
}

int main(int argc, char **argv)
{
	struct mrc_coll_cfg cfg;
	if (mrc_coll_cfg_from_env(&cfg)) {
		printf("strag_run: helper of bench/fabric/strag.sh (no job in the environment)\n");
		return 0;
	}
	if (argc != 6) {
		fprintf(stderr, "usage: strag_run STEPS BYTES SLEEP_MS SEED a2a|allreduce\n");
		return 2;
	}
	int steps = atoi(argv[1]), a2a = !strcmp(argv[5], "a2a");
	size_t bytes = strtoull(argv[2], NULL, 0);
	long sleep_ms = atol(argv[3]);
	uint64_t seed = strtoull(argv[4], NULL, 0);
	struct mrc_coll *c;
	int r = mrc_coll_init(&cfg, &c);
	if (r) {
		fprintf(stderr, "mrc_coll_init: %s\n", strerror(-r));
		return 1;
	}
	uint32_t n = mrc_coll_size(c), me = mrc_coll_rank(c);
	void *in = calloc(1, bytes), *out = calloc(1, bytes);
	for (int s = 0; !r && s < steps; s++) {
		struct mrc_coll_straggler rec;
		uint32_t lr = late_rank(seed, s, n);
		r = step(c, a2a, in, out, bytes, sleep_ms > 0 && lr == me, sleep_ms, &rec);
		if (!r && me == 0)
			printf("{\"step\":%d,\"late_rank\":%d,\"cause\":\"%s\",\"rank\":%u,\"host\":%u,"
			       "\"peer_rank\":%u,\"peer_host\":%u,\"plane\":%d,\"qpn\":%u,\"rank_sends\":%u,"
			       "\"late_us\":%llu,\"call_us\":%llu,\"typical_us\":%llu,\"retx\":%llu,\"pkts\":%llu}\n",
			       s, sleep_ms > 0 ? (int)lr : -1, mrc_coll_straggler_cause_name(rec.cause),
			       rec.rank, rec.host, rec.peer_rank, rec.peer_host, rec.plane, rec.qpn, rec.rank_sends,
			       (unsigned long long)rec.late_us, (unsigned long long)rec.call_us,
			       (unsigned long long)rec.typical_us, (unsigned long long)rec.retx,
			       (unsigned long long)rec.pkts);
		fflush(stdout);
	}
	if (r)
		fprintf(stderr, "rank %u: %s\n", me, strerror(-r));
	free(in);
	free(out);
	mrc_coll_destroy(c);
	return r ? 1 : 0;
}
