/* Spawning a loopback mrcd for tests (mrcd_spawn.h). */
#include <errno.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "auth/auth.h"
#include "mrc/mrc.h"
#include "tests/support/mrcd_spawn.h"

static char bin[4096] = "build/bin/mrcd";

int mrcd_spawn_build_path(char *out, size_t len, const char *rel)
{
	char exe[4000];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return n < 0 ? -errno : -ENOENT;
	exe[n] = 0;
	for (int i = 0; i < 2; i++) {   /* B/tests/x -> B */
		char *sl = strrchr(exe, '/');
		if (!sl)
			return -ENOENT;
		*sl = 0;
	}
	int k = snprintf(out, len, "%s/%s", exe, rel);
	return k < 0 || (size_t)k >= len ? -ENAMETOOLONG : 0;
}

const char *mrcd_spawn_bin(void)
{
	static int found;
	char b[sizeof(bin)];
	if (!found++ && !mrcd_spawn_build_path(b, sizeof(b), "bin/mrcd"))
		memcpy(bin, b, sizeof(bin));
	return bin;
}

pid_t mrcd_spawn_fork_as(uid_t uid, gid_t gid, gid_t sgid, int *fd)
{
	int p[2];
	if (pipe(p))
		return -errno;
	pid_t pid = fork();
	if (pid < 0) {
		int e = -errno;
		close(p[0]);
		close(p[1]);
		return e;
	}
	if (pid == 0) {
		close(p[0]);
		if (setgroups(1, &sgid) || setresgid(gid, gid, gid) || setresuid(uid, uid, uid))
			_exit(90);
		*fd = p[1];
		return 0;
	}
	close(p[1]);
	*fd = p[0];
	return pid;
}

int mrcd_spawn_available(void)
{
	return !access(mrcd_spawn_bin(), X_OK);
}

int64_t mrcd_spawn_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int mrcd_spawn_wait_for(int (*cond)(void *), void *arg, int ms)
{
	int64_t end = mrcd_spawn_now_ms() + ms;
	while (!cond(arg)) {
		if (mrcd_spawn_now_ms() > end)
			return -ETIMEDOUT;
		poll(NULL, 0, 2);
	}
	return 0;
}

static int daemon_up(void *arg)
{
	struct mrcd_proc *d = arg;
	struct mrc_ctx *c;
	if (mrc_open(d->sock, &c))
		return 0;
	mrc_close(c);
	return 1;
}

/* Whether this mrcd takes a cluster key (--help lists key_file): asked
 * once, so the tests run before and after the key becomes mandatory. */
static int wants_key(void)
{
	static int known = -1;
	if (known >= 0)
		return known;
	char cmd[4200];
	snprintf(cmd, sizeof(cmd), "'%s' --help 2>&1", mrcd_spawn_bin());
	FILE *p = popen(cmd, "r");
	char line[512];
	known = 0;
	while (p && fgets(line, sizeof(line), p))
		if (strstr(line, "--key_file"))
			known = 1;
	if (p)
		pclose(p);
	return known;
}

/* Up, or the daemon exited first (its port taken, say): either ends the
 * wait; gone says which. */
struct up_or_gone { struct mrcd_proc *d; int gone; };
static int up_or_gone(void *arg)
{
	struct up_or_gone *u = arg;
	if (waitpid(u->d->pid, NULL, WNOHANG) == u->d->pid)
		return u->gone = 1;
	return daemon_up(u->d);
}

/* Starts mrcd on d->port and waits until it serves; *gone: it exited
 * first instead (its port held by another run, say). */
static int spawn_once(struct mrcd_proc *d, const char *const *extra, const char *key, int *gone)
{
	const char *argv[48];
	int k = 0;
	char sock[140], port[32], metrics[64];
	snprintf(sock, sizeof(sock), "--socket=%s", d->sock);
	snprintf(port, sizeof(port), "--port=%u", d->port);
	argv[k++] = "mrcd";
	argv[k++] = sock;
	argv[k++] = port;
	argv[k++] = "--log_level=warning";
	if (key[0])
		argv[k++] = key;
	snprintf(metrics, sizeof(metrics), "--metrics_listen=127.0.0.1:%u", d->port + 1);
	for (int i = 0; extra && extra[i] && k < 47; i++)
		argv[k++] = strcmp(extra[i], "--metrics_listen=auto") ? extra[i] : metrics;
	argv[k] = NULL;
	d->pid = fork();
	if (d->pid < 0)
		return -errno;
	if (d->pid == 0) {
		/* No -c: a missing default config means built-in defaults. */
		execv(mrcd_spawn_bin(), (char *const *)argv);
		_exit(127);
	}
	struct up_or_gone u = { d, 0 };
	if (mrcd_spawn_wait_for(up_or_gone, &u, MRCD_SPAWN_WAIT_MS)) {
		kill(d->pid, SIGKILL);
		waitpid(d->pid, NULL, 0);
		d->pid = 0;
		return -ETIMEDOUT;
	}
	if (u.gone)
		d->pid = 0;
	*gone = u.gone;
	return 0;
}

int mrcd_keydir_make(struct mrcd_keydir *k, const char *tag)
{
	snprintf(k->dir, sizeof(k->dir), "/tmp/mrc-%s.XXXXXX", tag);
	if (!mkdtemp(k->dir))
		return -errno;
	snprintf(k->key, sizeof(k->key), "%s/cluster.key", k->dir);
	const char *why = "";
	if (mrc_auth_key_generate(k->key, &why)) {
		fprintf(stderr, "%s: %s\n", k->key, why);
		rmdir(k->dir);
		return -EIO;
	}
	return 0;
}

void mrcd_keydir_remove(struct mrcd_keydir *k)
{
	unlink(k->key);
	rmdir(k->dir);
}

int mrcd_spawn_start(struct mrcd_proc *d, const char *const *extra)
{
	static unsigned n;
	memset(d, 0, sizeof(*d));
	snprintf(d->dir, sizeof(d->dir), "/tmp/mrc-test-XXXXXX");
	if (!mkdtemp(d->dir))
		return -errno;
	snprintf(d->sock, sizeof(d->sock), "%s/mrcd.sock", d->dir);
	snprintf(d->ctl, sizeof(d->ctl), "%s/mrcctl.sock", d->dir);
	char key[160] = "";
	if (wants_key()) {
		const char *why;
		char path[100];
		snprintf(path, sizeof(path), "%s/cluster.key", d->dir);
		if (mrc_auth_key_generate(path, &why))
			return -EIO;
		snprintf(key, sizeof(key), "--key_file=%s", path);
	}
	/* A port of our own, so parallel test runs do not collide.  mrcd
	 * binds it exclusively (no SO_REUSEADDR): when another run holds it,
	 * mrcd exits and the next port is tried. */
	for (int attempt = 0; attempt < 8; attempt++) {
		n++;
		d->port = 20000 + 2 * (unsigned)((getpid() * 7 + n) % 10000);
		int gone = 0, rc = spawn_once(d, extra, key, &gone);
		if (rc || !gone) {
			if (rc)
				mrcd_spawn_stop(d);
			return rc;
		}
	}
	mrcd_spawn_stop(d);
	return -EADDRINUSE;
}

void mrcd_spawn_stop(struct mrcd_proc *d)
{
	if (d->pid > 0) {
		kill(d->pid, SIGTERM);
		waitpid(d->pid, NULL, 0);
		d->pid = 0;
	}
	/* whatever a killed daemon left behind, then the directory */
	char path[160];
	unlink(d->sock);
	unlink(d->ctl);
	snprintf(path, sizeof(path), "%s/cluster.key", d->dir);
	unlink(path);
	rmdir(d->dir);
}

struct mrcd_group mrcd_group;

int mrcd_group_setup(void **state)
{
	(void)state;
	mrcd_group.have = mrcd_spawn_available();
	if (!mrcd_group.have)
		return 0;
	const char *argv[] = { "--max_clients=64", NULL };
	return mrcd_spawn_start(&mrcd_group.d, argv);
}

int mrcd_group_teardown(void **state)
{
	(void)state;
	if (mrcd_group.have)
		mrcd_spawn_stop(&mrcd_group.d);
	return 0;
}

int mrcd_spawn_connect(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int r = -errno;
		close(fd);
		return r;
	}
	return fd;
}
