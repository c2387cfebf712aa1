/* mrcctl's verb table (verbs.h): usage, parsing and rendering per verb. */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "ctl/render.h"
#include "ctl/verbs.h"

static int __attribute__((format(printf, 2, 3))) bad(FILE *err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(err, "mrcctl: ");
	vfprintf(err, fmt, ap);
	fprintf(err, "\n(mrcctl help for usage)\n");
	va_end(ap);
	return -EINVAL;
}

int mrc_ctl_usage_err(FILE *err, const char *fmt, const char *a)
{
	return bad(err, fmt, a);
}

int mrc_ctl_parse_num(const char *s, long long max, long long *out)
{
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 0);
	if (!*s || *end || errno || v < 0 || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

/* s as a number in 0..max into *out, or the usage error fmt. */
static int num32(FILE *err, const char *s, long long max, const char *fmt, int32_t *out)
{
	long long x;
	if (mrc_ctl_parse_num(s, max, &x))
		return bad(err, fmt, s);
	*out = (int32_t)x;
	return 0;
}

/* One flag of a verb at argv a (val: the next word, or NULL).  Returns how
 * many words it took (1 or 2), 0 when the flag is not the verb's, or
 * -EINVAL. */
typedef int (*flag_fn)(const char *a, const char *val, struct mrc_ctl_cmd *c, FILE *err);

/* The flags after a verb's positional arguments, in any order. */
static int flags(int argc, char **argv, int i, struct mrc_ctl_cmd *c, FILE *err, flag_fn fn)
{
	while (i < argc) {
		int n = fn ? fn(argv[i], i + 1 < argc ? argv[i + 1] : NULL, c, err) : 0;
		if (n < 0)
			return n;
		if (n == 0)
			return bad(err, "unexpected argument '%s'", argv[i]);
		i += n;
	}
	return 0;
}

static int peer(int argc, char **argv, int *i, struct mrc_ctl_cmd *c, FILE *err)
{
	if (*i >= argc)
		return bad(err, "'%s' needs a PEER (host name or index)", argv[0]);
	if (strlen(argv[*i]) >= sizeof(c->req.peer))
		return bad(err, "peer name '%s' is too long", argv[*i]);
	snprintf(c->req.peer, sizeof(c->req.peer), "%s", argv[(*i)++]);
	return 0;
}

static int p_plain(int argc, char **argv, int i, struct mrc_ctl_cmd *c, FILE *err)
{
	return flags(argc, argv, i, c, err, NULL);
}

/* help takes whatever follows. */
static int p_help(int argc, char **argv, int i, struct mrc_ctl_cmd *c, FILE *err)
{
	return 0;
}

static int p_paths(int argc, char **argv, int i, struct mrc_ctl_cmd *c, FILE *err)
{
	int r = peer(argc, argv, &i, c, err);
	return r ? r : flags(argc, argv, i, c, err, NULL);
}

static int p_qps(int argc, char **argv, int i, struct mrc_ctl_cmd *c, FILE *err)
{
	if (i < argc) {
		long long x;
		if (mrc_ctl_parse_num(argv[i], 0xffffffffll, &x))
			return bad(err, "bad QP number '%s'", argv[i]);
		c->req.qp = x;
		i++;
	}
	return flags(argc, argv, i, c, err, NULL);
}

static int f_stats(const char *a, const char *val, struct mrc_ctl_cmd *c, FILE *err)
{
	if (strcmp(a, "--prom"))
		return 0;
	c->prom = 1;
	return 1;
}

static int p_stats(int argc, char **argv, int i, struct mrc_ctl_cmd *c, FILE *err)
{
	return flags(argc, argv, i, c, err, f_stats);
}

static int f_events(const char *a, const char *val, struct mrc_ctl_cmd *c, FILE *err)
{
	if (!strcmp(a, "-f") || !strcmp(a, "--follow")) {
		c->req.follow = 1;
		return 1;
	}
	if ((!strcmp(a, "-n") || !strcmp(a, "--last")) && val)
		return num32(err, val, 100000, "bad count '%s'", &c->req.last) ?: 2;
	return 0;
}

static int p_events(int argc, char **argv, int i, struct mrc_ctl_cmd *c, FILE *err)
{
	return flags(argc, argv, i, c, err, f_events);
}

static int f_top(const char *a, const char *val, struct mrc_ctl_cmd *c, FILE *err)
{
	if (!val)
		return 0;
	if (!strcmp(a, "-d") || !strcmp(a, "--delay")) {
		char *end;
		double s = strtod(val, &end);
		if (end == val || *end || !(s >= 0.1 && s <= 3600))
			return bad(err, "bad delay '%s' (seconds, 0.1..3600)", val);
		c->interval_ms = (int)(s * 1000 + 0.5);
		return 2;
	}
	if (!strcmp(a, "-n") || !strcmp(a, "--iterations"))
		return num32(err, val, 1000000, "bad count '%s'", &c->count) ?: 2;
	return 0;
}

static int p_top(int argc, char **argv, int i, struct mrc_ctl_cmd *c, FILE *err)
{
	c->top = 1;
	c->interval_ms = 1000;
	return flags(argc, argv, i, c, err, f_top);
}

static int f_probe(const char *a, const char *val, struct mrc_ctl_cmd *c, FILE *err)
{
	if (!val)
		return 0;
	if (!strcmp(a, "--plane"))
		return num32(err, val, 15, "bad plane '%s' (0..15)", &c->req.plane) ?: 2;
	if (!strcmp(a, "--spine"))
		return num32(err, val, 255, "bad spine '%s' (0..255)", &c->req.spine) ?: 2;
	if (!strcmp(a, "--timeout"))
		return num32(err, val, 60000, "bad timeout '%s' (ms, 0..60000)", &c->req.timeout_ms) ?: 2;
	return 0;
}

static int p_probe(int argc, char **argv, int i, struct mrc_ctl_cmd *c, FILE *err)
{
	int r = peer(argc, argv, &i, c, err);
	return r ? r : flags(argc, argv, i, c, err, f_probe);
}

static int p_plane(int argc, char **argv, int i, struct mrc_ctl_cmd *c, FILE *err)
{
	if (i >= argc)
		return bad(err, "missing %s", "plane number");
	int r = num32(err, argv[i], 15, "bad plane '%s' (0..15)", &c->req.plane);
	return r ? r : flags(argc, argv, i + 1, c, err, NULL);
}

static int p_path(int argc, char **argv, int i, struct mrc_ctl_cmd *c, FILE *err)
{
	int r = peer(argc, argv, &i, c, err);
	if (r)
		return r;
	if (i >= argc)
		return bad(err, "missing %s", "EV number");
	r = num32(err, argv[i], 4095, "bad EV '%s' (0..4095)", &c->req.ev);
	return r ? r : flags(argc, argv, i + 1, c, err, NULL);
}

/* Usage lists the rows in this order, read-only verbs first. */
const struct mrc_ctl_verb mrc_ctl_verbs[] = {
#define MRC_VERB(ID, wire, admin, need, allow, handler, cli, act, args, help, parse, render) \
	{ cli, act, args, help, admin, MRC_OPER_##ID, parse, render, 0 },
#define MRC_CTL_LOCAL(cli, args, help, parse, SENDS) \
	{ cli, NULL, args, help, 0, MRC_OPER_##SENDS, parse, NULL, MRC_OPER_##SENDS != MRC_OPER_NONE },
#include "codec/operverbs.def"
};
const size_t mrc_ctl_n_verbs = sizeof(mrc_ctl_verbs) / sizeof(mrc_ctl_verbs[0]);

const struct mrc_ctl_verb *mrc_ctl_verb_find(const char *name)
{
	for (size_t k = 0; k < mrc_ctl_n_verbs; k++)
		if (!strcmp(mrc_ctl_verbs[k].name, name))
			return &mrc_ctl_verbs[k];
	return NULL;
}

const struct mrc_ctl_verb *mrc_ctl_verb_of(enum mrc_oper_verb v)
{
	for (size_t k = 0; k < mrc_ctl_n_verbs && v != MRC_OPER_NONE; k++)
		if (mrc_ctl_verbs[k].verb == v && !mrc_ctl_verbs[k].view)
			return &mrc_ctl_verbs[k];
	return NULL;
}

void mrc_ctl_usage(FILE *f)
{
	fputs("usage: mrcctl [-j | -p] [-s SOCKET] [-t SECONDS] VERB [ARGS]\n\n", f);
	for (int admin = 0; admin < 2; admin++) {
		fputs(admin ? "verbs (admin: root or mrcd's admin_group):\n" : "verbs (read-only):\n", f);
		for (size_t k = 0; k < mrc_ctl_n_verbs; k++) {
			const struct mrc_ctl_verb *v = &mrc_ctl_verbs[k];
			char syn[96];
			/* a word shared by adjacent rows (plane disable|enable) once */
			if (v->needs_admin != admin || (k && !strcmp(v->name, mrc_ctl_verbs[k - 1].name)))
				continue;
			snprintf(syn, sizeof(syn), "%s%s%s", v->name, v->args ? " " : "",
				 v->args ? v->args : "");
			/* Help in one column; a long synopsis gets a line of its own. */
			if (strlen(syn) > 31)
				fprintf(f, "  %s\n%34s%s\n", syn, "", v->help);
			else
				fprintf(f, "  %-31s %s\n", syn, v->help);
		}
	}
	fputs("\n"
	      "options:\n"
	      "  -j, --json           compact JSON (one object; the contract in docs/ctl.md)\n"
	      "  -p, --pretty         indented JSON\n"
	      "  -s, --socket PATH    operator socket (default $MRCCTL_SOCKET or " MRC_OPER_DEFAULT_SOCK ")\n"
	      "  -t, --timeout SECS   reply timeout (default 10)\n"
	      "\n"
	      "exit status: 0 ok, 1 mrcd reported an error, 2 usage error, 3 cannot connect to\n"
	      "mrcd, 4 permission denied, 5 no such peer/QP/plane/path, 6 protocol error,\n"
	      "7 no reply in time.\n", f);
}

int mrc_ctl_parse(int argc, char **argv, struct mrc_ctl_cmd *c, FILE *err)
{
	memset(c, 0, sizeof(*c));
	mrc_oper_req_init(&c->req);
	const struct mrc_ctl_verb *v = argc > 0 ? mrc_ctl_verb_find(argv[0]) : NULL;
	if (!v)
		return bad(err, "unknown verb '%s'", argc > 0 ? argv[0] : "");
	int i = 1;
	if (v->act) {
		if (argc < 2)
			return bad(err, "'%s' needs an action", argv[0]);
		const struct mrc_ctl_verb *a = v;
		while (a < mrc_ctl_verbs + mrc_ctl_n_verbs && !strcmp(a->name, v->name) &&
		       strcmp(a->act, argv[1]))
			a++;
		if (a == mrc_ctl_verbs + mrc_ctl_n_verbs || strcmp(a->name, v->name)) {
			return bad(err, "unknown action '%s' (%s %s)", argv[1], v->name,
				   v->args ? v->args : "");
		}
		v = a;
		i = 2;
	}
	c->verb = v;
	c->req.verb = v->verb;
	return v->parse(argc, argv, i, c, err);
}

int mrc_ctl_render(FILE *f, enum mrc_oper_verb v, const json_t *result)
{
	const struct mrc_ctl_verb *row = mrc_ctl_verb_of(v);
	if (row && row->render)
		return row->render(f, result);
	return mrc_ctl_render_object(f, result);
}
