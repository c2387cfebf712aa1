/* libmrc: memory regions (sealed memfds shared with mrcd). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "lib/internal.h"

/* mrc_alloc_mr's region is allocated when it is made, as ibv_reg_mr pins
 * memory: a shortage is an error here rather than a SIGBUS at the first
 * write, the application's first touches do not fault, and mrcd maps the
 * pages into itself before data arrives (daemon/clients/clients.c).  In
 * huge pages where the system allows them for shared memory
 * (transparent_hugepage/shmem_enabled "advise"; docs/client.md): 512x
 * fewer page faults and TLB misses. */
static int commit(struct mrc_mr *mr, int fd)
{
	(void)madvise(mr->map, mr->map_len, MADV_HUGEPAGE);
	if (!madvise(mr->map, mr->map_len, MADV_POPULATE_WRITE))
		return 0;
	if (errno != EINVAL)   /* EFAULT: shared memory ran out */
		return errno == EFAULT ? -ENOMEM : -errno;
	/* before Linux 5.14 */
	return fallocate(fd, 0, 0, (off_t)mr->map_len) < 0 ? -errno : 0;
}

static int map_region(struct mrc_mr *mr, int fd, uint64_t off, uint64_t len)
{
	long pg = sysconf(_SC_PAGESIZE);
	uint64_t a = off & ~(uint64_t)(pg - 1);
	mr->map_len = len + (off - a);
	mr->map = mmap(NULL, mr->map_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)a);
	if (mr->map == MAP_FAILED)
		return -errno;
	int r = mr->own_fd >= 0 ? commit(mr, fd) : 0;
	if (r) {
		munmap(mr->map, mr->map_len);
		return r;
	}
	mr->addr = (char *)mr->map + (off - a);
	mr->len = len;
	return 0;
}

static int reg(struct mrc_ctx *ctx, int fd, uint64_t off, uint64_t len, uint32_t access,
	       struct mrc_mr *mr)
{
	int seals = fcntl(fd, F_GET_SEALS);
	if (seals < 0 || !(seals & F_SEAL_SHRINK))
		return -EINVAL;    /* the daemon would refuse it too */
	int r = map_region(mr, fd, off, len);
	if (r)
		return r;
	struct mrc_cli_reg_mr q = { .fd_off = off, .len = len, .access = access };
	struct mrc_cli_reg_mr_rep rep;
	r = mrc__call(ctx, MRC_CLI_REG_MR, &q, sizeof(q), fd, &rep, sizeof(rep), NULL, 0);
	if (r) {
		munmap(mr->map, mr->map_len);
		return r;
	}
	mr->key = rep.key;
	mr->ctx = ctx;
	pthread_mutex_lock(&ctx->lock);
	mr->next = ctx->mrs;
	ctx->mrs = mr;
	pthread_mutex_unlock(&ctx->lock);
	return 0;
}

MRC__API int mrc_reg_mr(struct mrc_ctx *ctx, int fd, uint64_t off, uint64_t len,
			uint32_t access, struct mrc_mr **out)
{
	*out = NULL;
	if (len == 0 || (access & ~MRC_MR_ALL) || off + len < off)
		return -EINVAL;
	struct mrc_mr *mr = calloc(1, sizeof(*mr));
	if (!mr)
		return -ENOMEM;
	mr->own_fd = -1;
	int r = reg(ctx, fd, off, len, access, mr);
	if (r) {
		free(mr);
		return r;
	}
	*out = mr;
	return 0;
}

MRC__API int mrc_alloc_mr(struct mrc_ctx *ctx, uint64_t len, uint32_t access,
			  struct mrc_mr **out)
{
	*out = NULL;
	if (len == 0 || (access & ~MRC_MR_ALL))
		return -EINVAL;
	int fd = memfd_create("mrc-mr", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -errno;
	int r = 0;
	if (ftruncate(fd, (off_t)len) < 0 ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0)
		r = -errno;
	struct mrc_mr *mr = r ? NULL : calloc(1, sizeof(*mr));
	if (!r && !mr)
		r = -ENOMEM;
	if (!r) {
		mr->own_fd = fd;
		r = reg(ctx, fd, 0, len, access, mr);
	}
	if (r) {
		free(mr);
		close(fd);
		return r;
	}
	*out = mr;
	return 0;
}

MRC__API int mrc_dereg_mr(struct mrc_mr *mr)
{
	if (!mr)
		return 0;
	struct mrc_cli_key q = { .key = mr->key };
	int r = mrc__call(mr->ctx, MRC_CLI_DEREG_MR, &q, sizeof(q), -1, NULL, 0, NULL, 0);
	if (r == -EBUSY)
		return r;
	/* Any other outcome (a dead daemon included) frees it here: the daemon
	 * frees a client's regions itself when the client goes away. */
	mrc__free_mr(mr);
	return r == -EPIPE || r == -ECONNRESET ? 0 : r;
}

void mrc__free_mr(struct mrc_mr *mr)
{
	mrc__unlink_mr(mr);
	munmap(mr->map, mr->map_len);
	if (mr->own_fd >= 0)
		close(mr->own_fd);
	free(mr);
}

MRC__API void *mrc_mr_addr(const struct mrc_mr *mr) { return mr->addr; }
MRC__API uint64_t mrc_mr_len(const struct mrc_mr *mr) { return mr->len; }
MRC__API uint32_t mrc_mr_key(const struct mrc_mr *mr) { return mr->key; }
