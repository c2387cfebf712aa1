/* libnccl-net-mrc.so, logging: through NCCL's logger once init gave it
 * (NCCL_DEBUG decides what shows), else warnings (and everything with
 * MRC_NCCL_DEBUG set) to stderr. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "nccl/plugin.h"

static ncclDebugLogger_t logger;

__attribute__((format(printf, 3, 4)))
void mrcn_log(ncclDebugLogLevel lvl, int line, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (logger)
		logger(lvl, NCCL_NET | NCCL_INIT, __FILE__, line, "NET/mrc : %s", buf);
	else if (lvl == NCCL_LOG_WARN || getenv("MRC_NCCL_DEBUG"))
		fprintf(stderr, "NET/mrc: %s\n", buf);
}

void mrcn_log_set(ncclDebugLogger_t fn)
{
	logger = fn;
}
