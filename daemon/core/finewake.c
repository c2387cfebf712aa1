/* Engine deadlines under a millisecond away (core.h, mrcd_fine_wake).
 *
 * Why: libev's epoll backend never sleeps less than 1 ms once it sleeps
 * (its backend_mintime, and epoll_wait's timeout in whole milliseconds
 * rounded up), so a deadline 32 us away, an ACK held for the QP's own data
 * to carry it (ack_delay_ns), fired 1.05-1.1 ms later: the message trace
 * (docs/client.md "Tracing the message path") showed that wait as half of
 * a NCCL-plugin round trip.  A timerfd armed for the deadline itself makes
 * epoll_wait return on time; the engine's ev_timer is due by then and runs
 * in that loop turn, as before, after the socket watchers. */
#include <errno.h>
#include <stdlib.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "daemon/core/core.h"

struct mrcd_fine {
	int fd;
	ev_io w;
	uint64_t at;                       /* the armed deadline (ns) */
};

static void on_fine(struct ev_loop *loop, ev_io *w, int revents)
{
	struct mrcd *d = w->data;
	uint64_t v;
	(void)loop;
	(void)revents;
	/* Only the wake-up matters: the due ev_timer runs in this turn. */
	if (read(d->fine->fd, &v, sizeof(v)) == sizeof(v))
		d->st.fine_wakes++;
	d->fine->at = 0;
}

int mrcd_fine_wake(struct mrcd *d, uint64_t dl)
{
	struct mrcd_fine *f = d->fine;
	if (!f) {
		if (!(f = calloc(1, sizeof(*f))))
			return -ENOMEM;
		f->fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
		if (f->fd < 0) {
			int r = -errno;
			free(f);
			return r;
		}
		ev_io_init(&f->w, on_fine, f->fd, EV_READ);
		f->w.data = d;
		ev_io_start(d->loop, &f->w);
		d->fine = f;
	}
	if (f->at == dl)
		return 0;
	/* Absolute on CLOCK_MONOTONIC, mrcd_now's clock: no drift from the
	 * time this call takes.  An earlier deadline armed before is simply
	 * replaced: the engine asks again for whatever is due next. */
	struct itimerspec it = { .it_value = { .tv_sec = (time_t)(dl / 1000000000u),
					       .tv_nsec = (long)(dl % 1000000000u) } };
	if (timerfd_settime(f->fd, TFD_TIMER_ABSTIME, &it, NULL) < 0)
		return -errno;
	f->at = dl;
	return 0;
}

void mrcd_fine_fini(struct mrcd *d)
{
	if (!d->fine)
		return;
	ev_io_stop(d->loop, &d->fine->w);
	close(d->fine->fd);
	free(d->fine);
	d->fine = NULL;
}
