/* Namespaces of one fabric, and child processes (ip, tc, nft) run inside
 * them in parallel. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tools/fabric/fabric.h"

#define NETNS_DIR "/run/netns"

void fab_ns_name(const struct fab *f, uint32_t node, char out[FAB_NS_MAX])
{
	snprintf(out, FAB_NS_MAX, "%s-%s", f->prefix, f->t->nodes[node].name);
}

int fab_ns_list(const char *prefix, char ***names, size_t *n)
{
	size_t plen = strlen(prefix), cap = 0;
	*names = NULL;
	*n = 0;
	DIR *d = opendir(NETNS_DIR);
	if (!d)
		return errno == ENOENT ? 0 : -errno;
	struct dirent *e;
	while ((e = readdir(d))) {
		/* "PREFIX-" exactly: prefix "mrc" must not match "mrcT-h0". */
		if (strncmp(e->d_name, prefix, plen) || e->d_name[plen] != '-')
			continue;
		if (*n == cap) {
			cap = cap ? cap * 2 : 64;
			char **nn = realloc(*names, cap * sizeof(char *));
			if (!nn)
				goto oom;
			*names = nn;
		}
		if (!((*names)[*n] = strdup(e->d_name)))
			goto oom;
		(*n)++;
	}
	closedir(d);
	return 0;
oom:
	closedir(d);
	fab_ns_list_free(*names, *n);
	*names = NULL;
	*n = 0;
	return -ENOMEM;
}

void fab_ns_list_free(char **names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

static int ns_open(const char *name)
{
	char path[sizeof(NETNS_DIR) + FAB_NS_MAX + 1];
	snprintf(path, sizeof(path), NETNS_DIR "/%s", name);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

int fab_ns_enter(const char *name, int *saved)
{
	int fd = ns_open(name);
	if (fd < 0)
		return fd;
	int rc = mrc_nl_netns_enter(fd, saved);
	close(fd);
	return rc;
}

void fab_ns_leave(int saved)
{
	if (mrc_nl_netns_leave(saved)) {
		/* Staying in a fabric namespace would misdirect everything after. */
		fab_err("cannot return to the original network namespace");
		abort();
	}
}

struct job {
	pid_t pid;
	char what[64];
};

struct fab_jobs {
	struct job *v;
	size_t n, cap;
	int failed;
};

struct fab_jobs *fab_jobs_new(void)
{
	return calloc(1, sizeof(struct fab_jobs));
}

int fab_job_start(struct fab_jobs *j, const char *ns, char *const argv[],
		  const struct sbuf *input, bool quiet, const char *what)
{
	if (j->n == j->cap) {
		size_t cap = j->cap ? j->cap * 2 : 64;
		struct job *v = realloc(j->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		j->v = v;
		j->cap = cap;
	}
	/* The batch goes through a memfd: the child reads it as stdin at its
	 * own pace, and no parent write can block on a full pipe. */
	int in = memfd_create("mrc-fabric-batch", MFD_CLOEXEC);
	if (in < 0)
		return -errno;
	if (input && input->len && write(in, input->p, input->len) != (ssize_t)input->len) {
		close(in);
		return -EIO;
	}
	int nsfd = -1;
	if (ns && (nsfd = ns_open(ns)) < 0) {
		close(in);
		return nsfd;
	}
	pid_t pid = fork();
	if (pid < 0) {
		int e = -errno;
		close(in);
		if (nsfd >= 0)
			close(nsfd);
		return e;
	}
	if (pid == 0) {
		if (nsfd >= 0 && setns(nsfd, CLONE_NEWNET) < 0)
			_exit(126);
		lseek(in, 0, SEEK_SET);
		dup2(in, 0);
		if (quiet) {
			int nul = open("/dev/null", O_WRONLY);
			if (nul >= 0)
				dup2(nul, 2);
		}
		execvp(argv[0], argv);
		_exit(127);
	}
	close(in);
	if (nsfd >= 0)
		close(nsfd);
	struct job *x = &j->v[j->n++];
	x->pid = pid;
	snprintf(x->what, sizeof(x->what), "%s", what);
	return 0;
}

int fab_jobs_wait(struct fab_jobs *j)
{
	int bad = 0;
	for (size_t i = 0; i < j->n; i++) {
		int st;
		while (waitpid(j->v[i].pid, &st, 0) < 0 && errno == EINTR)
			;
		if (!WIFEXITED(st) || WEXITSTATUS(st)) {
			fab_err("%s failed (%s %d)", j->v[i].what,
				WIFEXITED(st) ? "exit" : "signal",
				WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
			bad = 1;
		}
	}
	free(j->v);
	free(j);
	return bad ? -EIO : 0;
}

int fab_run(const char *ns, char *const argv[], const struct sbuf *input,
	    bool quiet, const char *what)
{
	struct fab_jobs *j = fab_jobs_new();
	if (!j)
		return -ENOMEM;
	int rc = fab_job_start(j, ns, argv, input, quiet, what);
	int rc2 = fab_jobs_wait(j);
	return rc ? rc : rc2;
}
