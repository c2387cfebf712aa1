/* What a running fabric remembers between commands: its topology and
 * options (/run/mrc-fabric/PREFIX/state.json) and the faults applied since
 * the last restore (.../faults, one line each, for `show`). */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tools/fabric/fabric.h"

int fab_prefix_check(const char *p)
{
	size_t n = strlen(p);
	if (n == 0 || n > FAB_PREFIX_MAX)
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		if (!((p[i] >= 'a' && p[i] <= 'z') || (p[i] >= 'A' && p[i] <= 'Z') ||
		      (p[i] >= '0' && p[i] <= '9') || p[i] == '_'))
			return -EINVAL;
	return 0;
}

void fab_state_dir(const char *prefix, char *buf, size_t len)
{
	snprintf(buf, len, FAB_STATE_ROOT "/%s", prefix);
}

static void state_file(const char *prefix, const char *name, char *buf, size_t len)
{
	snprintf(buf, len, FAB_STATE_ROOT "/%s/%s", prefix, name);
}

int fab_state_save(const struct fab *f)
{
	char dir[128], path[160], tmp[168], *topo = NULL;
	fab_state_dir(f->prefix, dir, sizeof(dir));
	if ((mkdir(FAB_STATE_ROOT, 0755) && errno != EEXIST) ||
	    (mkdir(dir, 0755) && errno != EEXIST))
		return -errno;
	int rc = mrc_topo_to_json(f->t, &topo);
	if (rc)
		return rc;
	json_error_t je;
	json_t *root = json_pack("{s:b, s:o}", "ecmp", f->ecmp, "topology",
				 json_loads(topo, 0, &je));
	free(topo);
	if (!root)
		return -ENOMEM;
	state_file(f->prefix, "state.json", path, sizeof(path));
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	rc = json_dump_file(root, tmp, JSON_COMPACT);
	json_decref(root);
	if (rc || rename(tmp, path))
		return -EIO;
	return 0;
}

int fab_state_load(struct fab *f)
{
	char path[160], err[MRC_TOPO_ERRLEN];
	state_file(f->prefix, "state.json", path, sizeof(path));
	json_error_t je;
	json_t *root = json_load_file(path, 0, &je);
	if (!root) {
		if (access(path, F_OK))
			fab_err("no fabric '%s' is up (no %s); run `mrc-fabric up TOPO` first",
				f->prefix, path);
		else
			fab_err("%s: line %d: %s", path, je.line, je.text);
		return -ENOENT;
	}
	json_t *topo = json_object_get(root, "topology");
	char *text = topo ? json_dumps(topo, JSON_COMPACT) : NULL;
	f->ecmp = json_is_true(json_object_get(root, "ecmp"));
	json_decref(root);
	if (!text) {
		fab_err("%s: no topology in it", path);
		return -EINVAL;
	}
	int rc = mrc_topo_parse_json(text, strlen(text), &f->t, err, sizeof(err));
	free(text);
	if (rc)
		fab_err("%s: %s", path, err);
	return rc;
}

int fab_state_remove(const char *prefix)
{
	char dir[128], path[160];
	static const char *const files[] = { "state.json", "state.json.tmp", "faults" };
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		state_file(prefix, files[i], path, sizeof(path));
		unlink(path);
	}
	fab_state_dir(prefix, dir, sizeof(dir));
	if (rmdir(dir) && errno != ENOENT)
		return -errno;
	return 0;
}

int fab_ledger_add(const struct fab *f, const char *line)
{
	char path[160];
	state_file(f->prefix, "faults", path, sizeof(path));
	FILE *fp = fopen(path, "a");
	if (!fp)
		return -errno;
	fprintf(fp, "%s\n", line);
	return fclose(fp) ? -EIO : 0;
}

char **fab_ledger_read(const struct fab *f)
{
	char path[160], line[256];
	state_file(f->prefix, "faults", path, sizeof(path));
	size_t n = 0;
	char **v = calloc(1, sizeof(char *));
	FILE *fp = fopen(path, "r");
	if (!fp || !v)
		goto out;
	while (fgets(line, sizeof(line), fp)) {
		line[strcspn(line, "\n")] = 0;
		char **nv = realloc(v, (n + 2) * sizeof(char *));
		if (!nv)
			break;
		v = nv;
		if (!(v[n] = strdup(line)))
			break;
		v[++n] = NULL;
	}
out:
	if (fp)
		fclose(fp);
	return v;
}

void fab_ledger_free(char **lines)
{
	for (size_t i = 0; lines && lines[i]; i++)
		free(lines[i]);
	free(lines);
}

int fab_ledger_clear(const struct fab *f)
{
	char path[160];
	state_file(f->prefix, "faults", path, sizeof(path));
	return unlink(path) && errno != ENOENT ? -errno : 0;
}
