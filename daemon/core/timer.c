/* The engine's timer (docs/client.md "The engine timer"): one deadline,
 * mrce_next_deadline, on a timerfd watched by an ev_io, or on libev's
 * ev_timer where there is no timerfd (engine_timerfd = 0, or the call
 * fails).  libev's epoll backend waits whole milliseconds (its
 * backend_mintime is 1 ms and it rounds a wait up to the next ms), so an
 * ev_timer due in 32 us on a sleeping daemon fires ~1 ms late; the kernel
 * wakes a timerfd's epoll wait when its hrtimer expires. */
#include <errno.h>
#include <string.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "daemon/core/node.h"

/* A deadline that moves later while the timerfd is armed for one further
 * away than this is left armed for the earlier time: it fires early, finds
 * nothing due and is armed again then (timer_early).  A bulk transfer moves
 * its RTO later on every flush; this keeps it from costing a system call
 * per loop turn.  Nearer deadlines (held ACKs, TLP, RACK) are re-armed at
 * once: an early wake-up costs more than the call. */
#define TIMER_LAZY_NS 1000000ull

/* Bucket upper edges (us) of daemon.timer_late_us (mrcd.h). */
static const uint32_t late_edge_us[MRCD_TIMER_LATE_BUCKETS - 1] = {
	10, 50, 100, 250, 500, 1000, 2000
};

static void timer_late(struct mrcd *d, uint64_t now, uint64_t dl)
{
	uint64_t late = now > dl ? now - dl : 0;
	unsigned b = 0;
	while (b < MRCD_TIMER_LATE_BUCKETS - 1 && late >= (uint64_t)late_edge_us[b] * 1000)
		b++;
	d->st.timer_late[b]++;
	d->st.timer_fires++;
}

/* The deadline, when the timer went off.  Returns 0 when it was early (a
 * deadline moved later, TIMER_LAZY_NS): nothing to run. */
static int timer_due(struct mrcd *d)
{
	uint64_t now = mrcd_now(), dl = mrce_next_deadline(d->eng);
	if (dl > now) {
		d->st.timer_early++;
		return 0;
	}
	timer_late(d, now, dl);
	return 1;
}

/* Datagrams that arrived before the deadline were already taken in this
 * loop turn: the socket watchers run first (MRCD_PRI_RX), and their flush
 * re-armed this timer past the deadline when the ACKs they carried made it
 * so (daemon.timer_superseded); it runs only when the deadline holds after
 * them.  Poll-mode planes have no watcher: they are polled here first (no
 * system call; a no-op for socket planes). */
static void timer_run(struct mrcd *d)
{
	if (!timer_due(d)) {
		mrcd_timer_arm(d);
		return;
	}
	mrcd__dp_poll(d);
	mrce_tick(d->eng, mrcd_now());
	mrcd_flush(d);
}

static void on_timer(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)revents;
	timer_run(w->data);
}

static void on_timerfd(struct ev_loop *loop, ev_io *w, int revents)
{
	struct mrcd *d = w->data;
	uint64_t n;
	(void)loop;
	(void)revents;
	/* Drained, or the level-triggered fd wakes every wait.  Expired: the
	 * timerfd is disarmed (one-shot), which timer_dl must say. */
	if (read(d->timer_fd, &n, sizeof(n)) == (ssize_t)sizeof(n))
		d->timer_dl = UINT64_MAX;
	timer_run(d);   /* else re-armed since epoll saw it: not due (early) */
}

void mrcd_timer_init(struct mrcd *d)
{
	ev_init(&d->timer, on_timer);
	d->timer.data = d;
	d->timer_dl = UINT64_MAX;
	d->timer_fd = -1;
	if (!d->cfg.engine_timerfd)
		return;
	d->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (d->timer_fd < 0) {
		mrcd_log(MRCD_LOG_WARNING, "engine timer: no timerfd (%s): libev's timer, "
			 "to the millisecond when idle", strerror(errno));
		return;
	}
	/* The ev_timer's priority (0): below the datagram watchers. */
	ev_io_init(&d->timer_io, on_timerfd, d->timer_fd, EV_READ);
	d->timer_io.data = d;
	ev_io_start(d->loop, &d->timer_io);
}

void mrcd_timer_fini(struct mrcd *d)
{
	if (!d->loop)
		return;
	ev_timer_stop(d->loop, &d->timer);
	/* Active, not timer_fd >= 0: a core whose init stopped before the
	 * timer's has timer_fd 0 (calloc). */
	if (ev_is_active(&d->timer_io)) {
		ev_io_stop(d->loop, &d->timer_io);
		close(d->timer_fd);
		d->timer_fd = -1;
	}
}

/* dl on the timerfd, absolute (mrcd_now is CLOCK_MONOTONIC): one system
 * call.  A deadline already behind the clock expires at once; 0 would
 * disarm, hence 1. */
static void timerfd_arm(struct mrcd *d, uint64_t dl)
{
	struct itimerspec its;
	memset(&its, 0, sizeof(its));
	if (dl != UINT64_MAX) {
		dl = dl ? dl : 1;
		its.it_value.tv_sec = (time_t)(dl / 1000000000ull);
		its.it_value.tv_nsec = (long)(dl % 1000000000ull);
	}
	d->st.timer_rearms++;
	if (timerfd_settime(d->timer_fd, TFD_TIMER_ABSTIME, &its, NULL) == 0) {
		d->timer_dl = dl;
		return;
	}
	/* Cannot happen with a valid fd and time; never lose the deadline. */
	mrcd_log(MRCD_LOG_WARNING, "engine timer: timerfd_settime: %s: libev's timer from now",
		 strerror(errno));
	ev_io_stop(d->loop, &d->timer_io);
	close(d->timer_fd);
	d->timer_fd = -1;
	d->timer_dl = UINT64_MAX;
	mrcd_timer_arm(d);
}

static void ev_timer_arm(struct mrcd *d, uint64_t dl)
{
	if (ev_is_pending(&d->timer)) {
		/* Due in this loop turn and not run yet: when the deadline still
		 * holds it stays pending, to run after the watchers still pending
		 * above it, in this turn; re-armed with 0 s it would wait for the
		 * next, and a datagram in every turn would put the tick off
		 * indefinitely. */
		if (dl <= mrcd_now())
			return;
		d->st.timer_superseded++;
	} else if (dl == d->timer_dl && (dl == UINT64_MAX || ev_is_active(&d->timer))) {
		return;   /* armed for that deadline already */
	}
	ev_timer_stop(d->loop, &d->timer);
	d->timer_dl = dl;
	if (dl != UINT64_MAX) {
		/* libev counts from the loop turn's start: bring it to now, or
		 * the timer fires early by what this turn has taken so far and
		 * wakes the loop for a tick with nothing due. */
		ev_now_update(d->loop);
		uint64_t now = mrcd_now();
		double s = dl > now ? (double)(dl - now) / 1e9 : 0.0;
		ev_timer_set(&d->timer, s, 0.0);
		ev_timer_start(d->loop, &d->timer);
	}
}

void mrcd_timer_arm(struct mrcd *d)
{
	uint64_t dl = mrce_next_deadline(d->eng);
	if (d->timer_fd < 0) {
		ev_timer_arm(d, dl);
		return;
	}
	if (ev_is_pending(&d->timer_io)) {
		/* As ev_timer_arm: a due deadline runs in this turn; one the
		 * datagrams moved is no longer due (re-arming resets the
		 * timerfd's expiry count, so it is not readable either). */
		if (dl <= mrcd_now())
			return;
		d->st.timer_superseded++;
		ev_clear_pending(d->loop, &d->timer_io);
	} else if (dl == d->timer_dl) {
		return;   /* armed for that deadline already: no system call */
	} else if (dl > d->timer_dl && d->timer_dl > mrcd_now() + TIMER_LAZY_NS) {
		return;   /* later, and the armed time is far: fires early */
	}
	timerfd_arm(d, dl);
}
