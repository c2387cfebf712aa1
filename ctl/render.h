/* mrcctl's human output: tables and summaries rendered from the JSON
 * results (the JSON is the contract; this is for people). */
#ifndef MRC_CTL_RENDER_H
#define MRC_CTL_RENDER_H

#include <jansson.h>
#include <stdio.h>

#include "codec/operjson.h"

/* Renders a verb's result.  0, or -EINVAL when the result lacks what the
 * verb's table needs. */
int mrc_oper_render(FILE *out, enum mrc_oper_verb v, const json_t *result);
/* One event as one line: time, kind, text. */
void mrc_oper_render_event(FILE *out, const json_t *ev);

#endif
