/* Helpers of the daemon benchmarks (bench_ring, bench_qpmem): start a
 * private mrcd on loopback (no topology: the single-host fabric), read a
 * process's memory counters, percentiles.  Header-only, benchmarks only. */
#ifndef MRC_BENCH_MRCD_H
#define MRC_BENCH_MRCD_H

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "auth/auth.h"
#include "common/clock.h"

static inline uint64_t bm_now_ns(void)
{
	return mrc__mono_ns();
}

/* A spin-wait hint to the CPU. */
static inline void bm_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ volatile("yield");
#endif
}

static inline void bm_pause_us(unsigned us)
{
	struct timespec ts = { .tv_sec = us / 1000000, .tv_nsec = (long)(us % 1000000) * 1000 };
	nanosleep(&ts, NULL);
}

static inline int bm_cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* Sorts v in place; returns the q-quantile (0..1). */
static inline uint64_t bm_quantile(uint64_t *v, size_t n, double q, int sorted)
{
	if (!n)
		return 0;
	if (!sorted)
		qsort(v, n, sizeof(*v), bm_cmp_u64);
	size_t i = (size_t)(q * (double)(n - 1) + 0.5);
	return v[i < n ? i : n - 1];
}

static inline int bm_cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* "median (min..max)" of n values, with printf format fmt for each. */
static inline const char *bm_spread(char *buf, size_t len, const double *v, int n,
				    const char *fmt)
{
	double s[64];
	int k = n < 64 ? n : 64;
	memcpy(s, v, sizeof(double) * (size_t)k);
	qsort(s, (size_t)k, sizeof(double), bm_cmp_dbl);
	char a[24], b[24], c[24];
	snprintf(a, sizeof(a), fmt, s[k / 2]);
	snprintf(b, sizeof(b), fmt, s[0]);
	snprintf(c, sizeof(c), fmt, s[k - 1]);
	snprintf(buf, len, "%s (%s..%s)", a, b, c);
	return buf;
}

static inline void bm_machine(char *buf, size_t len)
{
	char model[128] = "unknown CPU", line[256];
	FILE *f = fopen("/proc/cpuinfo", "r");
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "model name", 10)) {
			char *p = strchr(line, ':');
			if (p) {
				snprintf(model, sizeof(model), "%s", p + 2);
				model[strcspn(model, "\n")] = 0;
			}
			break;
		}
	if (f)
		fclose(f);
	struct utsname u;
	uname(&u);
	time_t t = time(NULL);
	char date[32];
	strftime(date, sizeof(date), "%Y-%m-%d %H:%M UTC", gmtime(&t));
	double la[3] = { 0, 0, 0 };
	getloadavg(la, 3);
	snprintf(buf, len, "%s, %ld CPUs, kernel %s; %s; load average at start %.2f",
		 model, sysconf(_SC_NPROCESSORS_ONLN), u.release, date, la[0]);
}

/* A value of /proc/PID/status in kB ("VmRSS", "RssAnon", ...); -1 if absent. */
static inline long bm_status_kb(pid_t pid, const char *key)
{
	char path[64], line[256];
	size_t kl = strlen(key);
	long v = -1;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	FILE *f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, key, kl) && line[kl] == ':') {
			v = strtol(line + kl + 1, NULL, 10);
			break;
		}
	if (f)
		fclose(f);
	return v;
}

/* Open file descriptors of a process. */
static inline long bm_nfds(pid_t pid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	long n = 0;
	FILE *p;
	char cmd[96];
	snprintf(cmd, sizeof(cmd), "ls %s 2>/dev/null | wc -l", path);
	if ((p = popen(cmd, "r"))) {
		if (fscanf(p, "%ld", &n) != 1)
			n = -1;
		pclose(p);
	}
	return n;
}

/* user+system CPU seconds of a process so far. */
static inline double bm_cpu_s(pid_t pid)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	char *p = strrchr(buf, ')');
	unsigned long ut = 0, st = 0;
	/* after ") ": state ppid pgrp session tty tpgid flags minflt cminflt
	 * majflt cmajflt utime stime */
	if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut,
			 &st) != 2)
		return -1;
	return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

struct bm_mrcd {
	pid_t pid;
	char dir[64];
	char sock[128];
};

/* The mrcd next to this benchmark (BUILD/bench/x -> BUILD/bin/mrcd), or
 * $MRCD_BIN. */
static inline int bm_mrcd_path(char *buf, size_t len)
{
	const char *e = getenv("MRCD_BIN");
	if (e) {
		snprintf(buf, len, "%s", e);
	} else {
		char self[PATH_MAX - 16];
		ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
		if (n <= 0)
			return -1;
		self[n] = 0;
		char *s = strrchr(self, '/');
		if (!s)
			return -1;
		*s = 0;
		snprintf(buf, len, "%s/../bin/mrcd", self);
	}
	return access(buf, X_OK);
}

/* Starts mrcd on loopback with its socket in a fresh temporary directory
 * and the extra --key=value options given (NULL-terminated); waits for the
 * socket (at most 10 s).  The daemon gets SIGTERM if we die (PDEATHSIG),
 * so an interrupted benchmark leaves nothing behind. */
static inline int bm_mrcd_start(struct bm_mrcd *d, const char *const *extra)
{
	char bin[PATH_MAX];
	if (bm_mrcd_path(bin, sizeof(bin))) {
		fprintf(stderr, "bench: mrcd not found at %s (make; or set MRCD_BIN)\n", bin);
		return -1;
	}
	snprintf(d->dir, sizeof(d->dir), "/tmp/mrcbench-mrcd.XXXXXX");
	if (!mkdtemp(d->dir))
		return -1;
	snprintf(d->sock, sizeof(d->sock), "%s/mrcd.sock", d->dir);
	char sockopt[160], portopt[32], keyopt[160];
	snprintf(sockopt, sizeof(sockopt), "--socket=%s", d->sock);
	/* mrcd refuses to start without a cluster key: one of our own. */
	snprintf(keyopt, sizeof(keyopt), "--key_file=%s/cluster.key", d->dir);
	const char *why = "";
	if (mrc_auth_key_generate(keyopt + strlen("--key_file="), &why)) {
		fprintf(stderr, "bench: cluster key: %s\n", why);
		return -1;
	}
	/* A port of our own: other mrcd instances (tests) may run on loopback. */
	snprintf(portopt, sizeof(portopt), "--port=%u", 40000 + (unsigned)(getpid() % 20000));
	const char *argv[32] = { "mrcd", sockopt, portopt, "--log_level=err", "--config=/dev/null",
				 keyopt };
	int n = 6;
	for (int i = 0; extra && extra[i] && n < 31; i++)
		argv[n++] = extra[i];
	argv[n] = NULL;
	pid_t parent = getpid();
	d->pid = fork();
	if (d->pid < 0)
		return -1;
	if (d->pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		if (getppid() != parent)
			_exit(1);
		execv(bin, (char *const *)argv);
		_exit(127);
	}
	for (int i = 0; i < 1000; i++) {
		struct stat st;
		if (stat(d->sock, &st) == 0)
			return 0;
		int status;
		if (waitpid(d->pid, &status, WNOHANG) == d->pid) {
			fprintf(stderr, "bench: mrcd exited at start (status %d)\n", status);
			d->pid = 0;
			return -1;
		}
		usleep(10000);
	}
	fprintf(stderr, "bench: mrcd socket %s did not appear\n", d->sock);
	return -1;
}

static inline void bm_mrcd_stop(struct bm_mrcd *d)
{
	if (d->pid > 0) {
		kill(d->pid, SIGTERM);
		int status;
		for (int i = 0; i < 500 && waitpid(d->pid, &status, WNOHANG) == 0; i++)
			usleep(10000);
		if (waitpid(d->pid, &status, WNOHANG) == 0) {
			kill(d->pid, SIGKILL);
			waitpid(d->pid, &status, 0);
		}
		d->pid = 0;
	}
	char p[200];
	snprintf(p, sizeof(p), "%s/mrcd.sock", d->dir);
	unlink(p);
	snprintf(p, sizeof(p), "%s/mrcctl.sock", d->dir);
	unlink(p);
	snprintf(p, sizeof(p), "%s/cluster.key", d->dir);
	unlink(p);
	rmdir(d->dir);
}

/* Raises RLIMIT_NOFILE to want (or as far as allowed); returns the limit. */
static inline long bm_raise_nofile(long want)
{
	struct rlimit r;
	getrlimit(RLIMIT_NOFILE, &r);
	if ((long)r.rlim_cur >= want)
		return (long)r.rlim_cur;
	struct rlimit n = { (rlim_t)want, r.rlim_max > (rlim_t)want ? r.rlim_max : (rlim_t)want };
	if (setrlimit(RLIMIT_NOFILE, &n)) {
		n.rlim_cur = r.rlim_max;
		n.rlim_max = r.rlim_max;
		setrlimit(RLIMIT_NOFILE, &n);
	}
	getrlimit(RLIMIT_NOFILE, &r);
	return (long)r.rlim_cur;
}

#endif
