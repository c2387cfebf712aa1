/* The admin state file's codec (daemon/core/adminstate.c): what mrcd
 * writes parses back to the same state, and every hostile file (unknown
 * key, wrong type, other version, out-of-range plane or EV, too many
 * entries, too many bytes, broken JSON) is -EINVAL with a message naming
 * the field; `mrcctl status` prints what the start restored or why it
 * refused the file. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "ctl/render.h"
#include "daemon/core/adminstate.h"

static void round_trip(void **st)
{
	(void)st;
	struct mrcd_admin_state a = { .host = "h0", .saved = "2026-11-23T17:00:00Z",
				      .planes = (1u << 1) | (1u << 15) };
	assert_int_equal(mrcd_admin_state_add_path(&a, "h7", 3), 0);
	assert_int_equal(mrcd_admin_state_add_path(&a, "leaf-1.host_2", 4095), 0);
	char *text, err[256] = "";
	assert_int_equal(mrcd_admin_state_format(&a, &text, err, sizeof(err)), 0);
	assert_non_null(strstr(text, "\"planes_disabled\":[1,15]"));
	assert_non_null(strstr(text, "{\"peer\":\"h7\",\"ev\":3}"));
	assert_int_equal(text[strlen(text) - 1], '\n');
	struct mrcd_admin_state b;
	assert_int_equal(mrcd_admin_state_parse(text, strlen(text), &b, err, sizeof(err)), 0);
	assert_string_equal(b.host, "h0");
	assert_string_equal(b.saved, a.saved);
	assert_int_equal(b.planes, a.planes);
	assert_int_equal(b.npaths, 2);
	assert_string_equal(b.paths[0].peer, "h7");
	assert_int_equal(b.paths[0].ev, 3);
	assert_string_equal(b.paths[1].peer, "leaf-1.host_2");
	assert_int_equal(b.paths[1].ev, 4095);
	free(text);
	mrcd_admin_state_free(&a);
	mrcd_admin_state_free(&b);

	/* nothing disabled or denied is a valid, empty state */
	struct mrcd_admin_state e = { .host = "self" };
	assert_int_equal(mrcd_admin_state_format(&e, &text, err, sizeof(err)), 0);
	assert_int_equal(mrcd_admin_state_parse(text, strlen(text), &b, err, sizeof(err)), 0);
	assert_int_equal(b.planes, 0);
	assert_int_equal(b.npaths, 0);
	free(text);
	mrcd_admin_state_free(&b);
}

#define HEAD "\"version\":1,\"host\":\"h0\",\"saved\":\"t\""
static const struct {
	const char *text, *names;   /* the message must contain names */
} hostile[] = {
	{ "", "not JSON" },
	{ "garbage", "not JSON" },
	{ "[1]", "not a JSON object" },
	{ "{" HEAD ",\"planes_disabled\":[],\"paths_denied\":[]} x", "not JSON" },
	{ "{" HEAD ",\"planes_disabled\":[],\"paths_denied\":[],\"extra\":1}", "'extra'" },
	{ "{" HEAD ",\"planes_disabled\":[],\"paths_denied\":[],\"host\":\"h1\"}", "not JSON" },
	{ "{\"version\":2,\"host\":\"h0\",\"saved\":\"t\",\"planes_disabled\":[],\"paths_denied\":[]}", "'version'" },
	{ "{\"version\":\"1\",\"host\":\"h0\",\"saved\":\"t\",\"planes_disabled\":[],\"paths_denied\":[]}", "'version'" },
	{ "{\"host\":\"h0\",\"saved\":\"t\",\"planes_disabled\":[],\"paths_denied\":[]}", "'version'" },
	{ "{\"version\":1,\"host\":7,\"saved\":\"t\",\"planes_disabled\":[],\"paths_denied\":[]}", "'host'" },
	{ "{\"version\":1,\"host\":\"\",\"saved\":\"t\",\"planes_disabled\":[],\"paths_denied\":[]}", "'host'" },
	{ "{\"version\":1,\"host\":\"h 0\",\"saved\":\"t\",\"planes_disabled\":[],\"paths_denied\":[]}", "'host'" },
	{ "{\"version\":1,\"host\":\"h0\",\"planes_disabled\":[],\"paths_denied\":[]}", "'saved'" },
	{ "{\"version\":1,\"host\":\"h0\",\"saved\":[],\"planes_disabled\":[],\"paths_denied\":[]}", "'saved'" },
	{ "{" HEAD ",\"paths_denied\":[]}", "'planes_disabled'" },
	{ "{" HEAD ",\"planes_disabled\":1,\"paths_denied\":[]}", "'planes_disabled'" },
	{ "{" HEAD ",\"planes_disabled\":[\"1\"],\"paths_denied\":[]}", "'planes_disabled'[0]" },
	{ "{" HEAD ",\"planes_disabled\":[16],\"paths_denied\":[]}", "'planes_disabled'[0]" },
	{ "{" HEAD ",\"planes_disabled\":[-1],\"paths_denied\":[]}", "'planes_disabled'[0]" },
	{ "{" HEAD ",\"planes_disabled\":[1.0],\"paths_denied\":[]}", "'planes_disabled'[0]" },
	{ "{" HEAD ",\"planes_disabled\":[1,1],\"paths_denied\":[]}", "'planes_disabled'[1]" },
	{ "{" HEAD ",\"planes_disabled\":[]}", "'paths_denied'" },
	{ "{" HEAD ",\"planes_disabled\":[],\"paths_denied\":{}}", "'paths_denied'" },
	{ "{" HEAD ",\"planes_disabled\":[],\"paths_denied\":[3]}", "'paths_denied'[0]" },
	{ "{" HEAD ",\"planes_disabled\":[],\"paths_denied\":[{\"peer\":\"h7\"}]}", "'ev'" },
	{ "{" HEAD ",\"planes_disabled\":[],\"paths_denied\":[{\"peer\":\"h7\",\"ev\":\"3\"}]}", "'ev'" },
	{ "{" HEAD ",\"planes_disabled\":[],\"paths_denied\":[{\"peer\":\"h7\",\"ev\":4096}]}", "'ev'" },
	{ "{" HEAD ",\"planes_disabled\":[],\"paths_denied\":[{\"peer\":\"h7\",\"ev\":-1}]}", "'ev'" },
	{ "{" HEAD ",\"planes_disabled\":[],\"paths_denied\":[{\"ev\":1}]}", "'peer'" },
	{ "{" HEAD ",\"planes_disabled\":[],\"paths_denied\":[{\"peer\":1,\"ev\":1}]}", "'peer'" },
	{ "{" HEAD ",\"planes_disabled\":[],\"paths_denied\":[{\"peer\":\"h7\",\"ev\":1,\"x\":0}]}", "'paths_denied'[0]: unknown key 'x'" },
	{ "{" HEAD ",\"planes_disabled\":[],\"paths_denied\":[{\"peer\":\"h\\u0007\",\"ev\":1}]}", "'peer'" },
};

static void hostile_files(void **st)
{
	(void)st;
	for (size_t i = 0; i < sizeof(hostile) / sizeof(hostile[0]); i++) {
		struct mrcd_admin_state s;
		char err[256] = "";
		int rc = mrcd_admin_state_parse(hostile[i].text, strlen(hostile[i].text), &s, err,
						sizeof(err));
		if (rc != -EINVAL || !strstr(err, hostile[i].names))
			fail_msg("case %zu (%s): rc %d, message '%s' lacks '%s'", i, hostile[i].text,
				 rc, err, hostile[i].names);
		mrcd_admin_state_free(&s);
	}
}

/* Builds a file with n paths; pad lengthens each peer name. */
static char *many_paths(unsigned n, unsigned pad)
{
	size_t cap = 128 + (size_t)n * (40 + pad), len = 0;
	char *t = malloc(cap);
	len += (size_t)snprintf(t, cap, "{" HEAD ",\"planes_disabled\":[],\"paths_denied\":[");
	for (unsigned i = 0; i < n; i++)
		len += (size_t)snprintf(t + len, cap - len, "%s{\"peer\":\"h%0*u\",\"ev\":%u}",
					i ? "," : "", (int)pad, i % 7, i % 4096);
	snprintf(t + len, cap - len, "]}");
	return t;
}

static void limits(void **st)
{
	(void)st;
	struct mrcd_admin_state s;
	char err[256] = "";
	/* Up to 64 KiB of text parses (2000 paths of short names).  The
	 * 4096-path limit is a second guard: a compact path entry takes at
	 * least 20 bytes, so 4097 of them exceed 64 KiB and the byte limit
	 * refuses the file first (mrcd_admin_state_add_path checks the
	 * count, below). */
	char *t = many_paths(2000, 1);
	assert_true(strlen(t) <= MRCD_ADMIN_STATE_MAX_BYTES);
	assert_int_equal(mrcd_admin_state_parse(t, strlen(t), &s, err, sizeof(err)), 0);
	assert_int_equal(s.npaths, 2000);
	mrcd_admin_state_free(&s);
	free(t);
	t = many_paths(MRCD_ADMIN_STATE_MAX_PATHS + 1, 1);
	assert_int_equal(mrcd_admin_state_parse(t, strlen(t), &s, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "more than 65536"));
	mrcd_admin_state_free(&s);
	free(t);
	/* more than 64 KiB of text is refused before it is parsed */
	t = many_paths(2000, 30);
	assert_true(strlen(t) > MRCD_ADMIN_STATE_MAX_BYTES);
	assert_int_equal(mrcd_admin_state_parse(t, strlen(t), &s, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "more than 65536"));
	mrcd_admin_state_free(&s);
	free(t);

	/* the writer refuses what the reader would: too many paths, too
	 * many bytes, bad names, out-of-range EVs */
	struct mrcd_admin_state a = { .host = "h0" };
	char *out, peer[64];
	memset(peer, 'p', 60);
	peer[60] = 0;
	for (unsigned i = 0; i < MRCD_ADMIN_STATE_MAX_PATHS; i++)
		assert_int_equal(mrcd_admin_state_add_path(&a, peer, i), 0);
	assert_int_equal(mrcd_admin_state_add_path(&a, peer, 0), -EFBIG);
	assert_int_equal(mrcd_admin_state_format(&a, &out, err, sizeof(err)), -EFBIG);
	assert_null(out);
	assert_non_null(strstr(err, "more than 65536"));
	a.npaths = 1;
	a.paths[0].ev = 4096;
	assert_int_equal(mrcd_admin_state_format(&a, &out, err, sizeof(err)), -EINVAL);
	a.paths[0].ev = 0;
	a.host[0] = 0;
	assert_int_equal(mrcd_admin_state_format(&a, &out, err, sizeof(err)), -EINVAL);
	mrcd_admin_state_free(&a);
}

/* mrcctl status (text) of an admin_state object. */
static char *render(const char *admin_state)
{
	char js[1024], *out = NULL;
	size_t len = 0;
	snprintf(js, sizeof(js), "{\"version\":\"0\",\"host\":{},\"admin_state\":%s}", admin_state);
	json_t *res = json_loads(js, 0, NULL);
	assert_non_null(res);
	FILE *f = open_memstream(&out, &len);
	assert_int_equal(mrc_ctl_render_status(f, res), 0);
	fclose(f);
	json_decref(res);
	return out;
}

static void status_text(void **st)
{
	(void)st;
	char *t = render("{\"file\":\"/var/lib/mrcd/admin.json\",\"persisted\":true,\"restored\":true,"
			 "\"saved\":\"T\",\"planes_disabled\":[1],\"paths_denied\":1}");
	assert_non_null(strstr(t, "admin state: /var/lib/mrcd/admin.json, restored at start (saved T); "
			       "still in effect: planes [1] disabled, 1 path denied\n"));
	assert_null(strstr(t, "error"));
	free(t);
	t = render("{\"file\":\"/s/admin.json\",\"persisted\":true,\"restored\":false,\"saved\":\"\","
		   "\"planes_disabled\":[],\"paths_denied\":0,\"error\":\"refused /s/admin.json: x; kept as y\"}");
	assert_non_null(strstr(t, "admin state: /s/admin.json, nothing restored at start\n"));
	assert_non_null(strstr(t, "admin state error: refused /s/admin.json: x; kept as y\n"));
	free(t);
	t = render("{\"file\":\"\",\"persisted\":false,\"restored\":false}");
	assert_non_null(strstr(t, "admin state: not kept across restarts (state_dir unset)\n"));
	free(t);
}

int main(void)
{
	const struct CMUnitTest t[] = {
		cmocka_unit_test(round_trip),
		cmocka_unit_test(hostile_files),
		cmocka_unit_test(limits),
		cmocka_unit_test(status_text),
	};
	return cmocka_run_group_tests(t, NULL, NULL);
}
