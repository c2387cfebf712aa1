/* The admin state file's codec (adminstate.h), on jansson.  Strict on
 * purpose: the file steers which paths carry traffic, so anything that is
 * not exactly what mrcd writes is refused rather than half applied. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/core/adminstate.h"
#include "transport/engine.h"   /* MRCE_MAX_PLANES, MRCE_MAX_EVS */

static int name_ok(const char *s)
{
	size_t n = strlen(s);
	if (!n || n >= MRCD_ADMIN_STATE_NAME)
		return 0;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x21 || (unsigned char)s[i] > 0x7e)
			return 0;
	return 1;
}

void mrcd_admin_state_free(struct mrcd_admin_state *s)
{
	free(s->paths);
	memset(s, 0, sizeof(*s));
}

int mrcd_admin_state_add_path(struct mrcd_admin_state *s, const char *peer, uint32_t ev)
{
	if (s->npaths >= MRCD_ADMIN_STATE_MAX_PATHS)
		return -EFBIG;
	struct mrcd_admin_path_ent *p = realloc(s->paths, (s->npaths + 1) * sizeof(*p));
	if (!p)
		return -ENOMEM;
	s->paths = p;
	snprintf(p[s->npaths].peer, sizeof(p[s->npaths].peer), "%s", peer);
	p[s->npaths++].ev = ev;
	return 0;
}

/* A string member: present, a string, a valid name (or, for "saved", any
 * printable text that fits). */
static int get_str(json_t *o, const char *key, int is_name, char *dst, size_t len,
		   const char *where, char *err, size_t errlen)
{
	json_t *v = json_object_get(o, key);
	if (!v) {
		snprintf(err, errlen, "%s'%s' is missing", where, key);
		return -EINVAL;
	}
	if (!json_is_string(v)) {
		snprintf(err, errlen, "%s'%s' is not a string", where, key);
		return -EINVAL;
	}
	const char *s = json_string_value(v);
	if (json_string_length(v) != strlen(s) || strlen(s) >= len ||
	    (is_name && !name_ok(s))) {
		snprintf(err, errlen, "%s'%s' is not a valid %s (1..%zu printable characters)",
			 where, key, is_name ? "name" : "value", len - 1);
		return -EINVAL;
	}
	snprintf(dst, len, "%s", s);
	return 0;
}

/* Refuses keys other than the allowed ones (a typo must not be ignored). */
static int only_keys(json_t *o, const char *const *allowed, const char *where,
		     char *err, size_t errlen)
{
	const char *k;
	json_t *v;
	json_object_foreach(o, k, v) {
		int ok = 0;
		for (const char *const *a = allowed; *a; a++)
			ok |= !strcmp(k, *a);
		if (!ok) {
			snprintf(err, errlen, "%sunknown key '%.64s'", where, k);
			return -EINVAL;
		}
	}
	return 0;
}

static int parse_planes(json_t *a, struct mrcd_admin_state *s, char *err, size_t errlen)
{
	if (!json_is_array(a)) {
		snprintf(err, errlen, "'planes_disabled' is %s, not an array",
			 a ? "of the wrong type" : "missing");
		return -EINVAL;
	}
	size_t i;
	json_t *v;
	json_array_foreach(a, i, v) {
		json_int_t p = json_is_integer(v) ? json_integer_value(v) : -1;
		if (p < 0 || p >= MRCE_MAX_PLANES) {
			snprintf(err, errlen, "'planes_disabled'[%zu] is not a plane number 0..%d",
				 i, MRCE_MAX_PLANES - 1);
			return -EINVAL;
		}
		if (s->planes >> p & 1) {
			snprintf(err, errlen, "'planes_disabled'[%zu]: plane %lld is listed twice",
				 i, (long long)p);
			return -EINVAL;
		}
		s->planes |= 1u << p;
	}
	return 0;
}

static int parse_paths(json_t *a, struct mrcd_admin_state *s, char *err, size_t errlen)
{
	static const char *const keys[] = { "peer", "ev", NULL };
	if (!json_is_array(a)) {
		snprintf(err, errlen, "'paths_denied' is %s, not an array",
			 a ? "of the wrong type" : "missing");
		return -EINVAL;
	}
	if (json_array_size(a) > MRCD_ADMIN_STATE_MAX_PATHS) {
		snprintf(err, errlen, "'paths_denied' has %zu entries, more than %u",
			 json_array_size(a), MRCD_ADMIN_STATE_MAX_PATHS);
		return -EINVAL;
	}
	size_t i;
	json_t *v;
	json_array_foreach(a, i, v) {
		char where[48], peer[MRCD_ADMIN_STATE_NAME];
		snprintf(where, sizeof(where), "'paths_denied'[%zu]: ", i);
		if (!json_is_object(v)) {
			snprintf(err, errlen, "%snot an object", where);
			return -EINVAL;
		}
		int rc;
		if ((rc = only_keys(v, keys, where, err, errlen)) ||
		    (rc = get_str(v, "peer", 1, peer, sizeof(peer), where, err, errlen)))
			return rc;
		json_t *e = json_object_get(v, "ev");
		json_int_t ev = json_is_integer(e) ? json_integer_value(e) : -1;
		if (ev < 0 || ev >= MRCE_MAX_EVS) {
			snprintf(err, errlen, "%s'ev' is %s, not an EV number 0..%d", where,
				 e ? "out of range or not an integer" : "missing", MRCE_MAX_EVS - 1);
			return -EINVAL;
		}
		if ((rc = mrcd_admin_state_add_path(s, peer, (uint32_t)ev))) {
			snprintf(err, errlen, "%s%s", where, strerror(-rc));
			return rc == -ENOMEM ? rc : -EINVAL;
		}
	}
	return 0;
}

int mrcd_admin_state_parse(const char *text, size_t len, struct mrcd_admin_state *s,
			   char *err, size_t errlen)
{
	static const char *const keys[] = { "version", "host", "saved", "planes_disabled",
					    "paths_denied", NULL };
	memset(s, 0, sizeof(*s));
	if (len > MRCD_ADMIN_STATE_MAX_BYTES) {
		snprintf(err, errlen, "%zu bytes, more than %u", len, MRCD_ADMIN_STATE_MAX_BYTES);
		return -EINVAL;
	}
	json_error_t je;
	json_t *r = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	if (!r) {
		snprintf(err, errlen, "not JSON: line %d column %d: %s", je.line, je.column, je.text);
		return -EINVAL;
	}
	int rc = -EINVAL;
	if (!json_is_object(r)) {
		snprintf(err, errlen, "not a JSON object");
		goto out;
	}
	if ((rc = only_keys(r, keys, "", err, errlen)))
		goto out;
	rc = -EINVAL;
	json_t *v = json_object_get(r, "version");
	if (!json_is_integer(v) || json_integer_value(v) != MRCD_ADMIN_STATE_VERSION) {
		snprintf(err, errlen, "'version' is %s, not %d", v ? "another value" : "missing",
			 MRCD_ADMIN_STATE_VERSION);
		goto out;
	}
	if ((rc = get_str(r, "host", 1, s->host, sizeof(s->host), "", err, errlen)) ||
	    (rc = get_str(r, "saved", 0, s->saved, sizeof(s->saved), "", err, errlen)) ||
	    (rc = parse_planes(json_object_get(r, "planes_disabled"), s, err, errlen)) ||
	    (rc = parse_paths(json_object_get(r, "paths_denied"), s, err, errlen)))
		goto out;
	rc = 0;
out:
	json_decref(r);
	return rc;
}

int mrcd_admin_state_format(const struct mrcd_admin_state *s, char **out,
			    char *err, size_t errlen)
{
	*out = NULL;
	if (!name_ok(s->host) || strlen(s->saved) >= sizeof(s->saved)) {
		snprintf(err, errlen, "host name '%.64s' cannot be saved", s->host);
		return -EINVAL;
	}
	if (s->npaths > MRCD_ADMIN_STATE_MAX_PATHS) {
		snprintf(err, errlen, "%u denied paths, more than %u", s->npaths,
			 MRCD_ADMIN_STATE_MAX_PATHS);
		return -EFBIG;
	}
	json_t *pl = json_array(), *pa = json_array();
	for (int p = 0; p < MRCE_MAX_PLANES; p++)
		if (s->planes >> p & 1)
			json_array_append_new(pl, json_integer(p));
	int rc = 0;
	for (uint32_t i = 0; i < s->npaths && !rc; i++) {
		if (!name_ok(s->paths[i].peer) || s->paths[i].ev >= MRCE_MAX_EVS) {
			snprintf(err, errlen, "path %u (peer '%.64s' ev %u) cannot be saved", i,
				 s->paths[i].peer, s->paths[i].ev);
			rc = -EINVAL;
		} else {
			json_array_append_new(pa, json_pack("{s:s, s:i}", "peer", s->paths[i].peer,
							    "ev", (int)s->paths[i].ev));
		}
	}
	json_t *r = json_pack("{s:i, s:s, s:s, s:o, s:o}", "version", MRCD_ADMIN_STATE_VERSION,
			      "host", s->host, "saved", s->saved, "planes_disabled", pl,
			      "paths_denied", pa);
	if (rc || !r) {
		json_decref(r);
		if (!rc)
			snprintf(err, errlen, "out of memory");
		return rc ? rc : -ENOMEM;
	}
	char *t = json_dumps(r, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(r);
	if (!t) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	size_t n = strlen(t);
	if (n + 1 > MRCD_ADMIN_STATE_MAX_BYTES) {
		snprintf(err, errlen, "%zu bytes of admin state, more than %u", n + 1,
			 MRCD_ADMIN_STATE_MAX_BYTES);
		free(t);
		return -EFBIG;
	}
	char *nl = realloc(t, n + 2);
	if (!nl) {
		free(t);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	nl[n] = '\n';
	nl[n + 1] = 0;
	*out = nl;
	return 0;
}
