/* Prometheus text exposition (format 0.0.4) of the `stats` JSON, shared by
 * `mrcctl stats --prom` and mrcd's metrics_listen HTTP endpoint, so both
 * print the same series. */
#ifndef MRC_CODEC_PROM_H
#define MRC_CODEC_PROM_H

#include <jansson.h>

/* Caller frees; NULL when out of memory. */
char *mrc_oper_prom(const json_t *stats);

#endif
