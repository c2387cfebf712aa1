/* libFuzzer: mrcsim's power parameters parser (sim/power_params.c) on
 * hostile files.  Invariant: what parses is in range, and its JSON form
 * parses back to the same params (compared as JSON: the struct has
 * padding). */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sim/power.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mrc_sim_power_params a, b;
	char err[256];
	mrc_sim_power_default(&a);
	if (mrc_sim_power_load_json(&a, (const char *)data, size, err, sizeof(err)))
		return 0;
	if (!(a.floor >= 0 && a.floor <= 1) || !(a.res_ms > 0) || a.band_hi_hz <= a.band_lo_hz)
		abort();
	json_t *j = mrc_sim_power_params_json(&a);
	char *s = j ? json_dumps(j, JSON_REAL_PRECISION(17)) : NULL;
	json_decref(j);
	if (!s)
		return 0;
	mrc_sim_power_default(&b);
	if (mrc_sim_power_load_json(&b, s, strlen(s), err, sizeof(err)))
		abort();
	json_t *k = mrc_sim_power_params_json(&b);
	char *t = k ? json_dumps(k, JSON_REAL_PRECISION(17)) : NULL;
	json_decref(k);
	if (t && strcmp(s, t))
		abort();
	free(s);
	free(t);
	return 0;
}
