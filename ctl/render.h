/* mrcctl's human output: tables and summaries rendered from the JSON
 * results (the JSON is the contract; this is for people).  The verb table
 * (ctl/verbs.h) names which renderer serves which verb. */
#ifndef MRC_CTL_RENDER_H
#define MRC_CTL_RENDER_H

#include <jansson.h>
#include <stdio.h>

/* Each renders one verb's result: 0, or -EINVAL when the result lacks
 * what the verb's table needs. */
int mrc_ctl_render_status(FILE *f, const json_t *res);
int mrc_ctl_render_planes(FILE *f, const json_t *res);
int mrc_ctl_render_peers(FILE *f, const json_t *res);
int mrc_ctl_render_paths(FILE *f, const json_t *res);
int mrc_ctl_render_qps(FILE *f, const json_t *res);
int mrc_ctl_render_events(FILE *f, const json_t *res);
int mrc_ctl_render_probe(FILE *f, const json_t *res);
int mrc_ctl_render_topology(FILE *f, const json_t *res);
int mrc_ctl_render_fabric(FILE *f, const json_t *res);
int mrc_ctl_render_stragglers(FILE *f, const json_t *res);
int mrc_ctl_render_version(FILE *f, const json_t *res);
int mrc_ctl_render_plane(FILE *f, const json_t *res);     /* plane disable|enable */
int mrc_ctl_render_path(FILE *f, const json_t *res);      /* path deny|allow */
/* Any object as indented key: value lines (stats). */
int mrc_ctl_render_object(FILE *f, const json_t *res);
/* One event as one line: time, kind, text. */
void mrc_ctl_render_event(FILE *out, const json_t *ev);

#endif
