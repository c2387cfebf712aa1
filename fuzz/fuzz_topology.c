/* libFuzzer target: the topology file parser, then every query a caller
 * makes on what it accepted (paths, EV decode, crossing queries, dump and
 * re-parse).  Any accepted file must be fully usable; any rejected one must
 * come back with a message and no topology. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "topology/topo.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mrc_topo *t = NULL;
	char err[MRC_TOPO_ERRLEN];
	err[0] = 0;
	if (mrc_topo_parse_json((const char *)data, size, &t, err, sizeof(err))) {
		if (t || !err[0])
			abort();
		return 0;
	}
	/* A few pairs only: a big generated fabric must not make a run slow. */
	uint32_t pairs = t->n_hosts < 4 ? t->n_hosts : 4;
	for (uint32_t a = 0; a < pairs; a++)
		for (uint32_t b = 0; b < pairs; b++) {
			struct mrc_path p[8];
			uint16_t evs[8];
			size_t n;
			if (a == b)
				continue;
			mrc_topo_paths(t, a, b, p, 8, &n);
			for (uint32_t ev = 0; ev < mrc_topo_ev_count(t) && ev < 64; ev++) {
				struct mrc_path f, r;
				int rf = mrc_topo_path(t, a, b, ev, &f);
				int rr = mrc_topo_path(t, b, a, ev, &r);
				if (rf != rr || (!rf && (f.plane != r.plane || f.spine != r.spine)))
					abort();
			}
			mrc_topo_evs_crossing_link(t, a, b, 0, evs, 8, &n);
			mrc_topo_evs_crossing_node(t, a, b, 0, evs, 8, &n);
		}
	if (t->n_nodes <= 64) {
		char *text = NULL;
		struct mrc_topo *u = NULL;
		if (mrc_topo_to_json(t, &text) == 0) {
			if (mrc_topo_parse_json(text, strlen(text), &u, err, sizeof(err)))
				abort();  /* what we write we must read back */
			mrc_topo_free(u);
			free(text);
		}
	}
	mrc_topo_free(t);
	return 0;
}
