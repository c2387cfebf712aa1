/* Small helpers: a growable text buffer and error messages. */
#include <stdio.h>
#include <stdlib.h>

#include "tools/fabric/fabric.h"

void sb_printf(struct sbuf *b, const char *fmt, ...)
{
	va_list ap;
	if (b->oom)
		return;
	for (;;) {
		size_t room = b->cap - b->len;
		va_start(ap, fmt);
		int n = vsnprintf(b->p ? b->p + b->len : NULL, room, fmt, ap);
		va_end(ap);
		if (n < 0) {
			b->oom = true;
			return;
		}
		if ((size_t)n < room) {
			b->len += (size_t)n;
			return;
		}
		size_t cap = b->cap ? b->cap * 2 : 4096;
		while (cap < b->len + (size_t)n + 1)
			cap *= 2;
		char *p = realloc(b->p, cap);
		if (!p) {
			b->oom = true;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
}

void sb_free(struct sbuf *b)
{
	free(b->p);
	*b = (struct sbuf){0};
}

void fab_err(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("mrc-fabric: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}
