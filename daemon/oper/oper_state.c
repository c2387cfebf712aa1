/* Admin state that survives a restart: the planes an operator disabled
 * and the paths an operator denied are written to <state_dir>/admin.json
 * after every admin change and applied once at start (main.c, before
 * READY=1).  The codec is daemon/core/adminstate.c; this file does the
 * IO (bounded read, atomic write) and the applying, through the core's
 * mrcd_admin_plane / mrcd_admin_path like the admin verbs.
 *
 * A file that cannot be applied exactly (corrupt, for another host, or
 * naming a plane, peer or EV this topology does not have) is refused as a
 * whole and renamed aside (admin.json.bad-TIME, never deleted: the
 * operator may want what was in it); mrcd then starts with no admin state
 * and says so in the log, the event ring and `mrcctl status`. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "daemon/core/adminstate.h"
#include "daemon/oper/oper.h"

#define STATE_FILE "admin.json"

static void utc_now(char *buf, size_t len, const char *fmt)
{
	time_t t = time(NULL);
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(buf, len, fmt, &tm);
}

/* state_dir, else the first directory of $STATE_DIRECTORY (systemd's
 * StateDirectory=; a list separated by ':' when several are named). */
static void resolve(struct oper *o)
{
	struct oper_state *s = &o->state;
	const char *dir = mrcd_config(o->d)->state_dir;
	char env[MRCD_PATH_MAX] = "";
	if (!dir[0] && getenv("STATE_DIRECTORY")) {
		snprintf(env, sizeof(env), "%s", getenv("STATE_DIRECTORY"));
		env[strcspn(env, ":")] = 0;
		dir = env;
	}
	s->file[0] = 0;
	if (!dir[0])
		return;
	snprintf(s->dir, sizeof(s->dir), "%s", dir);
	snprintf(s->file, sizeof(s->file), "%s/" STATE_FILE, dir);
	/* systemd creates StateDirectory=; by hand the directory may be new */
	if (mkdir(dir, 0750) && errno != EEXIST)
		mrcd_log(MRCD_LOG_WARNING, "state_dir %s: %s (admin state cannot be kept)", dir,
			 strerror(errno));
}

/* Reads the whole file, at most MRCD_ADMIN_STATE_MAX_BYTES (one more byte
 * tells "too large").  -ENOENT when there is none. */
static int read_file(const char *path, char **out, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct stat st;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return -EINVAL;
	}
	char *buf = malloc(MRCD_ADMIN_STATE_MAX_BYTES + 1);
	size_t n = 0;
	int rc = buf ? 0 : -ENOMEM;
	while (!rc && n < MRCD_ADMIN_STATE_MAX_BYTES + 1) {
		ssize_t r = read(fd, buf + n, MRCD_ADMIN_STATE_MAX_BYTES + 1 - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			rc = -errno;
		else if (!r)
			break;
		else
			n += (size_t)r;
	}
	close(fd);
	if (rc) {
		free(buf);
		return rc;
	}
	*out = buf;
	*len = n;
	return 0;
}

/* Writes text to the state file atomically: a temporary file in the same
 * directory, fsync, rename over the old one, fsync the directory; a crash
 * leaves either the old file or the new one, never half of one. */
static int write_file(struct oper_state *s, const char *text, char *err, size_t errlen)
{
	char tmp[sizeof(s->file) + 16];
	snprintf(tmp, sizeof(tmp), "%s/." STATE_FILE ".XXXXXX", s->dir);
	int fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0) {
		snprintf(err, errlen, "create a temporary file in %s: %s", s->dir, strerror(errno));
		return -errno;
	}
	size_t len = strlen(text), off = 0;
	int rc = fchmod(fd, 0640) ? -errno : 0;
	while (!rc && off < len) {
		ssize_t w = write(fd, text + off, len - off);
		if (w < 0 && errno != EINTR)
			rc = -errno;
		else if (w > 0)
			off += (size_t)w;
	}
	if (!rc && fsync(fd))
		rc = -errno;
	if (close(fd) && !rc)
		rc = -errno;
	if (!rc && rename(tmp, s->file))
		rc = -errno;
	if (rc) {
		snprintf(err, errlen, "write %s: %s", s->file, strerror(-rc));
		unlink(tmp);
		return rc;
	}
	int dfd = open(s->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		fsync(dfd);
		close(dfd);
	}
	return 0;
}

/* Moves a refused file aside without replacing an earlier one. */
static void keep_aside(struct oper_state *s, char *kept, size_t len)
{
	char t[32];
	utc_now(t, sizeof(t), "%Y%m%dT%H%M%SZ");
	for (int i = 0; i < 100; i++) {
		if (i)
			snprintf(kept, len, "%s.bad-%s.%d", s->file, t, i);
		else
			snprintf(kept, len, "%s.bad-%s", s->file, t);
		if (!renameat2(AT_FDCWD, s->file, AT_FDCWD, kept, RENAME_NOREPLACE))
			return;
		if (errno != EEXIST)
			break;
	}
	snprintf(kept, len, "%s (could not be renamed: %s)", s->file, strerror(errno));
}

/* Checks every entry against this node's topology before applying any,
 * so a file is applied whole or not at all.  Fills peer[i] (engine peer
 * ids; creating a peer is what `path deny` does too). */
static int check(struct oper *o, const struct mrcd_admin_state *st, uint32_t *peer,
		 uint32_t *host, char *err, size_t errlen)
{
	struct mrcd *d = o->d;
	char self[64];
	mrcd_oper_host_name(d, mrcd_self_host(d), self, sizeof(self));
	if (strcmp(st->host, self)) {
		snprintf(err, errlen, "saved by host '%s', this is '%s'", st->host, self);
		return -EINVAL;
	}
	uint32_t nplanes = mrcd_n_planes(d);
	if (nplanes < 32 && st->planes >> nplanes) {
		snprintf(err, errlen, "'planes_disabled' names plane %d, this node has planes 0..%u",
			 31 - __builtin_clz(st->planes), nplanes - 1);
		return -EINVAL;
	}
	for (uint32_t i = 0; i < st->npaths; i++) {
		const struct mrcd_admin_path_ent *e = &st->paths[i];
		uint32_t h, p;
		if (mrcd_oper_find_host(d, e->peer, &h) || (mrcd_topology(d) && h == mrcd_self_host(d))) {
			snprintf(err, errlen, "'paths_denied'[%u]: '%s' is not a peer in the topology",
				 i, e->peer);
			return -EINVAL;
		}
		struct mrcd_peer_view pe;
		int rc = mrcd_peer_of_host(d, h, &p);
		if (!rc)
			rc = mrcd_peer_get(d, p, &pe);
		if (rc) {
			snprintf(err, errlen, "'paths_denied'[%u]: peer '%s': %s", i, e->peer,
				 strerror(-rc));
			return rc;
		}
		if (e->ev >= pe.nev || (pe.deny[e->ev] & MRCD_DENY_MISSING)) {
			snprintf(err, errlen, "'paths_denied'[%u]: peer '%s' has no path with ev %u",
				 i, e->peer, e->ev);
			return -EINVAL;
		}
		peer[i] = p;
		host[i] = h;
	}
	return 0;
}

static void refuse(struct oper *o, const char *why)
{
	struct oper_state *s = &o->state;
	char kept[sizeof(s->file) + 48];
	keep_aside(s, kept, sizeof(kept));
	if (snprintf(s->error, sizeof(s->error), "refused %s: %s; kept as %s", s->file, why,
		     kept) >= (int)sizeof(s->error))
		s->error[sizeof(s->error) - 2] = '~';   /* cut: the log has it whole */
	mrcd_oper_admin_note_at(o, MRCD_LOG_ERR, "admin: state file %s refused: %s; kept as %s; "
	     "starting with no admin state", s->file, why, kept);
}

static void apply(struct oper *o, const struct mrcd_admin_state *st, const uint32_t *peer,
		  const uint32_t *host)
{
	struct mrcd *d = o->d;
	struct oper_state *s = &o->state;
	for (uint32_t pl = 0; pl < mrcd_n_planes(d); pl++)
		if (st->planes >> pl & 1) {
			uint32_t np, nev;
			mrcd_admin_plane(d, pl, 1, &np, &nev);
		}
	for (uint32_t i = 0; i < st->npaths; i++) {
		mrcd_admin_path(d, peer[i], st->paths[i].ev, 1);
		s->paths[s->npaths++] = (struct oper_state_path){ host[i], st->paths[i].ev };
	}
	mrcd_flush(d);
	s->restored = 1;
	s->planes = st->planes;
	snprintf(s->saved, sizeof(s->saved), "%s", st->saved);
	char pls[80] = "";
	for (uint32_t pl = 0, n = 0; pl < mrcd_n_planes(d); pl++)
		if (st->planes >> pl & 1)
			n += (uint32_t)snprintf(pls + n, sizeof(pls) - n, "%s%u", n ? "," : "", pl);
	mrcd_oper_admin_note_at(o, MRCD_LOG_NOTICE, "admin: restored from %s: planes [%s] disabled, %u path%s denied "
	     "(saved %s)", s->file, pls, st->npaths, st->npaths == 1 ? "" : "s", st->saved);
}

void mrcd_oper_state_restore(struct oper *o)
{
	struct oper_state *s = &o->state;
	resolve(o);
	if (!s->file[0])
		return;
	char *text = NULL, err[512] = "";
	size_t len = 0;
	int rc = read_file(s->file, &text, &len);
	if (rc == -ENOENT) {
		mrcd_log(MRCD_LOG_INFO, "admin state: no %s yet (nothing to restore)", s->file);
		return;
	}
	if (rc) {
		snprintf(err, sizeof(err), "cannot read it: %s", strerror(-rc));
		/* A file we cannot read is not renamed (it may be a permission
		 * problem to fix); saves will replace it. */
		if (snprintf(s->error, sizeof(s->error), "refused %s: %s", s->file, err) >=
		    (int)sizeof(s->error))
			s->error[sizeof(s->error) - 2] = '~';   /* cut: the log has it whole */
		mrcd_oper_admin_note_at(o, MRCD_LOG_ERR, "admin: state file %s %s; starting with no admin state",
		     s->file, err);
		return;
	}
	struct mrcd_admin_state st;
	rc = mrcd_admin_state_parse(text, len, &st, err, sizeof(err));
	free(text);
	uint32_t *peer = NULL, *host = NULL;
	if (!rc) {
		peer = calloc(st.npaths + 1, sizeof(*peer));
		host = calloc(st.npaths + 1, sizeof(*host));
		s->paths = calloc(st.npaths + 1, sizeof(*s->paths));
		if (!peer || !host || !s->paths) {
			snprintf(err, sizeof(err), "out of memory");
			rc = -ENOMEM;
		}
	}
	if (!rc)
		rc = check(o, &st, peer, host, err, sizeof(err));
	if (rc)
		refuse(o, err);
	else
		apply(o, &st, peer, host);
	free(peer);
	free(host);
	mrcd_admin_state_free(&st);
}

void mrcd_oper_state_fini(struct oper *o)
{
	free(o->state.paths);
	o->state.paths = NULL;
	o->state.npaths = 0;
}

/* Forgets "restored" marks an operator has undone since. */
static void prune(struct oper *o)
{
	struct mrcd *d = o->d;
	struct oper_state *s = &o->state;
	s->planes &= mrcd_admin_planes(d);
	uint32_t k = 0;
	for (uint32_t i = 0; i < s->npaths; i++) {
		struct mrcd_peer_view pe;
		if (!mrcd_peer_get(d, mrcd_peer_find(d, s->paths[i].host), &pe) &&
		    s->paths[i].ev < pe.nev && (pe.deny[s->paths[i].ev] & MRCD_DENY_ADMIN_PATH))
			s->paths[k++] = s->paths[i];
	}
	s->npaths = k;
}

/* Called after every admin verb that changed something.  The write is
 * synchronous in the event loop: admin changes are rare operator actions
 * and the file is a few hundred bytes, so one fsync'd write (a few ms at
 * worst) is cheaper than the machinery to move it off the loop, and the
 * verb's reply then means the change is on disk. */
void mrcd_oper_state_save(struct oper *o)
{
	struct mrcd *d = o->d;
	struct oper_state *s = &o->state;
	prune(o);
	if (!s->file[0])
		return;
	struct mrcd_admin_state st = { .planes = mrcd_admin_planes(d) };
	mrcd_oper_host_name(d, mrcd_self_host(d), st.host, sizeof(st.host));
	utc_now(st.saved, sizeof(st.saved), "%Y-%m-%dT%H:%M:%SZ");
	int rc = 0;
	struct mrcd_peer_view pe;
	for (uint32_t it = 0; !rc && mrcd_peer_next(d, &it, &pe);) {
		for (uint32_t ev = 0; ev < pe.nev && !rc; ev++)
			if (pe.deny[ev] & MRCD_DENY_ADMIN_PATH) {
				char name[64];
				rc = mrcd_admin_state_add_path(&st, mrcd_oper_host_name(d, pe.host, name,
									       sizeof(name)), ev);
			}
	}
	char *text = NULL, err[512] = "";
	if (rc)
		snprintf(err, sizeof(err), "%s", rc == -EFBIG ? "too many denied paths" : strerror(-rc));
	else
		rc = mrcd_admin_state_format(&st, &text, err, sizeof(err));
	if (!rc)
		rc = write_file(s, text, err, sizeof(err));
	free(text);
	mrcd_admin_state_free(&st);
	if (rc) {
		snprintf(s->save_error, sizeof(s->save_error), "%s", err);
		mrcd_oper_admin_note_at(o, MRCD_LOG_ERR, "admin: state not saved: %s (it holds until mrcd stops)", err);
	} else {
		s->save_error[0] = 0;
	}
}

int mrcd_oper_state_path_restored(struct oper *o, uint32_t host, uint32_t ev)
{
	for (uint32_t i = 0; i < o->state.npaths; i++)
		if (o->state.paths[i].host == host && o->state.paths[i].ev == ev)
			return 1;
	return 0;
}

json_t *mrcd_oper_state_json(struct oper *o)
{
	struct oper_state *s = &o->state;
	prune(o);
	json_t *pl = json_array();
	for (uint32_t i = 0; i < mrcd_n_planes(o->d); i++)
		if (s->planes >> i & 1)
			json_array_append_new(pl, json_integer(i));
	json_t *j = json_pack("{s:s, s:b, s:b, s:s, s:o, s:i}", "file", s->file,
			      "persisted", s->file[0] != 0, "restored", s->restored,
			      "saved", s->saved, "planes_disabled", pl, "paths_denied",
			      (int)s->npaths);
	if (j && s->error[0])
		json_object_set_new(j, "error", json_string(s->error));
	if (j && s->save_error[0])
		json_object_set_new(j, "save_error", json_string(s->save_error));
	return j;
}
