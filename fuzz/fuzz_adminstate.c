/* libFuzzer: the admin state file parser (daemon/core/adminstate.c),
 * which mrcd reads at start from <state_dir>/admin.json.  Invariant: a
 * file that parses formats to text that parses back to the same state. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/core/adminstate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mrcd_admin_state a, b;
	char err[256];
	if (!mrcd_admin_state_parse((const char *)data, size, &a, err, sizeof(err))) {
		char *t = NULL;
		int rc = mrcd_admin_state_format(&a, &t, err, sizeof(err));
		/* what parsed fits the limits, so it formats (the text may grow
		 * only where the input used escapes the writer does not) */
		if (rc && rc != -EFBIG)
			abort();
		if (!rc) {
			if (mrcd_admin_state_parse(t, strlen(t), &b, err, sizeof(err)) ||
			    strcmp(a.host, b.host) || strcmp(a.saved, b.saved) ||
			    a.planes != b.planes || a.npaths != b.npaths ||
			    (a.npaths && memcmp(a.paths, b.paths, a.npaths * sizeof(*a.paths))))
				abort();
			mrcd_admin_state_free(&b);
		}
		free(t);
	}
	mrcd_admin_state_free(&a);
	return 0;
}
