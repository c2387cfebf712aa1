/* libmrc: memory regions (sealed memfds shared with mrcd). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
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

/* at: the application's own mapping of [off, off+len) (mrc_reg_mem), or
 * NULL to map it here. */
static int reg(struct mrc_ctx *ctx, int fd, uint64_t off, uint64_t len, uint32_t access,
	       struct mrc_mr *mr, void *at)
{
	int seals = fcntl(fd, F_GET_SEALS);
	if (seals < 0 || !(seals & F_SEAL_SHRINK))
		return -EINVAL;    /* the daemon would refuse it too */
	int r = 0;
	if (at) {
		mr->addr = at;
		mr->len = len;
	} else {
		r = map_region(mr, fd, off, len);
	}
	if (r)
		return r;
	struct mrc_cli_reg_mr q = { .fd_off = off, .len = len, .access = access };
	struct mrc_cli_reg_mr_rep rep;
	r = mrc__lib_call(ctx, MRC_CLI_REG_MR, &q, sizeof(q), fd, &rep, sizeof(rep), NULL, 0);
	if (r) {
		if (mr->map)
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
	int r = reg(ctx, fd, off, len, access, mr, NULL);
	if (r) {
		free(mr);
		return r;
	}
	*out = mr;
	return 0;
}

/* ---- application memory (mrc_reg_mem; docs/client.md "Application
 * memory") ----------------------------------------------------------------
 * mrcd reaches a region only through pages it maps itself, so the
 * application's memory must be backed by a file both can map: a sealed
 * memfd (hugetlbfs ones included).  Memory that already is (the caller's
 * MAP_SHARED memfd mapping) is registered by passing that file; anonymous
 * private memory is moved into a new memfd in place with MRC_REG_MOVE (one
 * copy at registration, none per transfer).  Anything else is refused:
 * mrcd is given no ptrace right over its clients (docs/security.md). */

struct vma {
	uintptr_t start, end;
	char r, w, s;              /* readable, writable, MAP_SHARED */
	uint64_t off;
	dev_t dev;
	ino_t ino;
	int special;               /* [stack], [vdso], ... ([heap] and named
	                              anonymous memory, [anon:name], are not) */
};

/* The memfds that MRC_REG_MOVE put under application memory, kept open so
 * that the same memory can be registered again; closed once no mapping of
 * them is left and no registration holds them (checked at each
 * mrc_reg_mem).  refs: live registrations of the memfd; while it has any,
 * its pages are not moved again (mrcd would go on writing the old file). */
struct mrc__moved {
	struct mrc__moved *next;
	dev_t dev;
	ino_t ino;
	int fd;
	int refs;
};
static struct mrc__moved *moved;
static pthread_mutex_t moved_lock = PTHREAD_MUTEX_INITIALIZER;

static int refuse(struct mrc_ctx *ctx, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int refuse(struct mrc_ctx *ctx, int err, const char *fmt, ...)
{
	va_list ap;
	pthread_mutex_lock(&ctx->lock);
	va_start(ap, fmt);
	vsnprintf(ctx->last_error, sizeof(ctx->last_error), fmt, ap);
	va_end(ap);
	pthread_mutex_unlock(&ctx->lock);
	return err;
}

/* Every mapping of this process, in address order. */
static int read_maps(struct vma **out, size_t *n)
{
	FILE *f = fopen("/proc/self/maps", "re");
	if (!f)
		return -errno;
	size_t cap = 64, k = 0;
	struct vma *v = malloc(cap * sizeof(*v));
	char line[4096 + 128];
	while (v && fgets(line, sizeof(line), f)) {
		unsigned long s0, e0, maj, min, ino;
		unsigned long long off;
		char perm[5];
		int pos = 0;
		if (sscanf(line, "%lx-%lx %4s %llx %lx:%lx %lu %n", &s0, &e0, perm, &off, &maj,
			   &min, &ino, &pos) < 7)
			continue;
		if (k == cap) {
			struct vma *nv = realloc(v, 2 * cap * sizeof(*v));
			if (!nv) {
				free(v);
				v = NULL;
				break;
			}
			v = nv;
			cap *= 2;
		}
		const char *path = line + pos;
		v[k++] = (struct vma){ .start = s0, .end = e0, .r = perm[0] == 'r',
				       .w = perm[1] == 'w', .s = perm[3] == 's', .off = off,
				       .dev = makedev(maj, min), .ino = (ino_t)ino,
				       .special = path[0] == '[' && strncmp(path, "[heap]", 6) &&
						  strncmp(path, "[anon:", 6) };
	}
	fclose(f);
	if (!v)
		return -ENOMEM;
	*out = v;
	*n = k;
	return 0;
}

static int maps_have(const struct vma *v, size_t n, dev_t dev, ino_t ino)
{
	for (size_t i = 0; i < n; i++)
		if (v[i].ino == ino && v[i].dev == dev)
			return 1;
	return 0;
}

/* Under moved_lock. */
/* When libmrc is unloaded (a dlopen'ed library that links it, such as
 * libmrc-fi.so, which libfabric dlcloses at exit), the moved memfds are
 * no longer findable by anyone: close them.  The application's mappings
 * keep the memory itself. */
__attribute__((destructor)) static void moved_fini(void)
{
	pthread_mutex_lock(&moved_lock);
	while (moved) {
		struct mrc__moved *m = moved;
		moved = m->next;
		close(m->fd);
		free(m);
	}
	pthread_mutex_unlock(&moved_lock);
}

static void moved_gc(const struct vma *v, size_t n)
{
	for (struct mrc__moved **p = &moved; *p;) {
		struct mrc__moved *m = *p;
		if (m->refs || maps_have(v, n, m->dev, m->ino)) {
			p = &m->next;
			continue;
		}
		*p = m->next;
		close(m->fd);
		free(m);
	}
}

/* Under moved_lock: the memfd MRC_REG_MOVE made with this inode, or NULL. */
static struct mrc__moved *moved_find(dev_t dev, ino_t ino)
{
	for (struct mrc__moved *m = moved; m; m = m->next)
		if (m->dev == dev && m->ino == ino)
			return m;
	return NULL;
}

static int fd_matches(int fd, dev_t dev, ino_t ino, int want_write)
{
	struct stat st;
	if (fstat(fd, &st) < 0 || st.st_dev != dev || st.st_ino != ino)
		return 0;
	int fl = fcntl(fd, F_GETFL);
	return fl >= 0 && ((fl & O_ACCMODE) == O_RDWR || (!want_write && (fl & O_ACCMODE) == O_RDONLY));
}

/* A descriptor of the file (dev, ino) that this process has open: ours
 * (MRC_REG_MOVE's), the application's, or /proc/self/map_files (which
 * needs CAP_CHECKPOINT_RESTORE or CAP_SYS_ADMIN).  Returns a new fd. */
static int find_file(const struct vma *v, dev_t dev, ino_t ino, int want_write)
{
	pthread_mutex_lock(&moved_lock);
	struct mrc__moved *m = moved_find(dev, ino);
	if (m) {
		int fd = fcntl(m->fd, F_DUPFD_CLOEXEC, 0);
		pthread_mutex_unlock(&moved_lock);
		return fd < 0 ? -errno : fd;
	}
	pthread_mutex_unlock(&moved_lock);
	DIR *dir = opendir("/proc/self/fd");
	int found = -1;
	if (dir) {
		struct dirent *e;
		while (found < 0 && (e = readdir(dir))) {
			char *end;
			long fd = strtol(e->d_name, &end, 10);
			if (*end || end == e->d_name || fd == dirfd(dir))
				continue;
			if (fd_matches((int)fd, dev, ino, want_write))
				found = fcntl((int)fd, F_DUPFD_CLOEXEC, 0);
		}
		closedir(dir);
	}
	if (found >= 0)
		return found;
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/map_files/%lx-%lx", (unsigned long)v->start,
		 (unsigned long)v->end);
	found = open(path, (want_write ? O_RDWR : O_RDONLY) | O_CLOEXEC);
	if (found >= 0 && !fd_matches(found, dev, ino, want_write)) {
		close(found);
		found = -1;
	}
	return found >= 0 ? found : -ENOENT;
}

/* Whole pages: around a malloc'd range they hold malloc's neighbours and,
 * under AddressSanitizer, its redzones, which must move as they are; so
 * not memcpy (ASan checks its ranges).  Volatile loads keep the compiler
 * from turning the loop back into memcpy. */
__attribute__((no_sanitize_address)) static void copy_pages(void *dst, const void *src,
							     uint64_t len)
{
	const volatile uint64_t *s = src;
	uint64_t *d = dst;
	for (uint64_t i = 0; i < len / sizeof(*d); i++)
		d[i] = s[i];
}

/* Moves the anonymous pages [a, a+len) (page-aligned, covered by v[0..n))
 * into a new sealed memfd mapped at the same address with the same
 * protections.  Returns the memfd. */
static int move_to_memfd(uintptr_t a, uint64_t len, const struct vma *v, size_t n)
{
	int fd = memfd_create("mrc-mem", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -errno;
	void *tmp = MAP_FAILED;
	int r = 0;
	if (ftruncate(fd, (off_t)len) < 0 ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0)
		r = -errno;
	if (!r && (tmp = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED)
		r = -errno;
	if (!r && madvise(tmp, len, MADV_POPULATE_WRITE) < 0 && errno != EINVAL)
		r = errno == EFAULT ? -ENOMEM : -errno;   /* no SIGBUS in memcpy */
	if (!r)
		copy_pages(tmp, (const void *)a, len);
	/* Piece by piece: each keeps its own protection. */
	for (size_t i = 0; !r && i < n; i++) {
		uintptr_t s0 = v[i].start > a ? v[i].start : a;
		uintptr_t e0 = v[i].end < a + len ? v[i].end : a + len;
		int prot = (v[i].r ? PROT_READ : 0) | (v[i].w ? PROT_WRITE : 0);
		if (mmap((void *)s0, e0 - s0, prot, MAP_SHARED | MAP_FIXED, fd,
			 (off_t)(s0 - a)) == MAP_FAILED)
			r = -errno;
	}
	if (tmp != MAP_FAILED)
		munmap(tmp, len);
	if (r) {
		close(fd);
		return r;
	}
	return fd;
}

#define MR_WRITES (MRC_MR_REMOTE_WRITE | MRC_MR_REMOTE_ATOMIC | MRC_MR_LOCAL_WRITE)

/* Under moved_lock: 1 when the shared mapping v is of a memfd MRC_REG_MOVE
 * made (movable again), 2 when a live registration holds that memfd. */
static int moved_again(const struct vma *v)
{
	struct mrc__moved *m = v->s ? moved_find(v->dev, v->ino) : NULL;
	return !m ? 0 : m->refs ? 2 : 1;
}

/* Every mapping of [addr, +len) must be readable (and writable for
 * MR_WRITES), not special, and either one file's shared mapping at
 * consistent offsets (*shared = 1) or memory MRC_REG_MOVE can move: anonymous
 * private memory, and memfds it moved before, which a larger range over the
 * same buffer meets (fabtests' fi_mr_test registers 1 byte, then 4 KiB, then
 * 8 MiB of one malloc'd buffer). */
static int check_vmas(struct mrc_ctx *ctx, const struct vma *v, size_t nv, uint32_t access,
		      uint32_t flags, void *addr, uint64_t len, int *shared)
{
	int one_file = v[0].s && v[0].ino, movable = 1, busy = 0;
	for (size_t i = 0; i < nv; i++) {
		if (!v[i].r || ((access & MR_WRITES) && !v[i].w))
			return refuse(ctx, -EACCES, "the memory at %p is not %s here", (void *)v[i].start,
				      v[i].r ? "writable" : "readable");
		if (v[i].special)
			return refuse(ctx, -EOPNOTSUPP, "the memory at %p is the stack or a kernel "
				      "mapping", (void *)v[i].start);
		one_file &= v[i].s && v[i].ino == v[0].ino && v[i].dev == v[0].dev &&
			    v[i].off - v[0].off == v[i].start - v[0].start;
		if (!v[i].s && !v[i].ino)
			continue;
		pthread_mutex_lock(&moved_lock);
		int again = moved_again(&v[i]);
		pthread_mutex_unlock(&moved_lock);
		movable &= again != 0;
		busy |= again == 2;
	}
	*shared = one_file;
	if (one_file)
		return 0;
	if (!movable)
		return refuse(ctx, -EOPNOTSUPP, "[%p, +%llu) is not one file's shared mapping "
			      "nor anonymous private memory (docs/client.md \"Application memory\")",
			      addr, (unsigned long long)len);
	if (busy && (flags & MRC_REG_MOVE))
		return refuse(ctx, -EBUSY, "part of [%p, +%llu) was moved for a registration "
			      "that is still live: moving it again would leave that one behind; "
			      "deregister it first", addr, (unsigned long long)len);
	return 0;
}

/* A shared mapping: a descriptor of its file, sealed against shrinking. */
static int shared_fd(struct mrc_ctx *ctx, const struct vma *v, uintptr_t a, uint32_t access,
		     void *addr, int *fd_out, uint64_t *off)
{
	int fd = find_file(&v[0], v[0].dev, v[0].ino, !!(access & MR_WRITES));
	if (fd < 0)
		return refuse(ctx, -EOPNOTSUPP, "no open descriptor of the file mapped at %p%s: keep "
			      "its fd open, or use mrc_reg_mr", addr,
			      access & MR_WRITES ? " (read-write)" : "");
	/* mrcd maps the file only if it can never shrink under it
	 * (SIGBUS); add that seal if the file allows sealing. */
	int seals = fcntl(fd, F_GET_SEALS);
	if (seals >= 0 && !(seals & F_SEAL_SHRINK) && fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK) == 0)
		seals |= F_SEAL_SHRINK;
	if (seals < 0 || !(seals & F_SEAL_SHRINK)) {
		close(fd);
		return refuse(ctx, -EOPNOTSUPP, "the file mapped at %p %s", addr, seals < 0 ?
			      "is not a memfd (only memfds can be sealed against shrinking)" :
			      "cannot take F_SEAL_SHRINK (F_SEAL_SEAL is set)");
	}
	*fd_out = fd;
	*off = v[0].off + (a - v[0].start);
	return 0;
}

/* Anonymous memory with MRC_REG_MOVE: its pages moved into a memfd in
 * place, remembered (moved) so that a later registration finds it. */
static int moved_fd(struct mrc_ctx *ctx, const struct vma *v, size_t nv, uintptr_t a,
		    uint64_t len, uint64_t pg, uint32_t flags, void *addr, int *fd_out)
{
	if (!(flags & MRC_REG_MOVE))
		return refuse(ctx, -EOPNOTSUPP, "[%p, +%llu) is (partly) anonymous memory: pass "
			      "MRC_REG_MOVE to move it into shared memory in place", addr, (unsigned long long)len);
	if ((a & (pg - 1)) || (len & (pg - 1)))
		return refuse(ctx, -EINVAL, "MRC_REG_MOVE needs whole pages: address and length "
			      "multiples of %llu (posix_memalign, mmap)", (unsigned long long)pg);
	int mfd = move_to_memfd(a, len, v, nv);
	if (mfd < 0)
		return refuse(ctx, mfd, "moving the memory into a memfd failed");
	struct stat st;
	struct mrc__moved *m = malloc(sizeof(*m));
	int fd = fcntl(mfd, F_DUPFD_CLOEXEC, 0);
	if (!m || fd < 0 || fstat(mfd, &st) < 0) {
		/* The pages stay moved (same contents); only the registration
		 * fails. */
		free(m);
		if (fd >= 0)
			close(fd);
		close(mfd);
		return refuse(ctx, -ENOMEM, "out of memory or descriptors");
	}
	*m = (struct mrc__moved){ .dev = st.st_dev, .ino = st.st_ino, .fd = mfd };
	pthread_mutex_lock(&moved_lock);
	m->next = moved;
	moved = m;
	pthread_mutex_unlock(&moved_lock);
	*fd_out = fd;
	return 0;
}

/* A registration of a memfd MRC_REG_MOVE made holds it (refs). */
static void moved_hold(struct mrc_mr *mr, int fd)
{
	struct stat st;
	if (fstat(fd, &st) < 0)
		return;
	pthread_mutex_lock(&moved_lock);
	mr->moved = moved_find(st.st_dev, st.st_ino);
	if (mr->moved)
		mr->moved->refs++;
	pthread_mutex_unlock(&moved_lock);
}

static int reg_mem(struct mrc_ctx *ctx, void *addr, uint64_t len, uint32_t access,
		   uint32_t flags, struct mrc_mr *mr)
{
	uintptr_t a = (uintptr_t)addr;
	uint64_t pg = (uint64_t)sysconf(_SC_PAGESIZE);
	uintptr_t lo = a & ~(uintptr_t)(pg - 1);
	uintptr_t hi = (uintptr_t)((a + len + pg - 1) & ~(pg - 1));
	if (hi < a)
		return refuse(ctx, -EINVAL, "address + length overflows");
	struct vma *all;
	size_t n;
	int r = read_maps(&all, &n);
	if (r)
		return refuse(ctx, r, "cannot read /proc/self/maps");
	pthread_mutex_lock(&moved_lock);
	moved_gc(all, n);
	pthread_mutex_unlock(&moved_lock);
	/* The mappings that cover [lo, hi), with no gap. */
	size_t i0 = 0;
	while (i0 < n && all[i0].end <= lo)
		i0++;
	size_t i1 = i0;
	uintptr_t at = lo;
	while (i1 < n && at < hi && all[i1].start <= at) {
		at = all[i1].end;
		i1++;
	}
	const struct vma *v = all + i0;
	size_t nv = i1 - i0;
	int shared = 0, fd = -1;
	uint64_t off = 0;
	if (at < hi || !nv)
		r = refuse(ctx, -EFAULT, "[%p, +%llu) is not all mapped in this process", addr,
			   (unsigned long long)len);
	else if (!(r = check_vmas(ctx, v, nv, access, flags, addr, len, &shared)))
		r = shared ? shared_fd(ctx, v, a, access, addr, &fd, &off)
			   : moved_fd(ctx, v, nv, a, len, pg, flags, addr, &fd);
	if (!r) {
		mr->own_fd = -1;
		r = reg(ctx, fd, off, len, access, mr, addr);
		if (!r)
			moved_hold(mr, fd);
		close(fd);
	}
	free(all);
	return r;
}

MRC__API int mrc_reg_mem(struct mrc_ctx *ctx, void *addr, uint64_t len, uint32_t access,
			 uint32_t flags, struct mrc_mr **out)
{
	*out = NULL;
	if (len == 0 || (access & ~MRC_MR_ALL) || (flags & ~MRC_REG_FLAGS) ||
	    (uintptr_t)addr + len < (uintptr_t)addr)
		return -EINVAL;
	if (!addr)
		return -EFAULT;
	struct mrc_mr *mr = calloc(1, sizeof(*mr));
	if (!mr)
		return -ENOMEM;
	int r = reg_mem(ctx, addr, len, access, flags, mr);
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
		r = reg(ctx, fd, 0, len, access, mr, NULL);
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
	int r = mrc__lib_call(mr->ctx, MRC_CLI_DEREG_MR, &q, sizeof(q), -1, NULL, 0, NULL, 0);
	if (r == -EBUSY)
		return r;
	/* Any other outcome (a dead daemon included) frees it here: the daemon
	 * frees a client's regions itself when the client goes away. */
	mrc__lib_free_mr(mr);
	return r == -EPIPE || r == -ECONNRESET ? 0 : r;
}

void mrc__lib_free_mr(struct mrc_mr *mr)
{
	mrc__lib_unlink_mr(mr);
	if (mr->moved) {
		pthread_mutex_lock(&moved_lock);
		mr->moved->refs--;
		pthread_mutex_unlock(&moved_lock);
	}
	if (mr->map)
		munmap(mr->map, mr->map_len);
	if (mr->own_fd >= 0)
		close(mr->own_fd);
	free(mr);
}

MRC__API void *mrc_mr_addr(const struct mrc_mr *mr) { return mr->addr; }
MRC__API uint64_t mrc_mr_len(const struct mrc_mr *mr) { return mr->len; }
MRC__API uint32_t mrc_mr_key(const struct mrc_mr *mr) { return mr->key; }
