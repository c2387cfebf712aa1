/* `mrcctl top` (docs/ctl.md): a refreshing view of per-plane and per-peer
 * rates, losses and EV states, like top or `ip -s`. */
#ifndef MRC_CTL_TOP_H
#define MRC_CTL_TOP_H

#include <jansson.h>
#include <stdio.h>

/* One frame: title, datapath and engine rates, a plane table and the
 * busiest peers, from `stats` result cur and the one dt seconds before it
 * (prev NULL: the first frame; counter rates show "-").  0, or -EINVAL
 * when cur lacks the sections, -ENOMEM. */
int mrc_ctl_top_frame(FILE *f, const char *title, const json_t *cur, const json_t *prev, double dt);

#endif
