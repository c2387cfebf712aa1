/* mrcctl's verb table (verbs.h): usage, parsing and rendering per verb. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ctl/render.h"
#include "ctl/verbs.h"

static int bad(FILE *err, const char *fmt, const char *a)
{
	fprintf(err, "mrcctl: ");
	fprintf(err, fmt, a);
	fprintf(err, "\n(mrcctl help for usage)\n");
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

#define ONE(v) { { NULL, (v) } }

/* Usage lists the rows in this order, read-only verbs first. */
const struct mrc_ctl_verb mrc_ctl_verbs[] = {
	{ "status", NULL, "version, uptime, host, planes, QPs, totals", 0,
	  ONE(MRC_OPER_STATUS), p_plain, mrc_oper_render_status, 0 },
	{ "planes", NULL, "per plane: NIC, link, admin state, rates, loss, EV states", 0,
	  ONE(MRC_OPER_PLANES), p_plain, mrc_oper_render_planes, 0 },
	{ "peers", NULL, "hosts this node has paths to", 0,
	  ONE(MRC_OPER_PEERS), p_plain, mrc_oper_render_peers, 0 },
	{ "paths", "PEER", "every EV to PEER: plane, spine, uSID address, state, RTT, loss", 0,
	  ONE(MRC_OPER_PATHS), p_paths, mrc_oper_render_paths, 0 },
	{ "qps", "[QPN]", "queue pairs (QPN decimal or 0x hex)", 0,
	  ONE(MRC_OPER_QPS), p_qps, mrc_oper_render_qps, 0 },
	{ "stats", "[--prom]", "every counter (--prom: Prometheus text)", 0,
	  ONE(MRC_OPER_STATS), p_stats, mrc_oper_render_object, 0 },
	{ "top", "[-d SECS] [-n N]",
	  "live per-plane and per-peer rates, losses, EV states (q quits; -n N frames)", 0,
	  ONE(MRC_OPER_STATS), p_top, NULL, 1 },
	{ "events", "[-f] [-n N]", "recent events (-f: keep following; -n: last N)", 0,
	  ONE(MRC_OPER_EVENTS), p_events, mrc_oper_render_events, 0 },
	{ "probe", "PEER [--plane P] [--spine S] [--timeout MS]",
	  "probe paths to PEER, print RTT or loss per path", 0,
	  ONE(MRC_OPER_PROBE), p_probe, mrc_oper_render_probe, 0 },
	{ "topology", NULL, "the fabric as mrcd sees it", 0,
	  ONE(MRC_OPER_TOPOLOGY), p_plain, mrc_oper_render_topology, 0 },
	{ "version", NULL, "mrcctl's and mrcd's versions", 0,
	  ONE(MRC_OPER_VERSION_VERB), p_plain, mrc_oper_render_version, 0 },
	{ "help", NULL, "this text", 0, ONE(MRC_OPER_NONE), p_help, NULL, 0 },
	{ "plane", "disable|enable P", "deny/allow every path of plane P, for every peer", 1,
	  { { "disable", MRC_OPER_PLANE_DISABLE }, { "enable", MRC_OPER_PLANE_ENABLE } },
	  p_plane, mrc_oper_render_plane, 0 },
	{ "path", "deny|allow PEER EV", "deny/allow one path", 1,
	  { { "deny", MRC_OPER_PATH_DENY }, { "allow", MRC_OPER_PATH_ALLOW } },
	  p_path, mrc_oper_render_path, 0 },
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
		for (int a = 0; a < 2; a++)
			if (mrc_ctl_verbs[k].act[a].verb == v && !mrc_ctl_verbs[k].view)
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
			if (v->needs_admin != admin)
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
	c->verb = v;
	c->req.verb = v->act[0].verb;
	int i = 1;
	if (v->act[0].word) {
		if (argc < 2)
			return bad(err, "'%s' needs an action", argv[0]);
		int a = 0;
		while (a < 2 && strcmp(v->act[a].word, argv[1]))
			a++;
		if (a == 2)
			return bad(err, "unknown action '%s' (plane disable|enable P, path deny|allow PEER EV)",
				   argv[1]);
		c->req.verb = v->act[a].verb;
		i = 2;
	}
	return v->parse(argc, argv, i, c, err);
}

int mrc_oper_render(FILE *f, enum mrc_oper_verb v, const json_t *result)
{
	const struct mrc_ctl_verb *row = mrc_ctl_verb_of(v);
	if (row && row->render)
		return row->render(f, result);
	return mrc_oper_render_object(f, result);
}
