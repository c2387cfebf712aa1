/* A real mrcd for tests on the single-host loopback fabric (no root
 * needed): started from the test's own build directory (B/tests/x ->
 * B/bin/mrcd, so a sanitizer build tests a sanitizer daemon), in a private
 * directory, on a port of its own, with a cluster key when the daemon has
 * the key_file option. */
#ifndef MRC_TESTS_SUPPORT_MRCD_SPAWN_H
#define MRC_TESTS_SUPPORT_MRCD_SPAWN_H

#include <stdint.h>
#include <sys/types.h>

#define MRCD_SPAWN_WAIT_MS 10000

struct mrcd_proc {
	pid_t pid;
	char dir[64];              /* private: mrcd puts mrcctl.sock there too */
	char sock[108];            /* client socket */
	char ctl[108];             /* operator socket */
	unsigned port;             /* UDP port; port + 1 is free for a metrics listener */
};

/* out = this build's directory (B, for a test B/tests/x: from
 * /proc/self/exe), "/", rel: where the test finds what the build made
 * (B/bin/mrcd, B/lib/libnccl-net-mrc.so).  0, or -ENAMETOOLONG, -errno. */
int mrcd_spawn_build_path(char *out, size_t len, const char *rel);
/* The daemon binary (found once: mrcd_spawn_build_path "bin/mrcd"). */
const char *mrcd_spawn_bin(void);
/* 1 when the binary is built. */
int mrcd_spawn_available(void);
/* Starts mrcd with extra "--key=value" arguments (NULL-terminated, may be
 * NULL; "--metrics_listen=auto" listens on 127.0.0.1:port+1) and waits
 * until it answers a client; 0 or -errno. */
int mrcd_spawn_start(struct mrcd_proc *d, const char *const *extra);
/* SIGTERM, wait, remove what is left. */
void mrcd_spawn_stop(struct mrcd_proc *d);

/* The group fixture of tests that share one daemon (cmocka's group
 * setup/teardown): mrcd_group.have is 0 when mrcd is not built (each test
 * then skips: MRCD_GROUP_NEED()), else mrcd_group.d runs with
 * --max_clients=64. */
struct mrcd_group {
	struct mrcd_proc d;
	int have;
};
extern struct mrcd_group mrcd_group;
int mrcd_group_setup(void **state);
int mrcd_group_teardown(void **state);
#define MRCD_GROUP_NEED() \
	do { if (!mrcd_group.have) MRC_SKIP("build/bin/mrcd not built"); } while (0)

/* fork() for a child that acts as another local user (tests of the
 * sockets' access rules, run as root): the child takes uid, primary group
 * gid and the one supplementary group sgid (or _exits 90 when it cannot)
 * and returns 0 with *fd the write end of a pipe to the parent; the parent
 * gets the child's pid with *fd the read end.  -errno when pipe or fork
 * fails. */
pid_t mrcd_spawn_fork_as(uid_t uid, gid_t gid, gid_t sgid, int *fd);

/* For tests that run a core in their own process (mrcd_core_new): a
 * private directory /tmp/mrc-TAG.XXXXXX holding a fresh cluster key at
 * key.  0, or -errno (why on stderr); mrcd_keydir_remove takes both away. */
struct mrcd_keydir {
	char dir[64], key[96];
};
int mrcd_keydir_make(struct mrcd_keydir *k, const char *tag);
void mrcd_keydir_remove(struct mrcd_keydir *k);

/* A SOCK_SEQPACKET connection to one of mrcd's sockets: the fd, or -errno. */
int mrcd_spawn_connect(const char *path);
int64_t mrcd_spawn_now_ms(void);
/* Waits (bounded) for cond(arg), re-checking every 2 ms; -ETIMEDOUT. */
int mrcd_spawn_wait_for(int (*cond)(void *), void *arg, int ms);

#endif
