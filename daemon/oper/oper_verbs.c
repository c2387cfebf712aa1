/* mrcd's operator verbs: one handler per verb of codec/operverbs.def, in
 * a table indexed by the verb (wireguard-tools' wg.c dispatches its
 * subcommands the same way).  oper.c parses the request, refuses admin
 * verbs to non-admins (the flag from the same definition) and sends the
 * reply; a handler only computes the result.
 *
 * The table is generated from the definition: a row whose handler is not
 * written here does not compile (undeclared identifier), a handler no row
 * names does not either (-Werror=unused-function). */
#include <errno.h>
#include <stdio.h>

#include "daemon/oper/oper.h"

static int oper_verb_status(struct oper_conn *c, const struct mrc_oper_req *r, json_t **res,
			    char *err, size_t errlen)
{
	*res = mrcd_oper_status(c->o);
	return 0;
}

static int oper_verb_planes(struct oper_conn *c, const struct mrc_oper_req *r, json_t **res,
			    char *err, size_t errlen)
{
	*res = mrcd_oper_planes(c->o);
	return 0;
}

static int oper_verb_peers(struct oper_conn *c, const struct mrc_oper_req *r, json_t **res,
			   char *err, size_t errlen)
{
	*res = mrcd_oper_peers(c->o);
	return 0;
}

static int oper_verb_paths(struct oper_conn *c, const struct mrc_oper_req *r, json_t **res,
			   char *err, size_t errlen)
{
	return mrcd_oper_paths(c->o, r->peer, res, err, errlen);
}

static int oper_verb_fabric(struct oper_conn *c, const struct mrc_oper_req *r, json_t **res,
			    char *err, size_t errlen)
{
	*res = mrcd_oper_fabric(c->o);
	return 0;
}

static int oper_verb_stragglers(struct oper_conn *c, const struct mrc_oper_req *r, json_t **res,
				char *err, size_t errlen)
{
	*res = mrcd_oper_stragglers(c->o);
	return 0;
}

static int oper_verb_qps(struct oper_conn *c, const struct mrc_oper_req *r, json_t **res,
			 char *err, size_t errlen)
{
	return mrcd_oper_qps(c->o, r->qp, res, err, errlen);
}

static int oper_verb_stats(struct oper_conn *c, const struct mrc_oper_req *r, json_t **res,
			   char *err, size_t errlen)
{
	*res = mrcd_oper_stats(c->o);
	return 0;
}

/* The recent events; with follow, the connection then streams new ones
 * (oper.c sends them to every connection with c->follow). */
static int oper_verb_events(struct oper_conn *c, const struct mrc_oper_req *r, json_t **res,
			    char *err, size_t errlen)
{
	*res = json_pack("{s:o, s:I}", "events", mrcd_oper_events_recent(c->o, r->last),
			 "total", (json_int_t)c->o->seq);
	c->follow = r->follow;
	return 0;
}

static int oper_verb_probe(struct oper_conn *c, const struct mrc_oper_req *r, json_t **res,
			   char *err, size_t errlen)
{
	int rc = mrcd_oper_probe_start(c, r, err, errlen);
	return rc ? rc : MRCD_OPER_LATER;   /* answered when the probes are */
}

static int oper_verb_topology(struct oper_conn *c, const struct mrc_oper_req *r, json_t **res,
			      char *err, size_t errlen)
{
	*res = mrcd_oper_topology(c->o);
	return 0;
}

static int oper_verb_version(struct oper_conn *c, const struct mrc_oper_req *r, json_t **res,
			     char *err, size_t errlen)
{
	*res = mrcd_oper_version(c->o);
	return 0;
}

/* plane-disable and plane-enable */
static int oper_verb_plane_admin(struct oper_conn *c, const struct mrc_oper_req *r, json_t **res,
				 char *err, size_t errlen)
{
	return mrcd_oper_plane_admin(c->o, c, r->plane, r->verb == MRC_OPER_PLANE_DISABLE, res,
				     err, errlen);
}

/* path-deny and path-allow */
static int oper_verb_path_admin(struct oper_conn *c, const struct mrc_oper_req *r, json_t **res,
				char *err, size_t errlen)
{
	return mrcd_oper_path_admin(c->o, c, r->peer, r->ev, r->verb == MRC_OPER_PATH_DENY, res,
				    err, errlen);
}

static mrcd_oper_verb_fn *const handlers[] = {
#define MRC_VERB(ID, wire, admin, need, allow, handler, ...) [MRC_OPER_##ID] = handler,
#include "codec/operverbs.def"
};
_Static_assert(sizeof(handlers) / sizeof(handlers[0]) == MRC_OPER__COUNT,
	       "the handler table covers every verb of codec/operverbs.def");

int mrcd_oper_run(struct oper_conn *c, const struct mrc_oper_req *r, json_t **res,
		  char *err, size_t errlen)
{
	*res = NULL;
	if (r->verb <= MRC_OPER_NONE || r->verb >= MRC_OPER__COUNT || !handlers[r->verb]) {
		snprintf(err, errlen, "verb not implemented");
		return -ENOSYS;
	}
	return handlers[r->verb](c, r, res, err, errlen);
}
