/* Scenario files: a JSON object of the same keys as the command line's
 * settings (sim/scenario.c), each applied through mrc_sim_cfg_set in
 * sorted key order; objects become "kind:key=val,..." entries.  Every
 * error names the field, the value and why. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "common/errf.h"
#include "sim/sim_int.h"

static int json_scalar(json_t *v, char *buf, size_t len)
{
	if (json_is_string(v))
		snprintf(buf, len, "%s", json_string_value(v));
	else if (json_is_integer(v))
		snprintf(buf, len, "%lld", (long long)json_integer_value(v));
	else if (json_is_real(v))
		snprintf(buf, len, "%.17g", json_real_value(v));
	else if (json_is_true(v))
		snprintf(buf, len, "on");
	else if (json_is_false(v))
		snprintf(buf, len, "off");
	else
		return -EINVAL;
	return 0;
}

/* {"type": "clos", "planes": 8, ...} -> "clos:planes=8,..."; a fault
 * object {"at", "kind", "target", "loss"} -> "AT:KIND:TARGET". */
static int json_entry(const char *key, json_t *v, char *out, size_t len,
		      char *err, size_t errlen)
{
	if (!json_is_object(v))
		return json_scalar(v, out, len) ?
		       mrc__errf(err, errlen, "%s: value must be a string, number, boolean or object", key) : 0;
	char val[128];
	if (!strcmp(key, "fault")) {
		char at[64] = "", kind[64] = "", tgt[MRC_SIM_NAME_MAX] = "", loss[64] = "";
		json_t *x;
		if ((x = json_object_get(v, "at")))
			json_scalar(x, at, sizeof(at));
		if ((x = json_object_get(v, "kind")))
			json_scalar(x, kind, sizeof(kind));
		if ((x = json_object_get(v, "target")))
			json_scalar(x, tgt, sizeof(tgt));
		if ((x = json_object_get(v, "loss")))
			json_scalar(x, loss, sizeof(loss));
		if (!*at || !*kind || !*tgt)
			return mrc__errf(err, errlen, "fault: an object needs \"at\", \"kind\" and \"target\"");
		if (*loss)
			snprintf(out, len, "%s:%s=%s:%s", at, kind, loss, tgt);
		else
			snprintf(out, len, "%s:%s:%s", at, kind, tgt);
		return 0;
	}
	json_t *type = json_object_get(v, "type");
	if (!type || !json_is_string(type))
		return mrc__errf(err, errlen, "%s: an object needs a string \"type\"", key);
	size_t n = (size_t)snprintf(out, len, "%s", json_string_value(type));
	const char *k;
	json_t *x;
	int first = 1;
	json_object_foreach(v, k, x) {
		if (!strcmp(k, "type"))
			continue;
		if (json_scalar(x, val, sizeof(val)))
			return mrc__errf(err, errlen, "%s.%s: must be a string or number", key, k);
		n += (size_t)snprintf(out + n, n < len ? len - n : 0, "%s%s=%s",
				      first ? ":" : ",", k, val);
		first = 0;
	}
	if (n >= len)
		return mrc__errf(err, errlen, "%s: entry too long", key);
	return 0;
}

int mrc_sim_cfg_load_json(struct mrc_sim_cfg *c, const char *text, size_t len,
			  char *err, size_t errlen)
{
	json_error_t je;
	json_t *root = json_loadb(text, len, 0, &je);
	if (!root)
		return mrc__errf(err, errlen, "scenario: line %d column %d: %s", je.line,
			    je.column, je.text);
	int rc = 0;
	if (!json_is_object(root)) {
		rc = mrc__errf(err, errlen, "scenario: the top level must be an object");
		goto out;
	}
	/* Keys in file order would depend on jansson's hashing of the
	 * object; apply them sorted so a file means one thing. */
	const char *keys[64];
	size_t nk = 0;
	const char *k;
	json_t *v;
	json_object_foreach(root, k, v) {
		if (nk == 64) {
			rc = mrc__errf(err, errlen, "scenario: too many keys");
			goto out;
		}
		keys[nk++] = k;
	}
	for (size_t i = 1; i < nk; i++)
		for (size_t j = i; j > 0 && strcmp(keys[j - 1], keys[j]) > 0; j--) {
			const char *t = keys[j];
			keys[j] = keys[j - 1];
			keys[j - 1] = t;
		}
	char val[600];
	for (size_t i = 0; i < nk && !rc; i++) {
		k = keys[i];
		v = json_object_get(root, k);
		const char *key = !strcmp(k, "workloads") ? "workload" :
				  !strcmp(k, "faults") ? "fault" : k;
		if (json_is_array(v)) {
			size_t idx;
			json_t *x;
			json_array_foreach(v, idx, x) {
				if ((rc = json_entry(key, x, val, sizeof(val), err, errlen)) ||
				    (rc = mrc_sim_cfg_set(c, key, val, err, errlen)))
					break;
			}
		} else if (!(rc = json_entry(key, v, val, sizeof(val), err, errlen))) {
			rc = mrc_sim_cfg_set(c, key, val, err, errlen);
		}
	}
out:
	json_decref(root);
	return rc;
}
