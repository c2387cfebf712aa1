/* mrcd: a client's doorbells (docs/client.md "Doorbells"): the notify page
 * with one pending byte per QP, the SQ doorbell eventfd that says "a
 * pending byte is set" and the CQ doorbell eventfd the daemon rings for
 * an armed completion ring.  One of each per client, whatever its QP
 * count, so fds never bound the QPs and only QPs that were rung (or have
 * work) are looked at.  Also the parked-ring timer: polled (GPU-fed) QPs
 * have no producer that can write an eventfd, so while every polled ring
 * is parked a backing-off timer reads the summaries instead. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "common/trace.h"
#include "daemon/clients/clients_int.h"

static struct {
	struct mrcd *d;
	/* clients with polled QPs, and the timer that reads their summaries
	 * while the loop sleeps */
	struct mrcd_client *nlist;
	uint64_t tick_min_ns, tick_max_ns, tick_ns;
	int tfd;
	ev_io tick_io;
	int ticking;
	int floor_on;              /* config power_floor */
	double floor_hold;         /* config power_floor_hold_us, seconds */
} N = { .tfd = -1 };

/* ---- the notify page -------------------------------------------------- */

/* The daemon's side of the notify page (mrc/ring.h "Polled rings"): only
 * a set summary makes it look at the pending bytes, and only the QPs
 * whose byte is set are woken.  Everything in the page is the client's
 * to scribble on: any non-zero byte reads as set, a byte of a free slot
 * or of a QP that is not parked is cleared and counted as spurious. */
int mrcd__notify_scan(struct mrcd_client *c, uint64_t now)
{
	struct mrc_notify *n = c->notify;
	if (!n || !__atomic_load_n(&n->summary, __ATOMIC_RELAXED))
		return 0;
	__atomic_store_n(&n->summary, 0, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	struct mrcd_ring_stats *st = mrcd_ring_stats(c->d);
	int woke = 0;
	uint32_t slots = c->max_qps;
	/* Eight bytes at a time: pending[] is 8-aligned and padded. */
	for (uint32_t w = 0; w < (slots + 7) / 8; w++) {
		uint64_t v = __atomic_load_n((uint64_t *)(void *)&n->pending[8 * w], __ATOMIC_RELAXED);
		if (!v)
			continue;
		for (uint32_t i = 8 * w; i < 8 * w + 8; i++) {
			if (!__atomic_load_n(&n->pending[i], __ATOMIC_RELAXED))
				continue;
			__atomic_store_n(&n->pending[i], 0, __ATOMIC_RELAXED);
			__atomic_thread_fence(__ATOMIC_SEQ_CST);
			struct mrcd_cqp *q = i < slots ? c->slot_qp[i] : NULL;
			if (q && mrcd_cqp_unpark(q, now)) {
				st->notify_wakeups++;
				woke++;
			} else {
				st->notify_spurious++;
			}
		}
	}
	return woke;
}

/* The SQ doorbell: the client set pending bytes (and the summary) of QPs
 * it found asleep, then wrote this eventfd. */
static void on_sq_bell(struct ev_loop *loop, ev_io *w, int revents)
{
	struct mrcd_client *c = w->data;
	uint64_t v;
	(void)loop;
	(void)revents;
	if (read(c->sq_bell, &v, sizeof(v)) < 0 && errno != EAGAIN)
		mrcd_log(MRCD_LOG_DEBUG, "sq doorbell: %s", strerror(errno));
	MRC_TRACE(MRC_TR_D_SQBELL, c->id, 0, 0);
	if (mrcd__notify_scan(c, mrcd_now()))
		mrcd_poll_now(c->d);
}

void mrcd__cq_bell(struct mrcd_client *c)
{
	uint64_t one = 1;
	if (write(c->cq_bell, &one, sizeof(one)) < 0 && errno != EAGAIN)
		mrcd_log(MRCD_LOG_DEBUG, "cq doorbell: %s", strerror(errno));
	MRC_TRACE(MRC_TR_D_CQBELL, c->id, 0, 0);
}

/* ---- the power-floor hint (docs/power.md "Power floor") --------------- */

/* The word is a hint for the client's GPU side, written from the daemon's
 * own count (floor_busy): nothing the client stores in the page changes
 * what the daemon believes.  Release stores: a reader that sees the raise
 * count move sees the word that went with it. */
static void floor_store(struct mrcd_client *c, uint32_t up)
{
	if (up)
		__atomic_store_n(&c->notify->floor_raises, ++c->floor_raises, __ATOMIC_RELEASE);
	__atomic_store_n(&c->notify->power_floor, up, __ATOMIC_RELEASE);
}

static void on_floor_hold(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)revents;
	struct mrcd_client *c = w->data;
	if (!c->floor_busy)
		floor_store(c, 0);
}

void mrcd__floor_send(struct mrcd_cqp *q)
{
	struct mrcd_client *c = q->c;
	if (!N.floor_on)
		return;
	q->floor_sends++;
	if (c->floor_busy++)
		return;
	/* Work again within the hold: the word is still up, keep it. */
	if (ev_is_active(&c->floor_tm))
		ev_timer_stop(mrcd_loop(c->d), &c->floor_tm);
	else
		floor_store(c, 1);
}

static void floor_sub(struct mrcd_client *c, uint32_t n)
{
	c->floor_busy -= n;
	if (c->floor_busy)
		return;
	if (N.floor_hold <= 0.) {
		floor_store(c, 0);
		return;
	}
	ev_timer_set(&c->floor_tm, N.floor_hold, 0.);
	ev_timer_start(mrcd_loop(c->d), &c->floor_tm);
}

void mrcd__floor_done(struct mrcd_cqp *q)
{
	if (!q->floor_sends)
		return;       /* off: nothing was counted */
	q->floor_sends--;
	floor_sub(q->c, 1);
}

void mrcd__floor_forget(struct mrcd_cqp *q)
{
	if (!q->floor_sends)
		return;
	floor_sub(q->c, q->floor_sends);
	q->floor_sends = 0;
}

/* A sealed memfd of one struct mrc_notify with a pending byte per possible
 * QP (max_qps, rounded up to 8), and the two eventfds. */
int mrcd__notify_open(struct mrcd_client *c)
{
	uint32_t slots = (c->max_qps + 7) & ~7u;
	uint64_t pg = (uint64_t)sysconf(_SC_PAGESIZE);
	size_t len = (size_t)((sizeof(struct mrc_notify) + slots + pg - 1) & ~(pg - 1));
	c->slot_qp = calloc(c->max_qps, sizeof(*c->slot_qp));
	int fd = memfd_create("mrcd-notify", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	void *map = MAP_FAILED;
	c->sq_bell = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	c->cq_bell = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (!c->slot_qp || fd < 0 || c->sq_bell < 0 || c->cq_bell < 0 ||
	    ftruncate(fd, (off_t)len) < 0 ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0 ||
	    (map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED) {
		int r = c->slot_qp ? -errno : -ENOMEM;
		if (fd >= 0)
			close(fd);
		c->notify_fd = -1;
		mrcd__notify_close(c);
		return r;
	}
	c->notify = map;
	c->notify_len = len;
	c->notify_fd = fd;
	c->notify->magic = MRC_NOTIFY_MAGIC;
	c->notify->version = MRC_RING_VERSION;
	c->notify->slots = slots;
	ev_timer_init(&c->floor_tm, on_floor_hold, 0., 0.);
	c->floor_tm.data = c;
	ev_io_init(&c->bell_io, on_sq_bell, c->sq_bell, EV_READ);
	c->bell_io.data = c;
	ev_io_start(mrcd_loop(c->d), &c->bell_io);
	return 0;
}

void mrcd__notify_close(struct mrcd_client *c)
{
	if (c->notify) {
		ev_io_stop(mrcd_loop(c->d), &c->bell_io);
		ev_timer_stop(mrcd_loop(c->d), &c->floor_tm);
		munmap(c->notify, c->notify_len);
	}
	if (c->notify_fd >= 0)
		close(c->notify_fd);
	if (c->sq_bell >= 0)
		close(c->sq_bell);
	if (c->cq_bell >= 0)
		close(c->cq_bell);
	free(c->slot_qp);
	c->notify = NULL;
	c->slot_qp = NULL;
	c->notify_fd = c->sq_bell = c->cq_bell = -1;
}

/* The lowest free notify slot (nqp < max_qps: there is one).  Linear: it
 * runs once per CREATE_QP, a control request. */
uint32_t mrcd__slot_free(const struct mrcd_client *c)
{
	uint32_t i = 0;
	while (c->slot_qp[i])
		i++;
	return i;
}

/* A QP takes slot i (its byte cleared: a stale pending of the slot's
 * previous QP must not wake the new one); with its first polled QP the
 * client joins the list the timer reads. */
void mrcd__slot_take(struct mrcd_client *c, struct mrcd_cqp *q, uint32_t i)
{
	__atomic_store_n(&c->notify->pending[i], 0, __ATOMIC_RELAXED);
	c->slot_qp[i] = q;
	if (!(q->flags & MRC_CLI_QP_POLLED))
		return;
	if (c->npolled++ == 0) {
		c->nnext = N.nlist;
		N.nlist = c;
	}
	mrcd_ring_stats(c->d)->polled_qps++;
}

void mrcd__slot_put(struct mrcd_client *c, struct mrcd_cqp *q)
{
	c->slot_qp[q->notify_slot] = NULL;
	__atomic_store_n(&c->notify->pending[q->notify_slot], 0, __ATOMIC_RELAXED);
	if (!(q->flags & MRC_CLI_QP_POLLED))
		return;
	mrcd_ring_stats(c->d)->polled_qps--;
	if (--c->npolled)
		return;
	for (struct mrcd_client **p = &N.nlist; *p; p = &(*p)->nnext)
		if (*p == c) {
			*p = c->nnext;
			break;
		}
}

/* ---- the parked-ring timer -------------------------------------------- */

/* Periodic: at the longest interval (the steady idle state) a tick costs
 * the wake-up and one read, no re-arming. */
static void tick_arm(uint64_t ns)
{
	struct timespec t = { .tv_sec = (time_t)(ns / 1000000000u), .tv_nsec = (long)(ns % 1000000000u) };
	struct itimerspec it = { .it_interval = t, .it_value = t };
	if (timerfd_settime(N.tfd, 0, &it, NULL) < 0)
		mrcd_log(MRCD_LOG_WARNING, "parked-ring timer: %s", strerror(errno));
	N.ticking = 1;
	mrcd_ring_stats(N.d)->poll_interval_us = (uint32_t)(ns / 1000);
}

static void tick_stop(void)
{
	struct itimerspec it = { { 0, 0 }, { 0, 0 } };
	if (N.ticking)
		timerfd_settime(N.tfd, 0, &it, NULL);
	N.ticking = 0;
	mrcd_ring_stats(N.d)->poll_interval_us = 0;
}

/* While every polled ring is parked the loop sleeps, and this reads the
 * summaries of the clients with polled QPs, backing off from
 * gpu_poll_min_us to gpu_poll_max_us (the bound on pickup latency) while
 * nothing comes; a pickup makes the loop busy again and resets the
 * interval.  A timerfd rather than an ev_timer: libev's epoll backend
 * rounds sleeps up to whole milliseconds. */
static void on_tick(struct ev_loop *loop, ev_io *w, int revents)
{
	(void)loop;
	(void)w;
	(void)revents;
	uint64_t v;
	if (read(N.tfd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		mrcd_log(MRCD_LOG_DEBUG, "parked-ring timer: %s", strerror(errno));
	struct mrcd_ring_stats *st = mrcd_ring_stats(N.d);
	st->notify_ticks++;
	uint64_t now = mrcd_now();
	int woke = 0;
	for (struct mrcd_client *c = N.nlist; c; c = c->nnext)
		woke += mrcd__notify_scan(c, now);
	if (woke) {
		/* Busy again: the pollers read the summaries every round
		 * until everything parks and mrcd__tick_parked restarts it. */
		N.tick_ns = N.tick_min_ns;
		tick_stop();
		mrcd_kick(N.d);
		return;
	}
	if (!st->polled_parked) {
		tick_stop();
		return;
	}
	if (N.tick_ns < N.tick_max_ns) {
		N.tick_ns = N.tick_ns * 2 < N.tick_max_ns ? N.tick_ns * 2 : N.tick_max_ns;
		tick_arm(N.tick_ns);
	}
}

void mrcd__tick_parked(void)
{
	/* Parking resets the interval: the ring was busy a moment ago. */
	if (mrcd_ring_stats(N.d)->polled_parked && !N.ticking) {
		N.tick_ns = N.tick_min_ns;
		tick_arm(N.tick_ns);
	}
}

int mrcd__notify_start(struct mrcd *d, const struct mrcd_cfg *cfg, char *err, size_t errlen)
{
	memset(&N, 0, sizeof(N));
	N.d = d;
	N.tick_min_ns = (uint64_t)cfg->gpu_poll_min_us * 1000;
	N.tick_max_ns = (uint64_t)cfg->gpu_poll_max_us * 1000;
	N.tick_ns = N.tick_min_ns;
	N.floor_on = cfg->power_floor != 0;
	N.floor_hold = cfg->power_floor_hold_us / 1e6;
	N.tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (N.tfd < 0) {
		snprintf(err, errlen, "timerfd: %s", strerror(errno));
		return -errno;
	}
	ev_io_init(&N.tick_io, on_tick, N.tfd, EV_READ);
	ev_io_start(mrcd_loop(d), &N.tick_io);
	return 0;
}

void mrcd__notify_stop(void)
{
	if (N.tfd >= 0) {
		ev_io_stop(mrcd_loop(N.d), &N.tick_io);
		close(N.tfd);
		N.tfd = -1;
	}
	N.nlist = NULL;
}
