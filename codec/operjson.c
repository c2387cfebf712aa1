/* Operator protocol codec: strict request parsing, reply records. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "codec/operjson.h"

/* Per verb: its wire name, whether it is an admin verb, the request
 * fields it needs and accepts (codec/operverbs.def). */
static const struct {
	const char *name;
	int admin;
	unsigned need, allow;
} verbs[MRC_OPER__COUNT] = {
#define MRC_VERB(ID, wire, admin, need, allow, ...) [MRC_OPER_##ID] = { wire, admin, need, allow },
#include "codec/operverbs.def"
};

const char *mrc_oper_verb_name(enum mrc_oper_verb v)
{
	return v > MRC_OPER_NONE && v < MRC_OPER__COUNT ? verbs[v].name : "?";
}

enum mrc_oper_verb mrc_oper_verb_find(const char *name)
{
	for (int v = 1; v < MRC_OPER__COUNT; v++)
		if (!strcmp(verbs[v].name, name))
			return (enum mrc_oper_verb)v;
	return MRC_OPER_NONE;
}

int mrc_oper_verb_is_admin(enum mrc_oper_verb v)
{
	return v > MRC_OPER_NONE && v < MRC_OPER__COUNT && verbs[v].admin;
}

void mrc_oper_req_init(struct mrc_oper_req *r)
{
	memset(r, 0, sizeof(*r));
	r->plane = r->spine = r->ev = r->last = r->timeout_ms = -1;
	r->qp = -1;
}

static const struct { const char *name; unsigned bit; long long max; } fields[] = {
	{ "peer", MRC_OPER_F_PEER, 0 }, { "plane", MRC_OPER_F_PLANE, 15 },
	{ "spine", MRC_OPER_F_SPINE, 255 }, { "ev", MRC_OPER_F_EV, 4095 },
	{ "qp", MRC_OPER_F_QP, 0xffffffffll }, { "last", MRC_OPER_F_LAST, 100000 },
	{ "follow", MRC_OPER_F_FOLLOW, 0 }, { "timeout_ms", MRC_OPER_F_TIMEOUT, 60000 },
};

static int fail(char *err, size_t errlen, int rc, const char *fmt, const char *a)
{
	snprintf(err, errlen, fmt, a);
	return rc;
}

static int set_field(struct mrc_oper_req *r, unsigned bit, json_t *v, long long max,
		     const char *name, char *err, size_t errlen)
{
	if (bit == MRC_OPER_F_PEER) {
		const char *s = json_string_value(v);
		if (!s || !*s || strlen(s) >= sizeof(r->peer))
			return fail(err, errlen, -EINVAL,
				    "field 'peer': must be a host name or index of 1..63 characters%s", "");
		snprintf(r->peer, sizeof(r->peer), "%s", s);
		return 0;
	}
	if (bit == MRC_OPER_F_FOLLOW) {
		if (!json_is_boolean(v))
			return fail(err, errlen, -EINVAL, "field '%s': must be true or false", name);
		r->follow = json_is_true(v);
		return 0;
	}
	if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > max) {
		snprintf(err, errlen, "field '%s': must be an integer 0..%lld", name, max);
		return -EINVAL;
	}
	long long x = json_integer_value(v);
	switch (bit) {
	case MRC_OPER_F_PLANE: r->plane = (int32_t)x; break;
	case MRC_OPER_F_SPINE: r->spine = (int32_t)x; break;
	case MRC_OPER_F_EV: r->ev = (int32_t)x; break;
	case MRC_OPER_F_QP: r->qp = x; break;
	case MRC_OPER_F_LAST: r->last = (int32_t)x; break;
	default: r->timeout_ms = (int32_t)x; break;
	}
	return 0;
}

int mrc_oper_req_parse(const void *buf, size_t len, struct mrc_oper_req *r,
		       char *err, size_t errlen)
{
	mrc_oper_req_init(r);
	if (len > MRC_OPER_REQ_MAX) {
		snprintf(err, errlen, "request is %zu bytes, at most %u", len, MRC_OPER_REQ_MAX);
		return -EINVAL;
	}
	json_error_t je;
	json_t *o = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &je);
	if (!o) {
		snprintf(err, errlen, "not JSON: %s (offset %d)", je.text, je.position);
		return -EINVAL;
	}
	int rc = -EINVAL;
	unsigned seen = 0;
	if (!json_is_object(o)) {
		rc = fail(err, errlen, -EINVAL, "request must be a JSON object%s", "");
		goto out;
	}
	json_t *v = json_object_get(o, "v");
	if (!json_is_integer(v)) {
		rc = fail(err, errlen, -EINVAL, "field 'v' (protocol version) is missing or not an integer%s", "");
		goto out;
	}
	if (json_integer_value(v) != MRC_OPER_VERSION) {
		snprintf(err, errlen, "protocol version %lld is not supported (this daemon speaks %d)",
			 (long long)json_integer_value(v), MRC_OPER_VERSION);
		rc = -EPROTONOSUPPORT;
		goto out;
	}
	json_t *id = json_object_get(o, "id");
	if (id && (!json_is_integer(id) || json_integer_value(id) < 0 ||
		   json_integer_value(id) > 0xffffffffll)) {
		rc = fail(err, errlen, -EINVAL, "field 'id': must be an integer 0..4294967295%s", "");
		goto out;
	}
	r->id = id ? (uint32_t)json_integer_value(id) : 0;
	const char *vn = json_string_value(json_object_get(o, "verb"));
	if (!vn) {
		rc = fail(err, errlen, -EINVAL, "field 'verb' is missing or not a string%s", "");
		goto out;
	}
	r->verb = mrc_oper_verb_find(vn);
	if (r->verb == MRC_OPER_NONE) {
		char q[40];
		snprintf(q, sizeof(q), "%.32s", vn);
		rc = fail(err, errlen, -EINVAL, "unknown verb '%s'", q);
		goto out;
	}
	const char *key;
	json_t *val;
	json_object_foreach(o, key, val) {
		if (!strcmp(key, "v") || !strcmp(key, "id") || !strcmp(key, "verb"))
			continue;
		size_t i = 0;
		while (i < sizeof(fields) / sizeof(fields[0]) && strcmp(fields[i].name, key))
			i++;
		if (i == sizeof(fields) / sizeof(fields[0])) {
			char q[40];
			snprintf(q, sizeof(q), "%.32s", key);
			rc = fail(err, errlen, -EINVAL, "unknown field '%s'", q);
			goto out;
		}
		if (!(verbs[r->verb].allow & fields[i].bit)) {
			snprintf(err, errlen, "field '%s' does not apply to verb '%s'", key, vn);
			goto out;
		}
		if ((rc = set_field(r, fields[i].bit, val, fields[i].max, key, err, errlen)))
			goto out;
		rc = -EINVAL;
		seen |= fields[i].bit;
	}
	unsigned missing = verbs[r->verb].need & ~seen;
	if (missing) {
		for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
			if (missing & fields[i].bit) {
				snprintf(err, errlen, "verb '%s' needs field '%s'", vn, fields[i].name);
				break;
			}
		goto out;
	}
	rc = 0;
out:
	json_decref(o);
	return rc;
}

char *mrc_oper_req_encode(const struct mrc_oper_req *r)
{
	json_t *o = json_pack("{s:i, s:I, s:s}", "v", MRC_OPER_VERSION, "id", (json_int_t)r->id,
			      "verb", mrc_oper_verb_name(r->verb));
	if (!o)
		return NULL;
	if (r->peer[0])
		json_object_set_new(o, "peer", json_string(r->peer));
	if (r->plane >= 0)
		json_object_set_new(o, "plane", json_integer(r->plane));
	if (r->spine >= 0)
		json_object_set_new(o, "spine", json_integer(r->spine));
	if (r->ev >= 0)
		json_object_set_new(o, "ev", json_integer(r->ev));
	if (r->qp >= 0)
		json_object_set_new(o, "qp", json_integer(r->qp));
	if (r->last >= 0)
		json_object_set_new(o, "last", json_integer(r->last));
	if (r->timeout_ms >= 0)
		json_object_set_new(o, "timeout_ms", json_integer(r->timeout_ms));
	if (r->follow)
		json_object_set_new(o, "follow", json_true());
	char *s = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	return s;
}

const char *mrc_oper_errno_name(int err)
{
	static const struct { int e; const char *n; } t[] = {
		{ EPERM, "EPERM" }, { ENOENT, "ENOENT" }, { EIO, "EIO" }, { E2BIG, "E2BIG" },
		{ ENOMEM, "ENOMEM" }, { EACCES, "EACCES" }, { EBUSY, "EBUSY" },
		{ EEXIST, "EEXIST" }, { EINVAL, "EINVAL" }, { ENOSPC, "ENOSPC" },
		{ ERANGE, "ERANGE" }, { ENOSYS, "ENOSYS" }, { EMSGSIZE, "EMSGSIZE" },
		{ EPROTONOSUPPORT, "EPROTONOSUPPORT" }, { ENETDOWN, "ENETDOWN" },
		{ ENETUNREACH, "ENETUNREACH" }, { ETIMEDOUT, "ETIMEDOUT" },
		{ EALREADY, "EALREADY" }, { EBADMSG, "EBADMSG" }, { ENOTSUP, "ENOTSUP" },
		{ ENOBUFS, "ENOBUFS" },
	};
	if (err < 0)
		err = -err;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (t[i].e == err)
			return t[i].n;
	return "EUNKNOWN";
}

static char *dump(json_t *o)
{
	char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	return s;
}

char *mrc_oper_reply_ok(uint32_t id, json_t *result)
{
	return dump(json_pack("{s:i, s:I, s:b, s:O}", "v", MRC_OPER_VERSION, "id", (json_int_t)id,
			      "ok", 1, "result", result ? result : json_null()));
}

char *mrc_oper_reply_err(uint32_t id, int err, const char *msg)
{
	if (err < 0)
		err = -err;
	return dump(json_pack("{s:i, s:I, s:b, s:{s:i, s:s, s:s}}", "v", MRC_OPER_VERSION,
			      "id", (json_int_t)id, "ok", 0, "error", "errno", err,
			      "code", mrc_oper_errno_name(err), "message", msg ? msg : ""));
}

int mrc_oper_reply_parse(const void *buf, size_t len, uint32_t *id, json_t **result,
			 char *msg, size_t msglen)
{
	*result = NULL;
	json_error_t je;
	json_t *o = json_loadb(buf, len, 0, &je);
	if (!o) {
		snprintf(msg, msglen, "reply is not JSON: %s", je.text);
		return -EBADMSG;
	}
	int rc = -EBADMSG;
	json_t *v = json_object_get(o, "v"), *ok = json_object_get(o, "ok");
	if (!json_is_integer(v) || json_integer_value(v) != MRC_OPER_VERSION) {
		snprintf(msg, msglen, "reply has protocol version %lld, mrcctl speaks %d",
			 json_is_integer(v) ? (long long)json_integer_value(v) : -1LL,
			 MRC_OPER_VERSION);
		goto out;
	}
	if (!json_is_boolean(ok)) {
		snprintf(msg, msglen, "reply has no 'ok' field");
		goto out;
	}
	if (id)
		*id = (uint32_t)json_integer_value(json_object_get(o, "id"));
	if (json_is_true(ok)) {
		*result = json_incref(json_object_get(o, "result"));
		if (!*result)
			*result = json_null();
		rc = 0;
		goto out;
	}
	json_t *e = json_object_get(o, "error");
	json_int_t en = json_integer_value(json_object_get(e, "errno"));
	const char *m = json_string_value(json_object_get(e, "message"));
	if (en <= 0 || en > 4095) {
		snprintf(msg, msglen, "error reply without a valid errno");
		goto out;
	}
	snprintf(msg, msglen, "%s", m ? m : strerror((int)en));
	rc = -(int)en;
out:
	json_decref(o);
	return rc;
}
