/* libmrc-gpu: the watchdog.  A kernel spinning on a ring cannot learn
 * that mrcd died (nothing will ever complete), so one thread per context
 * polls the control socket for a hang-up and then sets an abort word that
 * every spin of mrc/gpu.h reads (-EPIPE).
 *
 * The abort word is the first word of a page of its own (an anonymous
 * mapping), so the CUDA side can register exactly that page with
 * cudaHostRegister(..., cudaHostRegisterMapped) and hand the kernel its
 * device address. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include "mrc/gpu.h"
#include "mrc/mrc.h"

#define MRC__API __attribute__((visibility("default")))

struct mrc_gpu_watch {
	pthread_t thr;
	int sock;                  /* the context's socket (not ours) */
	int stop_efd;              /* mrc_gpu_watch_stop wakes the thread */
	uint32_t *abort;           /* page-aligned, its own page */
	size_t page;
};

static void *watch_main(void *arg)
{
	struct mrc_gpu_watch *w = arg;
	struct pollfd p[2] = {
		{ .fd = w->sock, .events = POLLRDHUP },
		{ .fd = w->stop_efd, .events = POLLIN },
	};
	for (;;) {
		int n = poll(p, 2, -1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 || (p[0].revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL))) {
			/* Release: whatever the watchdog saw before is ordered
			 * before a producer's -EPIPE. */
			__atomic_store_n(w->abort, 1, __ATOMIC_RELEASE);
			return NULL;
		}
		if (p[1].revents)
			return NULL;
	}
}

MRC__API int mrc_gpu_watch_start(struct mrc_ctx *ctx, struct mrc_gpu_watch **out)
{
	if (!ctx || !out)
		return -EINVAL;
	struct mrc_gpu_watch *w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->sock = mrc_ctx_fd(ctx);
	w->page = (size_t)sysconf(_SC_PAGESIZE);
	w->abort = mmap(NULL, w->page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int rc;
	if (w->abort == MAP_FAILED) {
		rc = -errno;
		free(w);
		return rc;
	}
	w->stop_efd = eventfd(0, EFD_CLOEXEC);
	if (w->stop_efd < 0) {
		rc = -errno;
		goto fail;
	}
	rc = -pthread_create(&w->thr, NULL, watch_main, w);
	if (rc < 0) {
		close(w->stop_efd);
		goto fail;
	}
	*out = w;
	return 0;
fail:
	munmap(w->abort, w->page);
	free(w);
	return rc;
}

MRC__API void mrc_gpu_watch_attach(struct mrc_gpu_watch *w, struct mrc_gpu_chan *ch)
{
	ch->abort = w->abort;
}

MRC__API void mrc_gpu_watch_stop(struct mrc_gpu_watch *w)
{
	if (!w)
		return;
	uint64_t one = 1;
	while (write(w->stop_efd, &one, sizeof(one)) < 0 && errno == EINTR)
		;
	pthread_join(w->thr, NULL);
	close(w->stop_efd);
	munmap(w->abort, w->page);
	free(w);
}
