/* mrc-step's workload pieces that do not communicate, shared by the
 * libmrc-coll step (run.c) and the Open MPI one (mpi.c) so the two run
 * the same step: the compute stub, the routing, the buckets, the staging
 * reads and the fault pause.  libc only. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/prng.h"
#include "tools/step/step.h"

/* Spins t us (stub=sleep: sleeps, the CPU free as while a GPU computes;
 * for a machine with fewer cores than ranks and daemons), calling poll
 * every tick.  The polls' time is not compute (the stub runs t besides
 * it: a kernel is not done sooner because the CPU posted chunks), so the
 * exposed time includes what they cost. */
int mrc__step_stub(const struct step_par *p, double t_us, int (*poll)(void *), void *arg)
{
	double now = mrc__mono_s(), end = now + t_us * 1e-6, tick = p->tick_us * 1e-6;
	while (now < end) {
		double next = now + tick;
		if (p->sleep) {
			double d = (next < end ? next : end) - now;
			struct timespec ts = { (time_t)d, (long)((d - (time_t)d) * 1e9) };
			nanosleep(&ts, NULL);   /* the stub itself, not a synchronisation */
		}
		while ((now = mrc__mono_s()) < next && now < end)
			;
		double t1 = now;
		int r = poll ? poll(arg) : 0;
		if (r)
			return r;
		now = mrc__mono_s();
		end += now - t1;
	}
	return 0;
}

static double normal(struct mrc_rng *g)
{
	double u = mrc_rng_unit(g), v = mrc_rng_unit(g);
	return sqrt(-2 * log(u > 0 ? u : 1e-300)) * cos(2 * M_PI * v);
}

/* Step `step`'s routing over E = n experts (one per rank, as mrcsim's):
 * popularity exp(skew x N(0,1)), the same on every rank (seeded by the
 * step), each token's top-k distinct experts drawn by it (seeded by step
 * and rank); weights 1/topk. */
void mrc__step_route(const struct step_par *p, uint32_t n, uint32_t me, uint64_t step,
		     int32_t *idx, float *w)
{
	double pop[MRC_STEP_MAX_RANKS], sum = 0;
	struct mrc_rng g;
	uint64_t seed = p->seed * 0x9e3779b97f4a7c15ull + step;
	mrc_rng_seed(&g, seed);
	for (uint32_t e = 0; e < n; e++)
		sum += pop[e] = exp(p->skew * normal(&g));
	mrc_rng_seed(&g, seed ^ ((uint64_t)me << 40));
	for (size_t t = 0; t < p->tokens; t++)
		for (uint32_t k = 0; k < p->topk; k++) {
			int32_t e;
			int dup;
			do {
				double u = mrc_rng_unit(&g) * sum, a = 0;
				for (e = 0; e < (int32_t)n - 1 && (a += pop[e]) < u; e++)
					;
				dup = 0;
				for (uint32_t j = 0; j < k; j++)
					dup |= idx[t * p->topk + j] == e;
			} while (dup);
			idx[t * p->topk + k] = e;
			w[t * p->topk + k] = 1.0f / (float)p->topk;
		}
}

/* Buckets as the backward pass fills them: grad bytes per layer
 * (float32), a bucket closing when it holds `bucket` bytes or at layer 0,
 * its count rounded up to a multiple of n (the reduce-scatter's blocks).
 * cnt and close_at hold p->layers entries; returns how many buckets. */
size_t mrc__step_buckets(const struct step_par *p, uint32_t n, size_t *cnt, uint32_t *close_at)
{
	size_t open = 0, nb = 0;
	for (uint32_t l = p->layers; l-- > 0 && p->grad;) {
		open += p->grad / 4;
		if (open * 4 >= p->bucket || l == 0) {
			cnt[nb] = (open + n - 1) / n * n;
			close_at[nb++] = l;
			open = 0;
		}
	}
	return nb;
}

int mrc__step_stage_open(const struct step_par *p, struct step_stage *s)
{
	*s = (struct step_stage){ .fd = -1 };
	if (!p->stage)
		return 0;
	if (!(s->buf = malloc(p->stage)))
		return -ENOMEM;
	if (p->stage_file) {
		struct stat sb;
		s->fd = open(p->stage_file, O_RDONLY | O_CLOEXEC);
		if (s->fd < 0 || fstat(s->fd, &sb) || sb.st_size <= 0)
			return s->fd < 0 ? -errno : -EINVAL;
		s->size = (uint64_t)sb.st_size;
		return 0;
	}
	/* A scratch file of one batch: the page cache's read rate. */
	char tmpl[] = "/tmp/mrc-step.XXXXXX";
	if ((s->fd = mkstemp(tmpl)) < 0)
		return -errno;
	unlink(tmpl);
	memset(s->buf, 0x5a, p->stage);
	if (write(s->fd, s->buf, p->stage) != (ssize_t)p->stage)
		return -EIO;
	s->size = p->stage;
	return 0;
}

int mrc__step_stage_read(const struct step_par *p, struct step_stage *s)
{
	for (uint64_t got = 0; got < p->stage;) {
		if (s->off >= s->size)
			s->off = 0;
		uint64_t want = p->stage - got, left = s->size - s->off;
		ssize_t k = pread(s->fd, s->buf + got, want < left ? want : left, (off_t)s->off);
		if (k <= 0)
			return k ? -errno : -EIO;
		got += (uint64_t)k, s->off += (uint64_t)k;
	}
	return 0;
}

void mrc__step_stage_close(struct step_stage *s)
{
	free(s->buf);
	if (s->fd >= 0)
		close(s->fd);
}

/* Before step fault_step of the first run, rank 0 says so and waits
 * (bounded) for the fault file: the script has injected the fault.  The
 * other ranks wait in the step's barrier. */
int mrc__step_fault_wait(const struct step_par *p, uint32_t rank, uint32_t run)
{
	if (rank != 0)
		return 0;
	printf("# mrc-step: at step %u of run %u\n", p->fault_step, run);
	fflush(stdout);
	struct stat sb;
	for (int64_t end = mrc__mono_ms() + 20000; stat(p->fault_file, &sb);) {
		if (mrc__mono_ms() > end)
			return -ETIMEDOUT;
		nanosleep(&(struct timespec){ 0, 1000000 }, NULL);   /* an outside event: polled */
	}
	return 0;
}
