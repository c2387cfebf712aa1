/* FI_MRC_TRACE (fi/trace.h): events in a fixed array, written once at
 * fi_close(domain), so tracing costs a store per event on the path. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "fi/mrcfi.h"
#include "fi/trace.h"

#define TRACE_MAX (1u << 18)

__thread int mrcfi_in_prog;

void mrcfi_trace_open(struct mrcfi_domain *d)
{
	const char *dir = getenv("FI_MRC_TRACE");
	if (!dir || !*dir)
		return;
	d->trace = calloc(TRACE_MAX, sizeof(*d->trace));
	if (d->trace)
		d->trace_dir = dir;
}

void mrcfi_trace_ev(struct mrcfi_domain *d, int ev, uint32_t peer, uint32_t id, uint64_t len)
{
	if (d->ntrace >= TRACE_MAX)
		return;
	struct mrcfi_tent *t = &d->trace[d->ntrace++];
	t->ns = mrcfi_now_ns();
	t->peer = peer;
	t->id = id;
	t->len = len > UINT32_MAX ? UINT32_MAX : (uint32_t)len;
	t->ev = (uint8_t)ev;
	t->prog = (uint8_t)mrcfi_in_prog;
}

void mrcfi_trace_close(struct mrcfi_domain *d)
{
	if (!d->trace)
		return;
	char path[512];
	snprintf(path, sizeof(path), "%s/fitrace.%u.%ld", d->trace_dir, d->host, (long)getpid());
	FILE *f = fopen(path, "w");
	if (f) {
		/* ns ev host peer id len prog */
		for (uint32_t i = 0; i < d->ntrace; i++) {
			const struct mrcfi_tent *t = &d->trace[i];
			fprintf(f, "%lu %u %u %u %u %u %u\n", (unsigned long)t->ns, t->ev, d->host,
				t->peer, t->id, t->len, t->prog);
		}
		fclose(f);
	}
	free(d->trace);
	d->trace = NULL;
}
