/* The engine's memory per QP at its defaults (qpbytes.h). */
#include "tests/support/qpbytes.h"
#include "transport/engine.h"

size_t mrc__qp_bytes_default(void)
{
	struct mrce_cfg c;
	struct mrce *e = NULL;
	const char *why = NULL;

	mrce_cfg_default(&c);
	if (mrce_create(&c, &e, &why))
		return 0;
	size_t n = mrce_qp_bytes(e);
	mrce_destroy(e);
	return n;
}
