/* libFuzzer: mrcd.conf text.  Any input is refused with a message or
 * accepted, never a crash; an accepted one must pass the same parse again
 * with the same result (parsing is deterministic and all-or-nothing). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/core/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 65536)
		return 0;
	char *text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = 0;
	struct mrcd_cfg a, b;
	char err[512];
	mrcd_cfg_default(&a);
	mrcd_cfg_default(&b);
	int ra = mrcd_cfg_parse(&a, text, "fuzz", err, sizeof(err));
	int rb = mrcd_cfg_parse(&b, text, "fuzz", err, sizeof(err));
	if (ra != rb || memcmp(&a, &b, sizeof(a)))
		abort();
	if (!ra)
		mrcd_cfg_check(&a, err, sizeof(err));
	free(text);
	return 0;
}
