/* The table mrcctl prints (iproute2/ss style: one header line, columns
 * padded to the widest cell) and cells made from JSON values, shared by
 * the verb renderers (render.c) and `mrcctl top` (top.c).  Header-only
 * and static: small, and internal to ctl/. */
#ifndef MRC_CTL_TABLE_H
#define MRC_CTL_TABLE_H

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXCOL 16

struct table {
	int ncol, nrow, cap;
	const char *head[MAXCOL];
	char **cell;          /* nrow * ncol */
};

static inline void t_init(struct table *t, const char *const *head)
{
	memset(t, 0, sizeof(*t));
	while (head[t->ncol] && t->ncol < MAXCOL) {
		t->head[t->ncol] = head[t->ncol];
		t->ncol++;
	}
}

static inline char **t_row(struct table *t)
{
	if (t->nrow == t->cap) {
		int cap = t->cap ? t->cap * 2 : 16;
		char **c = realloc(t->cell, sizeof(char *) * (size_t)cap * (size_t)t->ncol);
		if (!c)
			return NULL;
		t->cell = c;
		t->cap = cap;
	}
	char **r = &t->cell[t->nrow++ * t->ncol];
	memset(r, 0, sizeof(char *) * (size_t)t->ncol);
	return r;
}

static inline void t_print(FILE *f, struct table *t)
{
	int w[MAXCOL];
	for (int c = 0; c < t->ncol; c++) {
		w[c] = (int)strlen(t->head[c]);
		for (int r = 0; r < t->nrow; r++) {
			const char *s = t->cell[r * t->ncol + c];
			if (s && (int)strlen(s) > w[c])
				w[c] = (int)strlen(s);
		}
	}
	for (int r = -1; r < t->nrow; r++)
		for (int c = 0; c < t->ncol; c++) {
			const char *s = r < 0 ? t->head[c] : t->cell[r * t->ncol + c];
			if (c + 1 < t->ncol)
				fprintf(f, "%-*s  ", w[c], s ? s : "-");
			else
				fprintf(f, "%s\n", s ? s : "-");
		}
	for (int i = 0; i < t->nrow * t->ncol; i++)
		free(t->cell[i]);
	free(t->cell);
}

/* A cell from a JSON value: strings as they are, integers, reals with
 * one decimal, booleans yes/no. */
static inline char *cell(const json_t *v)
{
	char b[64];
	if (json_is_string(v))
		return strdup(json_string_value(v));
	if (json_is_integer(v))
		snprintf(b, sizeof(b), "%lld", (long long)json_integer_value(v));
	else if (json_is_real(v))
		snprintf(b, sizeof(b), "%.1f", json_real_value(v));
	else if (json_is_boolean(v))
		snprintf(b, sizeof(b), "%s", json_is_true(v) ? "yes" : "no");
	else
		return strdup("-");
	return strdup(b);
}

static inline char *cellf(const char *fmt, double x)
{
	char b[64];
	snprintf(b, sizeof(b), fmt, x);
	return strdup(b);
}

static inline const json_t *get(const json_t *o, const char *k) { return json_object_get(o, k); }
static inline long long gi(const json_t *o, const char *k) { return (long long)json_integer_value(get(o, k)); }
static inline const char *gs(const json_t *o, const char *k)
{
	const char *s = json_string_value(get(o, k));
	return s ? s : "-";
}

#endif
