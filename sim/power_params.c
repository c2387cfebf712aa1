/* The power model's parameters file (docs/power.md "Parameters"): a JSON
 * object of mrc_sim_power_params' keys, each checked against its range.
 * Apart from the rest of sim/ so its fuzz target (fuzz/fuzz_simpower.c)
 * links it alone. */
#include <errno.h>
#include <jansson.h>
#include <stddef.h>
#include <string.h>

#include "common/errf.h"
#include "sim/power.h"

void mrc_sim_power_default(struct mrc_sim_power_params *p)
{
	/* docs/power.md "Parameters" cites each figure and says which are
	 * estimates. */
	*p = (struct mrc_sim_power_params){
		.compute_w = 650, .comm_w = 250, .other_w = 150,
		.nic_idle_w = 15, .nic_max_w = 25,
		.time_scale = 1000, .res_ms = 1,
		.band_lo_hz = 0.1, .band_hi_hz = 20,
	};
}

#define PF(name, lo, hi) { #name, offsetof(struct mrc_sim_power_params, name), lo, hi }
static const struct { const char *key; size_t off; double lo, hi; } pkeys[] = {
	PF(compute_w, 0, 1e5), PF(comm_w, 0, 1e5), PF(other_w, 0, 1e5),
	PF(nic_idle_w, 0, 1e4), PF(nic_max_w, 0, 1e4), PF(time_scale, 1e-3, 1e9),
	PF(res_ms, 1e-3, 1e4), PF(band_lo_hz, 0, 1e6), PF(band_hi_hz, 0, 1e6),
	PF(stagger_ms, 0, 1e6), PF(pace_ms, 0, 1e6), PF(floor, 0, 1),
	PF(floor_ramp_ms, 0, 1e6),
};

int mrc_sim_power_load_json(struct mrc_sim_power_params *p, const char *text, size_t len,
			    char *err, size_t errlen)
{
	json_error_t je;
	json_t *root = json_loadb(text, len, 0, &je);
	if (!root || !json_is_object(root)) {
		json_decref(root);
		return mrc__errf(err, errlen, "power params: line %d: %s", je.line,
				 root ? "not a JSON object" : je.text);
	}
	struct mrc_sim_power_params q = *p;   /* *p untouched on an error */
	const char *k;
	json_t *v;
	int rc = 0;
	json_object_foreach(root, k, v) {
		if (!json_is_number(v)) {
			rc = mrc__errf(err, errlen, "power params: %s: not a number", k);
			break;
		}
		double x = json_number_value(v);
		if (!strcmp(k, "stagger_groups")) {
			if (!json_is_integer(v) || x < 0 || x > 1 << 20) {
				rc = mrc__errf(err, errlen, "power params: stagger_groups: an integer 0..2^20");
				break;
			}
			q.stagger_groups = (uint32_t)x;
			continue;
		}
		size_t i = 0, nk = sizeof(pkeys) / sizeof(pkeys[0]);
		while (i < nk && strcmp(pkeys[i].key, k))
			i++;
		if (i == nk) {
			rc = mrc__errf(err, errlen, "power params: %s: unknown key", k);
			break;
		}
		if (!(x >= pkeys[i].lo && x <= pkeys[i].hi)) {
			rc = mrc__errf(err, errlen, "power params: %s: %g not in [%g, %g]", k, x,
				       pkeys[i].lo, pkeys[i].hi);
			break;
		}
		*(double *)((char *)&q + pkeys[i].off) = x;
	}
	json_decref(root);
	if (!rc && q.band_hi_hz <= q.band_lo_hz)
		rc = mrc__errf(err, errlen, "power params: band_hi_hz must be above band_lo_hz");
	if (!rc)
		*p = q;
	return rc;
}

json_t *mrc_sim_power_params_json(const struct mrc_sim_power_params *p)
{
	json_t *par = json_object();
	for (size_t i = 0; par && i < sizeof(pkeys) / sizeof(pkeys[0]); i++)
		json_object_set_new(par, pkeys[i].key,
				    json_real(*(const double *)((const char *)p + pkeys[i].off)));
	if (par)
		json_object_set_new(par, "stagger_groups", json_integer(p->stagger_groups));
	return par;
}
