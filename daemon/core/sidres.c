/* service_reserve parser (sidres.h). */
#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/core/sidres.h"

static int parse_u32(const char *s, const char *end, uint32_t *v)
{
	if (s == end || end - s > 10)
		return -1;
	uint64_t x = 0;
	for (; s < end; s++) {
		if (*s < '0' || *s > '9')
			return -1;
		x = x * 10 + (uint64_t)(*s - '0');
	}
	if (x > UINT32_MAX)
		return -1;
	*v = (uint32_t)x;
	return 0;
}

static int parse_item(const char *it, struct mrcd_sid_res *r, char *err, size_t errlen)
{
	const char *colon = strchr(it, ':');
	const char *dash = colon ? memchr(it, '-', (size_t)(colon - it)) : NULL;
	if (!colon || !colon[1] || parse_u32(it, dash ? dash : colon, &r->lo) ||
	    (r->hi = r->lo, dash && parse_u32(dash + 1, colon, &r->hi)) || r->lo > r->hi) {
		snprintf(err, errlen, "key 'service_reserve': '%s' is not SID[-SID]:uid|user", it);
		return -EINVAL;
	}
	uint32_t uid;
	if (!parse_u32(colon + 1, colon + 1 + strlen(colon + 1), &uid)) {
		r->uid = (uid_t)uid;
		return 0;
	}
	struct passwd *pw = getpwnam(colon + 1);
	if (!pw) {
		snprintf(err, errlen, "key 'service_reserve': '%s': no user '%s'", it, colon + 1);
		return -ENOENT;
	}
	r->uid = pw->pw_uid;
	return 0;
}

int mrcd_sid_reserve_parse(const char *s, struct mrcd_sid_res **out, size_t *n,
			   char *err, size_t errlen)
{
	*out = NULL;
	*n = 0;
	if (!s[0])
		return 0;
	char *copy = strdup(s);
	size_t cap = 1;
	for (const char *p = s; *p; p++)
		cap += *p == ',';
	struct mrcd_sid_res *r = calloc(cap, sizeof(*r));
	if (!copy || !r) {
		free(copy);
		free(r);
		return -ENOMEM;
	}
	int rc = 0;
	char *save = NULL;
	for (char *it = strtok_r(copy, ",", &save); it && !rc; it = strtok_r(NULL, ",", &save))
		rc = parse_item(it, &r[(*n)++], err, errlen);
	free(copy);
	if (rc) {
		free(r);
		*n = 0;
		return rc;
	}
	*out = r;
	return 0;
}
