/* mrcctl's verbs: one table, generated from the verbs' one definition
 * (codec/operverbs.def), that generates the usage text and drives parsing
 * and rendering (the shape of wireguard-tools' subcommand table), so a
 * verb is added by adding one row there.  Pure: no sockets, no exit(). */
#ifndef MRC_CTL_VERBS_H
#define MRC_CTL_VERBS_H

#include <jansson.h>
#include <stdio.h>

#include "codec/operjson.h"

/* What one command line asks for. */
struct mrc_ctl_cmd {
	const struct mrc_ctl_verb *verb;  /* its row */
	struct mrc_oper_req req;          /* the request (verb NONE: help) */
	int prom;                         /* stats --prom: Prometheus text */
	int top;                          /* top: refresh until q, ^C or count */
	int interval_ms, count;           /* top -d SECS, -n N (0: forever) */
};

/* One row per protocol verb, plus mrcctl's local rows (help, top).
 * Verbs that share a first word (plane disable|enable, path deny|allow)
 * are adjacent rows with the same name, each with its action word. */
struct mrc_ctl_verb {
	const char *name;         /* the first word on the command line */
	const char *act;          /* the action word after it, or NULL */
	const char *args;         /* synopsis of what follows (usage), or NULL */
	const char *help;         /* one line of usage */
	int needs_admin;          /* changes mrcd: root or mrcd's admin_group */
	enum mrc_oper_verb verb;  /* the request it sends (NONE: help) */
	/* Arguments from argv[i] on (argv[0] is the name); fills c->req.
	 * 0, or -EINVAL with the reason written to err. */
	int (*parse)(int argc, char **argv, int i, struct mrc_ctl_cmd *c, FILE *err);
	/* Human rendering of the result (NULL: the verb has none). */
	int (*render)(FILE *out, const json_t *result);
	/* A view mrcctl builds from another verb's replies (top over stats):
	 * not the row that verb maps back to. */
	int view;
};

extern const struct mrc_ctl_verb mrc_ctl_verbs[];
extern const size_t mrc_ctl_n_verbs;

const struct mrc_ctl_verb *mrc_ctl_verb_find(const char *name);
/* The row that sends request verb v, or NULL. */
const struct mrc_ctl_verb *mrc_ctl_verb_of(enum mrc_oper_verb v);

/* The usage text, its verb lines generated from the table. */
void mrc_ctl_usage(FILE *f);

/* Parses VERB ARGS (argv[0] the verb) into c.  0, or -EINVAL with
 * "mrcctl: reason" and a pointer to help written to err. */
int mrc_ctl_parse(int argc, char **argv, struct mrc_ctl_cmd *c, FILE *err);
/* The usage error message alone (fmt has one %s, for a); -EINVAL. */
int mrc_ctl_usage_err(FILE *err, const char *fmt, const char *a);
/* A decimal or 0x number in 0..max: 0 or -EINVAL. */
int mrc_ctl_parse_num(const char *s, long long max, long long *out);

/* Renders verb v's result with its row's renderer (rows without one, and
 * unknown verbs: any object as key: value lines).  0, or -EINVAL when the
 * result lacks what the verb's table needs. */
int mrc_ctl_render(FILE *f, enum mrc_oper_verb v, const json_t *result);

#endif
