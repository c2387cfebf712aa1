/* libFuzzer: the operator request parser (what mrcd reads from any
 * local caller), the reply parser (what mrcctl reads) and the renderers
 * on hostile JSON.  Invariant: a request that parses re-encodes to one
 * that parses back to the same fields. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/operjson.h"
#include "codec/prom.h"
#include "ctl/render.h"
#include "ctl/verbs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mrc_oper_req a, b;
	char err[256];
	if (!mrc_oper_req_parse(data, size, &a, err, sizeof(err))) {
		char *s = mrc_oper_req_encode(&a);
		if (!s || mrc_oper_req_parse(s, strlen(s), &b, err, sizeof(err)) ||
		    memcmp(&a, &b, sizeof(a)))
			abort();
		free(s);
	}
	json_t *res = NULL;
	uint32_t id;
	if (!mrc_oper_reply_parse(data, size, &id, &res, err, sizeof(err))) {
		FILE *f = fopen("/dev/null", "w");
		for (int v = 1; v < MRC_OPER__COUNT && f; v++)
			mrc_ctl_render(f, (enum mrc_oper_verb)v, res);
		if (f)
			fclose(f);
		free(mrc_oper_prom(res));
		json_decref(res);
	}
	return 0;
}
