/* Registered memory is mapped in ahead of the data path (lib/mr.c,
 * daemon/clients/client_mr.c), against a real mrcd on the loopback fabric:
 *   - mrc_alloc_mr allocates its file and maps every page into the
 *     client (its own mapping's Rss is the whole region at once);
 *   - mrcd maps such a region's pages into itself while idle (its
 *     mapping's Rss grows to the whole region without any traffic);
 *   - a client's own sparse file is not populated: mrcd must not commit
 *     memory the client never allocated (the file's blocks stay 0);
 *   - a region deregistered while being populated, and the client gone
 *     with regions still being populated, leave the daemon serving.
 * Rss is read from /proc/PID/smaps (the tests run as the daemon's uid).
 * Skipped when build/bin/mrcd has not been built. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "tests/support/mrcd_spawn.h"
#include "tests/support/skip.h"

#include "mrc/mrc.h"

#define MIB ((uint64_t)1 << 20)

/* Rss in bytes of the mappings of pid whose name contains name and whose
 * size is size (several regions share a memfd name), summed; -1 if none. */
static int64_t rss_of(pid_t pid, const char *name, uint64_t size)
{
	char p[64];
	snprintf(p, sizeof(p), "/proc/%d/smaps", (int)pid);
	FILE *f = fopen(p, "r");
	if (!f)
		return -1;
	char line[512];
	int in = 0;
	int64_t rss = -1;
	unsigned long long lo, hi;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%llx-%llx ", &lo, &hi) == 2) {
			in = strstr(line, name) && hi - lo == size;
			continue;
		}
		unsigned long long kb;
		if (in && sscanf(line, "Rss: %llu kB", &kb) == 1)
			rss = (rss < 0 ? 0 : rss) + (int64_t)(kb * 1024);
	}
	fclose(f);
	return rss;
}

struct want {
	pid_t pid;
	const char *name;
	uint64_t size;
};

static int fully_mapped(void *arg)
{
	const struct want *w = arg;
	return rss_of(w->pid, w->name, w->size) == (int64_t)w->size;
}

/* The group's daemon (tests/support/mrcd_spawn), or a skip. */
static struct mrcd_proc *need_daemon(void)
{
	MRCD_GROUP_NEED();
	return &mrcd_group.d;
}

static void test_alloc_is_mapped_in(void **state)
{
	(void)state;
	struct mrcd_proc *d = need_daemon();
	struct mrc_ctx *ctx;
	assert_int_equal(mrc_open(d->sock, &ctx), 0);

	/* A sparse file of the client's own, registered first: if the
	 * daemon populated it, it would be before the next one. */
	uint64_t sparse_len = 48 * MIB;
	int sfd = memfd_create("mrc-test-sparse", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	assert_true(sfd >= 0);
	assert_int_equal(ftruncate(sfd, (off_t)sparse_len), 0);
	assert_int_equal(fcntl(sfd, F_ADD_SEALS, F_SEAL_SHRINK), 0);
	struct mrc_mr *sparse;
	assert_int_equal(mrc_reg_mr(ctx, sfd, 0, sparse_len, MRC_MR_REMOTE_WRITE, &sparse), 0);

	uint64_t len = 160 * MIB;  /* more than one chunk */
	struct mrc_mr *mr;
	assert_int_equal(mrc_alloc_mr(ctx, len, MRC_MR_REMOTE_WRITE | MRC_MR_LOCAL_READ, &mr), 0);
	/* The client's mapping: every page at once. */
	assert_int_equal(rss_of(getpid(), "memfd:mrc-mr", len), (int64_t)len);
	/* The daemon's: while idle, with nothing posted. */
	struct want w = { d->pid, "memfd:mrc-mr", len };
	assert_int_equal(mrcd_spawn_wait_for(fully_mapped, &w, MRCD_SPAWN_WAIT_MS), 0);

	struct stat st;
	assert_int_equal(fstat(sfd, &st), 0);
	assert_int_equal(st.st_blocks, 0);
	assert_int_equal(rss_of(d->pid, "memfd:mrc-test-sparse", sparse_len), 0);

	assert_int_equal(mrc_dereg_mr(mr), 0);
	assert_int_equal(mrc_dereg_mr(sparse), 0);
	close(sfd);
	mrc_close(ctx);
}

static void test_dereg_while_populating(void **state)
{
	(void)state;
	struct mrcd_proc *d = need_daemon();
	struct mrc_ctx *ctx;
	assert_int_equal(mrc_open(d->sock, &ctx), 0);

	/* Deregistered at once, most likely before the daemon mapped it all. */
	struct mrc_mr *a;
	assert_int_equal(mrc_alloc_mr(ctx, 256 * MIB, MRC_MR_REMOTE_WRITE, &a), 0);
	assert_int_equal(mrc_dereg_mr(a), 0);
	/* A client leaving with a region still to map. */
	struct mrc_ctx *gone;
	struct mrc_mr *b;
	assert_int_equal(mrc_open(d->sock, &gone), 0);
	assert_int_equal(mrc_alloc_mr(gone, 256 * MIB, MRC_MR_REMOTE_WRITE, &b), 0);
	mrc_close(gone);

	/* The daemon still serves, and maps the next region in. */
	uint64_t len = 96 * MIB;
	struct mrc_mr *mr;
	assert_int_equal(mrc_alloc_mr(ctx, len, MRC_MR_REMOTE_WRITE, &mr), 0);
	struct want w = { d->pid, "memfd:mrc-mr", len };
	assert_int_equal(mrcd_spawn_wait_for(fully_mapped, &w, MRCD_SPAWN_WAIT_MS), 0);
	assert_int_equal(rss_of(d->pid, "memfd:mrc-mr", 256 * MIB), -1);  /* both unmapped */
	assert_int_equal(mrc_dereg_mr(mr), 0);
	mrc_close(ctx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_alloc_is_mapped_in),
		cmocka_unit_test(test_dereg_while_populating),
	};
	return cmocka_run_group_tests(tests, mrcd_group_setup, mrcd_group_teardown);
}
