/* mrcd core: the loop, observers, QP completion owners, busy polling with
 * doorbells, and the accessors of mrcd.h (the log and clock: log.c). */
#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>

#include "common/sched_slice.h"
#include "daemon/core/core.h"

/* ---- observers ---------------------------------------------------------- */

int mrcd_observer_add(struct mrcd *d, const struct mrcd_observer *o)
{
	if (d->nobs == MRCD_MAX_OBSERVERS)
		return -ENOSPC;
	d->obs[d->nobs++] = *o;
	return 0;
}

void mrcd_observer_del(struct mrcd *d, void *arg)
{
	uint32_t n = 0;
	for (uint32_t i = 0; i < d->nobs; i++)
		if (d->obs[i].arg != arg)
			d->obs[n++] = d->obs[i];
	d->nobs = n;
}

/* Handed to the observers (the operator event stream), logged when none
 * takes notes. */
void mrcd_note(struct mrcd *d, const char *kind, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	int taken = 0;
	for (uint32_t i = 0; i < d->nobs; i++)
		if (d->obs[i].note) {
			d->obs[i].note(d->obs[i].arg, kind, msg);
			taken = 1;
		}
	if (!taken)
		mrcd_log(MRCD_LOG_NOTICE, "%s", msg);
}

void mrcd_observe_event(struct mrcd *d, const struct mrce_event *ev, int *taken)
{
	*taken = 0;
	for (uint32_t i = 0; i < d->nobs; i++)
		if (d->obs[i].event) {
			d->obs[i].event(d->obs[i].arg, ev);
			*taken = 1;
		}
}

struct ev_loop *mrcd_loop(struct mrcd *d) { return d->loop; }
struct mrce *mrcd_engine(struct mrcd *d) { return d->eng; }
struct mrc_dp *mrcd_datapath(struct mrcd *d) { return d->dp; }
uint32_t mrcd_self_host(const struct mrcd *d) { return d->self; }
uint32_t mrcd_n_hosts(const struct mrcd *d) { return d->nhosts; }
uint32_t mrcd_n_planes(const struct mrcd *d) { return d->nplanes; }
const struct mrc_topo *mrcd_topology(const struct mrcd *d) { return d->topo; }

int mrcd_qp_bind(struct mrcd *d, uint32_t qpn, mrcd_wc_fn fn, void *ctx)
{
	struct mrcd_qpb *b = &d->qpb[qpn & 0xffff];
	if (b->fn && b->qpn != qpn)
		return -EBUSY;
	*b = (struct mrcd_qpb){ .qpn = qpn, .fn = fn, .ctx = ctx };
	return 0;
}

void mrcd_qp_unbind(struct mrcd *d, uint32_t qpn)
{
	struct mrcd_qpb *b = &d->qpb[qpn & 0xffff];
	if (b->qpn == qpn)
		memset(b, 0, sizeof(*b));
}

/* ---- busy polling ------------------------------------------------------- */

int mrcd_poller_add(struct mrcd *d, const struct mrcd_poller *p)
{
	if (d->npollers == MRCD_MAX_POLLERS)
		return -ENOSPC;
	d->pollers[d->npollers++] = *p;
	mrcd_kick(d);
	return 0;
}

void mrcd_poller_del(struct mrcd *d, void *ctx)
{
	for (uint32_t i = 0; i < d->npollers;)
		if (d->pollers[i].ctx == ctx)
			d->pollers[i] = d->pollers[--d->npollers];
		else
			i++;
}

struct mrcd_ring_stats *mrcd_ring_stats(struct mrcd *d) { return &d->rst; }

void mrcd_kick(struct mrcd *d)
{
	if (!ev_is_active(&d->idle))
		ev_idle_start(d->loop, &d->idle);
}

/* One round of the pollers and the send of what they posted. */
static int poll_round(struct mrcd *d)
{
	int work = 0;
	d->rst.poll_rounds++;
	for (uint32_t i = 0; i < d->npollers; i++)
		work += d->pollers[i].poll(d->pollers[i].ctx) > 0;
	mrcd_flush(d);
	return work;
}

void mrcd_poll_now(struct mrcd *d)
{
	if (poll_round(d))
		d->last_work_ns = mrcd_now();
	mrcd_kick(d);
}

/* Runs while there is work: each poller polls its active rings (not every
 * ring: idle ones are armed or parked and cost nothing here), then the
 * engine's output is sent.  When a full round finds nothing, the pollers
 * arm their doorbells or park their polled rings and the loop sleeps
 * until a doorbell, the parked-ring timer, a datagram or a timer wakes
 * it.  A poller keeps the loop busy (arm > 0) while it has a polled ring
 * that has not been idle long enough to park (gpu_park_us). */
static void on_idle(struct ev_loop *loop, ev_idle *w, int revents)
{
	struct mrcd *d = w->data;
	(void)revents;
	mrcd__urgent_arm(d, mrcd_now());
	int work = poll_round(d);
	/* With busy_poll_us, stay busy that long after the last work, so
	 * back-to-back posts and a peer's quick reply do not each pay a
	 * wake-up (~10-20 us).  Worth it only where the daemon does not take
	 * the core its clients need: on 2 shared cores a spinning daemon
	 * waits for the scheduler instead (ms), hence auto (below). */
	uint64_t now = mrcd_now();
	if (work) {
		d->last_work_ns = now;
		return;
	}
	if (now - d->last_work_ns < d->busy_poll_ns)
		return;
	for (uint32_t i = 0; i < d->npollers; i++)
		work += d->pollers[i].arm(d->pollers[i].ctx) > 0;
	if (!work)
		ev_idle_stop(loop, w);
}

/* The CPUs mrcd may run on (its affinity: systemd's CPUAffinity=, taskset),
 * not the machine's. */
static unsigned cpus_to_run_on(void)
{
	cpu_set_t set;
	if (sched_getaffinity(0, sizeof(set), &set))
		return 1;
	return (unsigned)CPU_COUNT(&set);
}

static void busy_poll_init(struct mrcd *d)
{
	unsigned ncpus = cpus_to_run_on();
	uint32_t us = mrcd_cfg_busy_poll_us(&d->cfg, ncpus);
	d->busy_poll_ns = (uint64_t)us * 1000;
	if (d->cfg.busy_poll_us == MRCD_CFG_AUTO)
		mrcd_log(MRCD_LOG_INFO, "busy_poll_us=auto: %u us (%u CPU%s to run on%s)", us, ncpus, ncpus == 1 ? "" : "s",
			 us ? "" : "; set busy_poll_us to poll anyway");
}

/* mrcd.conf sched_slice_us.  Under EEVDF (Linux 6.12+) a task that wakes
 * with a shorter slice than the running task's preempts it; on the
 * default slice (0.7 ms x (1 + log2 CPUs)) a post or a datagram waking
 * mrcd on a shared CPU can wait out the slice of whatever runs there
 * (docs/step.md "Urgent dispatch", "The scheduler slice": no difference
 * measured on the loaded 2-CPU VM, hence off by default).  The share of
 * CPU is the nice value's, not the slice's.  Older kernels take
 * sched_runtime and ignore it. */
static void slice_init(struct mrcd *d)
{
	if (!d->cfg.sched_slice_us)
		return;
	int rc = mrc__sched_slice_set(d->cfg.sched_slice_us);
	d->slice_set = !rc;
	if (rc)
		mrcd_log(MRCD_LOG_NOTICE, "sched_slice_us=%u not applied: %s", d->cfg.sched_slice_us, strerror(-rc));
}

int mrcd_core_init(struct mrcd *d, char *err, size_t errlen)
{
	d->loop = ev_default_loop(EVFLAG_AUTO);
	if (!d->loop) {
		snprintf(err, errlen, "libev: no usable event backend");
		return -ENOSYS;
	}
	d->started_ns = mrcd_now();
	busy_poll_init(d);
	slice_init(d);
	d->urgent_ns = (uint64_t)d->cfg.urgent_turn_us * 1000;
	ev_idle_init(&d->idle, on_idle);
	d->idle.data = d;
	int rc = mrcd_node_init(d, err, errlen);
	if (!rc && (rc = mrcd_cm_init(d)))
		snprintf(err, errlen, "connection manager: %s", strerror(-rc));
	if (!rc && (rc = mrcd_linkmon_start(d)))
		snprintf(err, errlen, "link monitor: %s", strerror(-rc));
	return rc;
}

int mrcd_core_new(const struct mrcd_cfg *cfg, struct mrcd **out, char *err, size_t errlen)
{
	struct mrcd *d = calloc(1, sizeof(*d));
	if (!d) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	d->cfg = *cfg;
	int rc = mrcd_core_init(d, err, errlen);
	if (rc) {
		mrcd_core_free(d);
		return rc;
	}
	*out = d;
	return 0;
}

void mrcd_core_free(struct mrcd *d)
{
	if (!d)
		return;
	mrcd_core_fini(d);
	free(d);
}

void mrcd_core_fini(struct mrcd *d)
{
	/* An idle watcher left active outlives its loop's destruction in
	 * libev's count (idleall): every later ev_run on a new default loop
	 * would then poll without waiting (test_loop_order's rigs). */
	if (d->loop)
		ev_idle_stop(d->loop, &d->idle);
	mrcd_cm_fini(d);
	mrcd_node_fini(d);
	/* The thread goes on (a test's next core, an embedding process). */
	if (d->slice_set && !mrc__sched_slice_set(0))
		d->slice_set = 0;
}
