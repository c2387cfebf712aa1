/* Requests: the non-blocking collectives and MoE calls (mrc/coll.h,
 * "Non-blocking calls"; docs/coll.md).  Every call, blocking or not, is a
 * request queued on its communicator in the order it was started; the
 * head runs, and when it completes the next one starts at once.  A
 * blocking call is its start and a wait.
 *
 * Why only the head: the k-th chunk from rank a to rank b is matched with
 * the k-th receive of b from a (coll_int.h), so every rank must run the
 * same schedules in the same order; and as in NCCL (one stream) and MPI
 * (collectives in call order), the calls of one communicator run one
 * after the other.  What runs in parallel is the caller's compute: the
 * chunks in flight move (mrcd places them) while the caller computes, and
 * each mrc_coll_test posts what has become ready.
 *
 * Calls in several stages with host work between them (the 2-D
 * all-to-allv, MoE dispatch and combine) run their unchanged blocking
 * code as a body on a stack of its own (a ucontext coroutine): each
 * collective it calls becomes the request's next stage, and the body
 * steps out until that stage is done. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include "coll/coll_int.h"
#include "coll/devmem.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#define CO_ASAN 1
#endif
#if defined(__SANITIZE_THREAD__)
#include <sanitizer/tsan_interface.h>
#define CO_TSAN 1
#endif

/* A body's stack: the MoE code's arrays on the stack are per rank or per
 * expert, far below this. */
#define CO_STACK (1u << 20)

enum { RQ_QUEUED, RQ_DONE };

struct mrc_coll_req {
	struct mrc_coll *c;
	struct mrc_coll_req *next;
	int state, result;
	/* A schedule's request: the schedule and its run. */
	int has_s;
	struct mrc__coll_sched s;
	const void *in;
	void *out;
	int dtype, op;
	struct mrc__coll_exec x;
	int x_on;                  /* x runs (the schedule's, or the body's stage) */
	int stage_rc;              /* the body's last stage: 0 or -errno */
	/* A body's request. */
	int (*body)(struct mrc_coll *, void *);
	void *arg;
	ucontext_t co, back;
	uint8_t *stack;            /* mmap'd, one guard page below */
	int co_started, co_done;
#ifdef CO_TSAN
	void *fiber, *main_fiber;
#endif
#ifdef CO_ASAN
	void *fake;
	const void *back_bottom;
	size_t back_size;
#endif
};

/* ---- coroutines ------------------------------------------------------- */

static size_t page(void)
{
	long p = sysconf(_SC_PAGESIZE);
	return p > 0 ? (size_t)p : 4096;
}

static uint8_t *stack_get(struct mrc_coll *c)
{
	if (c->co_stack) {
		uint8_t *s = c->co_stack;
		c->co_stack = NULL;
		return s;
	}
	size_t g = page();
	uint8_t *m = mmap(NULL, CO_STACK + g, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			  -1, 0);
	if (m == MAP_FAILED)
		return NULL;
	mprotect(m, g, PROT_NONE);   /* an overflow faults, not corrupts */
	return m + g;
}

static void stack_put(struct mrc_coll *c, uint8_t *s)
{
	if (!s)
		return;
	if (!c->co_stack) {
		c->co_stack = s;
		return;
	}
	munmap(s - page(), CO_STACK + page());
}

void mrc__coll_stack_free(struct mrc_coll *c)
{
	if (c->co_stack)
		munmap((uint8_t *)c->co_stack - page(), CO_STACK + page());
	c->co_stack = NULL;
}

/* Out of the body to whoever entered it; returns when entered again
 * (last: never). */
static void co_leave(struct mrc_coll_req *q, int last)
{
#ifdef CO_ASAN
	__sanitizer_start_switch_fiber(last ? NULL : &q->fake, q->back_bottom, q->back_size);
#endif
#ifdef CO_TSAN
	__tsan_switch_to_fiber(q->main_fiber, 0);
#endif
	(void)last;
	swapcontext(&q->co, &q->back);
#ifdef CO_ASAN
	__sanitizer_finish_switch_fiber(q->fake, &q->back_bottom, &q->back_size);
#endif
}

static void co_main(unsigned lo, unsigned hi)
{
	struct mrc_coll_req *q = (struct mrc_coll_req *)(((uintptr_t)hi << 32) | lo);
#ifdef CO_ASAN
	__sanitizer_finish_switch_fiber(NULL, &q->back_bottom, &q->back_size);
#endif
	q->result = q->body(q->c, q->arg);
	q->co_done = 1;
	co_leave(q, 1);
}

/* Into the body, until it waits on a stage or returns. */
static int co_enter(struct mrc_coll *c, struct mrc_coll_req *q)
{
	if (!q->co_started) {
		q->stack = stack_get(c);
		if (!q->stack || getcontext(&q->co))
			return -ENOMEM;
		q->co.uc_stack.ss_sp = q->stack;
		q->co.uc_stack.ss_size = CO_STACK;
		q->co.uc_link = NULL;   /* co_main never returns */
		uintptr_t a = (uintptr_t)q;
		makecontext(&q->co, (void (*)(void))co_main, 2, (unsigned)(a & 0xffffffffu),
			    (unsigned)(a >> 32));
#ifdef CO_TSAN
		q->fiber = __tsan_create_fiber(0);
#endif
		q->co_started = 1;
	}
	c->co_cur = q;
#ifdef CO_ASAN
	void *fake = NULL;
	__sanitizer_start_switch_fiber(&fake, q->stack, CO_STACK);
#endif
#ifdef CO_TSAN
	q->main_fiber = __tsan_get_current_fiber();
	__tsan_switch_to_fiber(q->fiber, 0);
#endif
	swapcontext(&q->back, &q->co);
#ifdef CO_ASAN
	__sanitizer_finish_switch_fiber(fake, NULL, NULL);
#endif
	c->co_cur = NULL;
	return 0;
}

/* ---- the queue ---------------------------------------------------------- */

/* The head is complete: off the queue, its resources back. */
static void finish(struct mrc_coll *c, struct mrc_coll_req *q, int result)
{
	c->head = q->next;
	if (!c->head)
		c->tail = NULL;
	c->inflight--;
	c->req_done++;
	if (q->x_on)
		mrc__coll_exec_end(c, &q->x);
	if (q->has_s)
		mrc__coll_sched_free(&q->s);
	if (q->body) {
		stack_put(c, q->stack);
#ifdef CO_TSAN
		if (q->fiber)
			__tsan_destroy_fiber(q->fiber);
#endif
		free(q->arg);
		if (!q->co_done)
			q->result = result;
	} else {
		q->result = result;
	}
	q->state = RQ_DONE;
}

/* Moves request q (the head) on: 1 when it is complete (q->result),
 * 0 when it waits, or the error of a stage (the communicator is then
 * aborted: the ranks would be out of step). */
static int step(struct mrc_coll *c, struct mrc_coll_req *q, int *prog, int *shm)
{
	for (;;) {
		if (!q->x_on) {
			int r;
			if (q->has_s) {
				if ((r = mrc__coll_exec_start(c, &q->x, &q->s, q->in, q->out, q->dtype,
							      q->op)))
					return mrc__coll_fail(c, r);
				q->x_on = 1;
			} else {
				if ((r = co_enter(c, q)))
					return mrc__coll_fail(c, r);
				if (q->co_done)
					return 1;
				if (!q->x_on)   /* a body leaves only to wait on a stage */
					return mrc__coll_fail(c, -EPROTO);
			}
		}
		int k = mrc__coll_exec_step(c, &q->x);
		*prog += q->x.prog > 0 ? q->x.prog : 0;
		*shm |= q->x.shm;
		if (k == 0)
			return 0;
		mrc__coll_exec_end(c, &q->x);
		q->x_on = 0;
		if (q->has_s)
			return k < 0 ? k : 1;
		q->stage_rc = k < 0 ? k : 0;   /* into the body with the stage's outcome */
	}
}

/* Every queued request complete with err, in order (a started body runs
 * on, its collectives failing at once, so that it frees what it holds). */
static void fail_all(struct mrc_coll *c, int err)
{
	/* Sticky first: a resumed body's further collectives must fail at
	 * their start, not wait for a stage that would never run. */
	mrc__coll_fail(c, err);
	while (c->head) {
		struct mrc_coll_req *q = c->head;
		if (q->x_on) {
			mrc__coll_exec_end(c, &q->x);
			q->x_on = 0;
		}
		if (q->body && q->co_started && !q->co_done) {
			q->stage_rc = err;
			co_enter(c, q);   /* every further stage fails at its start */
		}
		finish(c, q, err);
	}
}

/* Moves the queue on: the head, then each next one as the one before
 * completes.  Steps that moved (> 0), 0, or the communicator's error
 * (every queued request is then complete with it).  *shm: the head waits
 * on a shared-memory ring. */
static int advance(struct mrc_coll *c, int *shm)
{
	int prog = 0;
	*shm = 0;
	while (c->head) {
		struct mrc_coll_req *q = c->head;
		int r = c->err ? c->err : step(c, q, &prog, shm);
		if (r == 0)
			return prog;
		if (r < 0 || c->err) {
			fail_all(c, c->err ? c->err : r);
			return c->err ? c->err : r;
		}
		finish(c, q, 0);
		prog++;
	}
	return c->err ? c->err : prog;
}

static void enqueue(struct mrc_coll *c, struct mrc_coll_req *q)
{
	if (!c->head)
		mrc__coll_idle_reset(c);   /* the no-progress clock starts now */
	if (c->tail)
		c->tail->next = q;
	else
		c->head = q;
	c->tail = q;
	c->inflight++;
	c->req_started++;
}

/* Frees q (complete) and returns its result. */
static int reap(struct mrc_coll_req *q)
{
	int r = q->result;
	free(q);
	return r;
}

static int wait_done(struct mrc_coll *c, struct mrc_coll_req *q)
{
	while (q->state != RQ_DONE) {
		int shm, p = advance(c, &shm);
		if (q->state == RQ_DONE)
			break;
		if (mrc__coll_idle(c, p > 0, shm))
			advance(c, &shm);   /* -ETIMEDOUT: every request complete with it */
	}
	return reap(q);
}

/* Room for one more (a blocking call waits for it; a non-blocking one is
 * told -EAGAIN). */
static int room(struct mrc_coll *c, int wait)
{
	while (c->inflight >= c->max_inflight) {
		if (!wait)
			return -EAGAIN;
		int shm, p = advance(c, &shm);
		if (p < 0)
			return p;
		if (c->inflight < c->max_inflight)
			break;
		int r = mrc__coll_idle(c, p > 0, shm);
		if (r)
			return r;
	}
	return 0;
}

static struct mrc_coll_req *req_new(struct mrc_coll *c)
{
	struct mrc_coll_req *q = calloc(1, sizeof(*q));
	if (q)
		q->c = c;
	return q;
}

int mrc__coll_submit(struct mrc_coll *c, struct mrc__coll_sched *s, const void *in, void *out,
		     int dtype, int op, struct mrc_coll_req **reqp)
{
	int r = c->err;
	if (r) {
		mrc__coll_sched_free(s);
		return r;
	}
	struct mrc_coll_req *b = c->co_cur;
	if (b && !reqp) {
		/* Inside a body: the schedule is its request's next stage. */
		if ((r = mrc__coll_exec_start(c, &b->x, s, in, out, dtype, op))) {
			mrc__coll_sched_free(s);
			return mrc__coll_fail(c, r);
		}
		b->x_on = 1;
		co_leave(b, 0);   /* back when the stage is done */
		mrc__coll_sched_free(s);
		return b->stage_rc;
	}
	/* Buffers on two sides are refused now, before anything is queued. */
	if ((r = mrc__coll_pick(c, in, out)) || (r = room(c, !reqp))) {
		mrc__coll_sched_free(s);
		return r;
	}
	struct mrc_coll_req *q = req_new(c);
	if (!q) {
		mrc__coll_sched_free(s);
		return -ENOMEM;
	}
	q->has_s = 1;
	q->s = *s;
	*s = (struct mrc__coll_sched){ 0 };
	q->in = in, q->out = out, q->dtype = dtype, q->op = op;
	enqueue(c, q);
	if (reqp) {
		*reqp = q;
		int shm;
		advance(c, &shm);   /* the head starts now: its first chunks go */
		return 0;
	}
	return wait_done(c, q);
}

int mrc__coll_submit_body(struct mrc_coll *c, int (*body)(struct mrc_coll *, void *),
			  const void *arg, size_t argb, struct mrc_coll_req **reqp)
{
	if (c->err)
		return c->err;
	if (c->co_cur && !reqp) {
		/* Already in a body: the same stack. */
		void *a = malloc(argb ? argb : 1);
		if (!a)
			return -ENOMEM;
		if (argb)
			memcpy(a, arg, argb);
		int r = body(c, a);
		free(a);
		return r;
	}
	int r = room(c, !reqp);
	if (r)
		return r;
	struct mrc_coll_req *q = req_new(c);
	if (!q || !(q->arg = malloc(argb ? argb : 1))) {
		free(q);
		return -ENOMEM;
	}
	if (argb)
		memcpy(q->arg, arg, argb);
	q->body = body;
	enqueue(c, q);
	if (reqp) {
		*reqp = q;
		int shm;
		advance(c, &shm);
		return 0;
	}
	return wait_done(c, q);
}

void mrc__coll_req_drop(struct mrc_coll *c)
{
	if (!c->head)
		return;
	/* Calls still in flight cannot complete: the peers are told. */
	mrc__coll_fail(c, -ECANCELED);
	fail_all(c, -ECANCELED);
}

/* ---- the API ---------------------------------------------------------- */

int mrc_coll_test(struct mrc_coll_req *q)
{
	if (!q)
		return -EINVAL;
	if (q->state != RQ_DONE) {
		struct mrc_coll *c = q->c;
		if (c->co_cur)
			return -EDEADLK;   /* from inside a body: never */
		int shm, p = advance(c, &shm);
		if (q->state != RQ_DONE) {
			/* The waits' no-progress bound, without sleeping. */
			int64_t t = mrc__coll_now_ms();
			if (p > 0)
				c->idle.last = t;
			else if (t - c->idle.last > c->timeout_ms) {
				mrc__coll_fail(c, -ETIMEDOUT);
				advance(c, &shm);
			}
			if (q->state != RQ_DONE)
				return -EINPROGRESS;
		}
	}
	return reap(q);
}

int mrc_coll_wait(struct mrc_coll_req *q)
{
	if (!q)
		return -EINVAL;
	if (q->state != RQ_DONE && q->c->co_cur)
		return -EDEADLK;
	return q->state == RQ_DONE ? reap(q) : wait_done(q->c, q);
}

int mrc_coll_waitall(struct mrc_coll_req **reqs, size_t n)
{
	if (n && !reqs)
		return -EINVAL;
	int first = 0;
	for (size_t i = 0; i < n; i++) {
		if (!reqs[i])
			continue;
		int r = mrc_coll_wait(reqs[i]);
		reqs[i] = NULL;
		if (r && !first)
			first = r;
	}
	return first;
}

int mrc_coll_progress(struct mrc_coll *c)
{
	if (!c)
		return -EINVAL;
	if (c->co_cur)
		return -EDEADLK;
	int shm, p = advance(c, &shm);
	return p < 0 ? p : 0;
}

int mrc_coll_set_max_inflight(struct mrc_coll *c, uint32_t n)
{
	if (!c || n < 1 || n > MRC_COLL_MAX_INFLIGHT)
		return -EINVAL;
	c->max_inflight = n;
	return 0;
}

uint32_t mrc_coll_inflight(const struct mrc_coll *c)
{
	return c->inflight;
}
