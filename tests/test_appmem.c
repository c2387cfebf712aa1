/* mrc_reg_mem: the application's own memory (posix_memalign'd, anonymous
 * mmap'd, a memfd mapping at an offset, a hugetlbfs memfd where the host
 * has huge pages) registered by two clients of one loopback mrcd, WRITEs
 * both ways with every byte checked at the application's own addresses;
 * and what must be refused, each with its errno: unmapped and freed
 * memory, a range running off its mapping, read-only memory asked for
 * writes, a tmpfs file that cannot be sealed, anonymous memory without
 * MRC_REG_MOVE or in partial pages, and the memory limit.  Skipped when
 * build/bin/mrcd has not been built. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "tests/support/get1.h"
#include "tests/support/mrcd_spawn.h"
#include "tests/support/skip.h"

#include "codec/climsg.h"
#include "common/fdpass.h"
#include "common/prng.h"
#include "mrc/mrc.h"

static uint64_t seed;
static long pg;

#define WAIT_MS MRCD_SPAWN_WAIT_MS
#ifndef PR_SET_VMA
#define PR_SET_VMA 0x53564d41
#define PR_SET_VMA_ANON_NAME 0
#endif

static void fill(void *buf, size_t len, uint64_t s)
{
	struct mrc_rng r;
	mrc_rng_seed(&r, s);
	uint8_t *b = buf;
	for (size_t i = 0; i < len; i++)
		b[i] = (uint8_t)mrc_rng_next(&r);
}

/* Two clients (contexts) of the one daemon, one QP each, connected. */
struct two {
	struct mrc_ctx *c[2];
	struct mrc_qp *q[2];
};

static void two_open(struct two *t)
{
	for (int i = 0; i < 2; i++) {
		assert_int_equal(mrc_open(mrcd_group.d.sock, &t->c[i]), 0);
		assert_int_equal(mrc_create_qp(t->c[i], NULL, &t->q[i]), 0);
	}
	struct mrc_qp_addr a[2];
	for (int i = 0; i < 2; i++)
		assert_int_equal(mrc_qp_info_get(t->q[i], &a[i]), 0);
	assert_int_equal(mrc_connect_oob(t->q[0], &a[1]), 0);
	assert_int_equal(mrc_connect_oob(t->q[1], &a[0]), 0);
}

static void two_close(struct two *t)
{
	mrc_close(t->c[0]);
	mrc_close(t->c[1]);
}

/* WRITE all of from's region into to's, in 4 pieces, and check every
 * byte at the application's addresses. */
static void write_check(struct mrc_qp *qp, struct mrc_mr *from, uint8_t *src, struct mrc_mr *to,
			uint8_t *dst, uint64_t len, uint64_t s)
{
	fill(src, len, s);
	memset(dst, 0, len);
	uint64_t piece = (len + 3) / 4;
	int n = 0;
	for (uint64_t o = 0; o < len; o += piece, n++) {
		uint64_t l = len - o < piece ? len - o : piece;
		assert_int_equal(mrc_post_write(qp, 10 + n, mrc_mr_key(from), o, l, mrc_mr_key(to), o), 0);
	}
	for (int i = 0; i < n; i++) {
		struct mrc_completion c = mrcd_get1(qp);
		assert_int_equal(c.status, 0);
		assert_int_equal(c.op, MRC_CQE_WRITE);
	}
	if (memcmp(src, dst, len))
		fail_msg("bytes differ (seed %llu)", (unsigned long long)s);
}

/* Client 0's memory a and client 1's memory b, both registered by
 * mrc_reg_mem: WRITE a -> b, then b -> a. */
static void both_ways(uint8_t *a, uint8_t *b, uint64_t len, uint32_t flags)
{
	struct two t;
	two_open(&t);
	struct mrc_mr *ma, *mb;
	int r = mrc_reg_mem(t.c[0], a, len, MRC_MR_ALL, flags, &ma);
	if (r)
		fail_msg("reg_mem a: %s (%s)", strerror(-r), mrc_last_error(t.c[0]));
	r = mrc_reg_mem(t.c[1], b, len, MRC_MR_ALL, flags, &mb);
	if (r)
		fail_msg("reg_mem b: %s (%s)", strerror(-r), mrc_last_error(t.c[1]));
	assert_ptr_equal(mrc_mr_addr(ma), a);
	assert_int_equal(mrc_mr_len(ma), len);
	write_check(t.q[0], ma, a, mb, b, len, seed);
	write_check(t.q[1], mb, b, ma, a, len, seed + 1);
	assert_int_equal(mrc_dereg_mr(ma), 0);
	assert_int_equal(mrc_dereg_mr(mb), 0);
	two_close(&t);
}

static void test_malloced(void **state)
{
	(void)state;
	MRCD_GROUP_NEED();
	const uint64_t len = 3u << 20;
	void *a = NULL, *b = NULL;
	assert_int_equal(posix_memalign(&a, (size_t)pg, len), 0);
	assert_int_equal(posix_memalign(&b, (size_t)pg, len), 0);
	/* What was there before survives the move. */
	fill(a, len, seed + 7);
	uint8_t *before = malloc(len);
	memcpy(before, a, len);
	struct mrc_ctx *c;
	struct mrc_mr *mr;
	assert_int_equal(mrc_open(mrcd_group.d.sock, &c), 0);
	assert_int_equal(mrc_reg_mem(c, a, len, MRC_MR_ALL, MRC_REG_MOVE, &mr), 0);
	assert_memory_equal(a, before, len);
	assert_int_equal(mrc_dereg_mr(mr), 0);
	mrc_close(c);
	free(before);
	/* a is now a memfd mapping that libmrc still holds: registered again
	 * below without MRC_REG_MOVE */
	both_ways(a, b, len, MRC_REG_MOVE);
	struct two t;
	two_open(&t);
	assert_int_equal(mrc_reg_mem(t.c[0], a, len, MRC_MR_ALL, 0, &mr), 0);
	mrc_dereg_mr(mr);
	two_close(&t);
	free(a);
	free(b);
}

static void test_mmap_anon(void **state)
{
	(void)state;
	MRCD_GROUP_NEED();
	const uint64_t len = 1u << 20;
	uint8_t *a = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint8_t *b = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(a != MAP_FAILED && b != MAP_FAILED);
	/* a named anonymous mapping ("[anon:app-buf]" in maps) is anonymous
	 * memory too (where the kernel names them: CONFIG_ANON_VMA_NAME) */
	if (prctl(PR_SET_VMA, PR_SET_VMA_ANON_NAME, (unsigned long)a, len, "app-buf") == 0)
		print_message("a is named [anon:app-buf]\n");
	both_ways(a, b, len, MRC_REG_MOVE);
	munmap(a, len);
	munmap(b, len);
}

/* A region that starts inside a page, at an offset of its file: the
 * daemon maps the file at that offset, not the application's page. */
static void test_memfd_offset(void **state)
{
	(void)state;
	MRCD_GROUP_NEED();
	const uint64_t flen = 8u << 20, off = 2 * (uint64_t)pg + 100, len = (2u << 20) + 333;
	int fd = memfd_create("app", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)flen), 0);
	uint8_t *m = mmap(NULL, flen, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	assert_true(m != MAP_FAILED);
	/* client 0 and client 1 use two halves of one file */
	both_ways(m + off, m + flen / 2 + off, len, 0);
	/* libmrc sealed it against shrinking (mrcd's condition) */
	assert_true(fcntl(fd, F_GET_SEALS) & F_SEAL_SHRINK);
	munmap(m, flen);
	close(fd);
}

/* vm.nr_hugepages as found, when test_hugetlb raised it (root): put back
 * by its teardown, failed runs included.  -1: untouched. */
static long hp_saved = -1;

static long hp_get(void)
{
	long n = -1;
	FILE *f = fopen("/proc/sys/vm/nr_hugepages", "re");
	if (f) {
		if (fscanf(f, "%ld", &n) != 1)
			n = -1;
		fclose(f);
	}
	return n;
}

static int hp_set(long n)
{
	FILE *f = fopen("/proc/sys/vm/nr_hugepages", "we");
	if (!f)
		return -1;
	int rc = fprintf(f, "%ld\n", n) < 0;
	return fclose(f) || rc ? -1 : 0;
}

static int hugetlb_restore(void **state)
{
	(void)state;
	if (hp_saved >= 0)
		hp_set(hp_saved);
	hp_saved = -1;
	return 0;
}

static void test_hugetlb(void **state)
{
	(void)state;
	MRCD_GROUP_NEED();
	const uint64_t len = 4u << 20;
	int fd = memfd_create("app-huge", MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_HUGETLB);
	if (fd < 0)
		MRC_SKIP("no hugetlbfs memfd (%s)", strerror(errno));
	uint8_t *m = MAP_FAILED;
	if (ftruncate(fd, (off_t)(2 * len)) == 0)
		m = mmap(NULL, 2 * len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
	if (m == MAP_FAILED && geteuid() == 0 && (hp_saved = hp_get()) >= 0) {
		/* As root (make check), reserve huge pages for this test
		 * only (it maps four of 2 MiB; eight leave room): the
		 * teardown puts the setting back. */
		if (hp_set(hp_saved + 8) == 0)
			m = mmap(NULL, 2 * len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE,
				 fd, 0);
	}
	if (m == MAP_FAILED) {
		close(fd);
		MRC_SKIP("no huge pages to map (vm.nr_hugepages, and not root to reserve some)");
	}
	both_ways(m + 4096, m + len + 4096, len - 8192, 0);
	munmap(m, 2 * len);
	close(fd);
}

static void expect(struct mrc_ctx *c, void *addr, uint64_t len, uint32_t access, uint32_t flags,
		   int err, const char *why)
{
	struct mrc_mr *mr = NULL;
	int r = mrc_reg_mem(c, addr, len, access, flags, &mr);
	if (r != err)
		fail_msg("%s: got %d (%s), want %d", why, r, mrc_last_error(c), err);
	assert_null(mr);
	assert_true(mrc_last_error(c)[0] != 0 || err == -EINVAL);
}

static void test_refused(void **state)
{
	(void)state;
	MRCD_GROUP_NEED();
	struct mrc_ctx *c;
	assert_int_equal(mrc_open(mrcd_group.d.sock, &c), 0);
	const uint64_t len = 4 * (uint64_t)pg;
	/* a hole: the middle page of three unmapped */
	uint8_t *m = mmap(NULL, 3 * len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(m != MAP_FAILED);
	assert_int_equal(munmap(m + len, len), 0);
	expect(c, m + len, len, MRC_MR_ALL, MRC_REG_MOVE, -EFAULT, "unmapped");
	expect(c, m, 2 * len, MRC_MR_ALL, MRC_REG_MOVE, -EFAULT, "runs into a hole");
	expect(c, m + 2 * len - 1, 2, MRC_MR_ALL, MRC_REG_MOVE, -EFAULT, "starts in a hole");
	/* anonymous memory: only with MRC_REG_MOVE, and whole pages */
	expect(c, m, len, MRC_MR_ALL, 0, -EOPNOTSUPP, "anonymous without MOVE");
	expect(c, m + 8, len - 8, MRC_MR_ALL, MRC_REG_MOVE, -EINVAL, "partial pages");
	/* read-only memory: a source, never a target */
	assert_int_equal(mprotect(m, len, PROT_READ), 0);
	expect(c, m, len, MRC_MR_REMOTE_WRITE, MRC_REG_MOVE, -EACCES, "read-only as target");
	assert_int_equal(mprotect(m, len, PROT_NONE), 0);
	expect(c, m, len, MRC_MR_LOCAL_READ, MRC_REG_MOVE, -EACCES, "no access at all");
	/* the stack */
	char onstack[64];
	expect(c, onstack, sizeof(onstack), MRC_MR_LOCAL_READ, 0, -EOPNOTSUPP, "stack");
	/* freed (unmapped) memory */
	munmap(m, len);
	munmap(m + 2 * len, len);
	expect(c, m, len, MRC_MR_ALL, MRC_REG_MOVE, -EFAULT, "freed");
	/* a tmpfs file that cannot be sealed (shm_open-like: opened by path) */
	char path[] = "/dev/shm/mrc-appmem-XXXXXX";
	int fd = mkstemp(path);
	if (fd >= 0) {
		unlink(path);
		assert_int_equal(ftruncate(fd, (off_t)len), 0);
		void *f = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		assert_true(f != MAP_FAILED);
		expect(c, f, len, MRC_MR_ALL, 0, -EOPNOTSUPP, "unsealable file");
		munmap(f, len);
		close(fd);
	}
	/* a memfd mapping whose descriptor is gone */
	fd = memfd_create("gone", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	assert_true(fd >= 0 && ftruncate(fd, (off_t)len) == 0);
	void *g = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	assert_true(g != MAP_FAILED);
	close(fd);
	/* ... unless the process may open /proc/self/map_files (root,
	 * CAP_CHECKPOINT_RESTORE), which libmrc then does */
	char mf[64];
	snprintf(mf, sizeof(mf), "/proc/self/map_files/%lx-%lx", (unsigned long)g,
		 (unsigned long)g + (unsigned long)len);
	int via = open(mf, O_RDWR | O_CLOEXEC);
	if (via >= 0) {
		close(via);
		struct mrc_mr *mr;
		assert_int_equal(mrc_reg_mem(c, g, len, MRC_MR_ALL, 0, &mr), 0);
		assert_int_equal(mrc_dereg_mr(mr), 0);
		print_message("no descriptor: found through %s (privileged)\n", mf);
	} else {
		expect(c, g, len, MRC_MR_ALL, 0, -EOPNOTSUPP, "no descriptor");
	}
	munmap(g, len);
	mrc_close(c);
}

/* A memfd the application holds only read-only: registered as a source
 * (mrcd maps it read-only), refused as a target. */
static void test_readonly_fd(void **state)
{
	(void)state;
	MRCD_GROUP_NEED();
	const uint64_t len = 64 * (uint64_t)pg;
	int rw = memfd_create("ro", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	assert_true(rw >= 0 && ftruncate(rw, (off_t)len) == 0);
	assert_int_equal(fcntl(rw, F_ADD_SEALS, F_SEAL_SHRINK), 0);
	uint8_t *w = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, rw, 0);
	assert_true(w != MAP_FAILED);
	fill(w, len, seed + 3);
	char p[64];
	snprintf(p, sizeof(p), "/proc/self/fd/%d", rw);
	int ro = open(p, O_RDONLY | O_CLOEXEC);
	assert_true(ro >= 0);
	uint8_t *r = mmap(NULL, len, PROT_READ, MAP_SHARED, ro, 0);
	assert_true(r != MAP_FAILED);
	munmap(w, len);
	close(rw);
	struct two t;
	two_open(&t);
	struct mrc_mr *src, *dst;
	expect(t.c[0], r, len, MRC_MR_LOCAL_READ | MRC_MR_REMOTE_WRITE, 0, -EACCES, "ro as target");
	int e = mrc_reg_mem(t.c[0], r, len, MRC_MR_LOCAL_READ, 0, &src);
	if (e)
		fail_msg("ro source: %s (%s)", strerror(-e), mrc_last_error(t.c[0]));
	uint8_t *d = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_int_equal(mrc_reg_mem(t.c[1], d, len, MRC_MR_ALL, MRC_REG_MOVE, &dst), 0);
	assert_int_equal(mrc_post_write(t.q[0], 1, mrc_mr_key(src), 0, len, mrc_mr_key(dst), 0), 0);
	struct mrc_completion c = mrcd_get1(t.q[0]);
	assert_int_equal(c.status, 0);
	assert_memory_equal(d, r, len);
	two_close(&t);
	munmap(r, len);
	munmap(d, len);
	close(ro);
}

/* A client that skips libmrc and sends REG_MR itself: mrcd's own checks
 * hold.  A descriptor open read-only is mapped read-only, so it registers
 * as a source and is refused as a target (-EACCES from mrcd's mmap); a
 * range beyond the file is refused (-ERANGE). */
static int raw_reg(struct mrc_ctx *c, int fd, uint64_t off, uint64_t len, uint32_t access,
		   uint32_t req_id)
{
	struct mrc_cli_reg_mr q = { .fd_off = off, .len = len, .access = access };
	uint8_t buf[MRC_CLI_MSG_MAX];
	int n = mrc__cli_enc_req(buf, sizeof(buf), MRC_CLI_REG_MR, req_id, &q, sizeof(q));
	assert_true(n > 0);
	int sock = mrc_ctx_fd(c);
	assert_int_equal(mrc__fdpass_send(sock, buf, (size_t)n, &fd, 1, 0), 0);
	int fds[MRC_CLI_MAX_FDS];
	unsigned nfd = 0;
	ssize_t got = mrc__fdpass_recv(sock, buf, sizeof(buf), fds, MRC_CLI_MAX_FDS, &nfd, 0);
	assert_true(got > 0);
	for (unsigned k = 0; k < nfd; k++)
		close(fds[k]);
	struct mrc_cli_msg m;
	const char *why = "";
	assert_int_equal(mrc__cli_dec_rep(buf, (size_t)got, &m, &why), 0);
	assert_int_equal(m.hdr.req_id, req_id);
	return m.status;
}

static void test_daemon_checks(void **state)
{
	(void)state;
	MRCD_GROUP_NEED();
	const uint64_t len = 16 * (uint64_t)pg;
	int rw = memfd_create("raw", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	assert_true(rw >= 0 && ftruncate(rw, (off_t)len) == 0);
	assert_int_equal(fcntl(rw, F_ADD_SEALS, F_SEAL_SHRINK), 0);
	char p[64];
	snprintf(p, sizeof(p), "/proc/self/fd/%d", rw);
	int ro = open(p, O_RDONLY | O_CLOEXEC);
	assert_true(ro >= 0);
	struct mrc_ctx *c;
	assert_int_equal(mrc_open(mrcd_group.d.sock, &c), 0);
	assert_int_equal(raw_reg(c, ro, 0, len, MRC_MR_LOCAL_READ | MRC_MR_REMOTE_WRITE, 0x7001),
			 -EACCES);
	assert_int_equal(raw_reg(c, ro, 0, len, MRC_MR_LOCAL_READ | MRC_MR_REMOTE_ATOMIC, 0x7002),
			 -EACCES);
	assert_int_equal(raw_reg(c, ro, 0, len, MRC_MR_LOCAL_WRITE, 0x7003), -EACCES);
	assert_int_equal(raw_reg(c, ro, 0, len, MRC_MR_LOCAL_READ, 0x7004), 0);
	assert_int_equal(raw_reg(c, rw, len - 100, 101, MRC_MR_ALL, 0x7005), -ERANGE);
	assert_int_equal(raw_reg(c, rw, 0, len, MRC_MR_ALL, 0x7006), 0);
	mrc_close(c);
	close(ro);
	close(rw);
}

/* Memory freed while registered: mrcd keeps its own mapping, so a WRITE
 * into it completes and harms nobody; the daemon still serves. */
static void test_freed_while_registered(void **state)
{
	(void)state;
	MRCD_GROUP_NEED();
	const uint64_t len = 16 * (uint64_t)pg;
	uint8_t *a = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint8_t *b = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct two t;
	two_open(&t);
	struct mrc_mr *ma, *mb;
	assert_int_equal(mrc_reg_mem(t.c[0], a, len, MRC_MR_ALL, MRC_REG_MOVE, &ma), 0);
	assert_int_equal(mrc_reg_mem(t.c[1], b, len, MRC_MR_ALL, MRC_REG_MOVE, &mb), 0);
	munmap(b, len);
	fill(a, len, seed);
	assert_int_equal(mrc_post_write(t.q[0], 1, mrc_mr_key(ma), 0, len, mrc_mr_key(mb), 0), 0);
	assert_int_equal(mrcd_get1(t.q[0]).status, 0);
	assert_int_equal(mrc_dereg_mr(mb), 0);
	/* the daemon is alive and the other direction still works */
	uint8_t *b2 = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_int_equal(mrc_reg_mem(t.c[1], b2, len, MRC_MR_ALL, MRC_REG_MOVE, &mb), 0);
	write_check(t.q[1], mb, b2, ma, a, len, seed + 5);
	two_close(&t);
	munmap(a, len);
	munmap(b2, len);
}

/* Deregistration while work references the memory is refused, and the
 * memory stays usable: a RECV posted into application memory holds it
 * until a SEND fills it. */
static void test_dereg_busy(void **state)
{
	(void)state;
	MRCD_GROUP_NEED();
	const uint64_t len = 8 * (uint64_t)pg;
	uint8_t *a = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint8_t *b = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct two t;
	two_open(&t);
	struct mrc_mr *ma, *mb;
	assert_int_equal(mrc_reg_mem(t.c[0], a, len, MRC_MR_ALL, MRC_REG_MOVE, &ma), 0);
	assert_int_equal(mrc_reg_mem(t.c[1], b, len, MRC_MR_ALL, MRC_REG_MOVE, &mb), 0);
	memset(b, 0xee, len);
	assert_int_equal(mrc_post_recv(t.q[1], 77, mrc_mr_key(mb), 100, 5000), 0);
	int r = mrc_dereg_mr(mb);
	if (r != -EBUSY)
		fail_msg("dereg with a RECV posted: %d (%s), want -EBUSY", r, mrc_last_error(t.c[1]));
	fill(a, len, seed + 9);
	assert_int_equal(mrc_post_send(t.q[0], 78, mrc_mr_key(ma), 300, 5000), 0);
	assert_int_equal(mrcd_get1(t.q[0]).status, 0);
	struct mrc_completion c = mrcd_get1(t.q[1]);
	assert_int_equal(c.status, 0);
	assert_int_equal(c.wr_id, 77);
	assert_int_equal(c.byte_len, 5000);
	assert_memory_equal(b + 100, a + 300, 5000);
	assert_int_equal(b[99], 0xee);
	assert_int_equal(b[5100], 0xee);
	assert_int_equal(mrc_dereg_mr(mb), 0);
	assert_int_equal(mrc_dereg_mr(ma), 0);
	two_close(&t);
	munmap(a, len);
	munmap(b, len);
}

/* client_max_mem_mb applies to application memory as to mrc_alloc_mr's. */
static void test_mem_limit(void **state)
{
	(void)state;
	MRCD_GROUP_NEED();
	struct mrcd_proc d;
	const char *argv[] = { "--client_max_mem_mb=1", NULL };
	assert_int_equal(mrcd_spawn_start(&d, argv), 0);
	struct mrc_ctx *c;
	assert_int_equal(mrc_open(d.sock, &c), 0);
	const uint64_t len = 2u << 20;
	uint8_t *a = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	expect(c, a, len, MRC_MR_ALL, MRC_REG_MOVE, -EDQUOT, "over client_max_mem_mb");
	struct mrc_mr *mr;
	assert_int_equal(mrc_reg_mem(c, a, len / 4, MRC_MR_ALL, 0, &mr), 0);
	mrc_close(c);
	munmap(a, len);
	mrcd_spawn_stop(&d);
}

int main(void)
{
	seed = getenv("MRC_SEED") ? strtoull(getenv("MRC_SEED"), NULL, 0) : (uint64_t)time(NULL);
	printf("test_appmem: seed %llu (MRC_SEED to repeat)\n", (unsigned long long)seed);
	pg = sysconf(_SC_PAGESIZE);
	signal(SIGPIPE, SIG_IGN);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_malloced),
		cmocka_unit_test(test_mmap_anon),
		cmocka_unit_test(test_memfd_offset),
		cmocka_unit_test_teardown(test_hugetlb, hugetlb_restore),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_readonly_fd),
		cmocka_unit_test(test_daemon_checks),
		cmocka_unit_test(test_freed_while_registered),
		cmocka_unit_test(test_dereg_busy),
		cmocka_unit_test(test_mem_limit),
	};
	return cmocka_run_group_tests(tests, mrcd_group_setup, mrcd_group_teardown);
}
