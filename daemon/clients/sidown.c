/* Service id ownership per uid (sidown.h).  Few ids are listened on at
 * once (a few per client), so a list is enough. */
#include <errno.h>
#include <stdlib.h>

#include "daemon/clients/sidown.h"
#include "daemon/core/sidres.h"

struct owned {
	struct owned *next;
	uint32_t sid, listeners;
	uid_t uid;
};

static struct {
	struct mrcd_sid_res *res;
	size_t nres;
	struct owned *list;
} O;

int mrcd_sidown_init(const char *reserve, char *err, size_t errlen)
{
	mrcd_sidown_fini();
	return mrcd_sid_reserve_parse(reserve, &O.res, &O.nres, err, errlen);
}

void mrcd_sidown_fini(void)
{
	while (O.list) {
		struct owned *w = O.list;
		O.list = w->next;
		free(w);
	}
	free(O.res);
	O.res = NULL;
	O.nres = 0;
}

int mrcd_sid_claim(uint32_t sid, uid_t uid, uid_t *owner, int *reserved)
{
	for (size_t i = 0; i < O.nres; i++)
		if (sid >= O.res[i].lo && sid <= O.res[i].hi && O.res[i].uid != uid) {
			*owner = O.res[i].uid;
			*reserved = 1;
			return -EADDRINUSE;
		}
	for (struct owned *w = O.list; w; w = w->next)
		if (w->sid == sid) {
			if (w->uid != uid) {
				*owner = w->uid;
				*reserved = 0;
				return -EADDRINUSE;
			}
			w->listeners++;
			return 0;
		}
	struct owned *w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	*w = (struct owned){ .next = O.list, .sid = sid, .listeners = 1, .uid = uid };
	O.list = w;
	return 0;
}

void mrcd_sid_release(uint32_t sid)
{
	for (struct owned **p = &O.list; *p; p = &(*p)->next)
		if ((*p)->sid == sid) {
			struct owned *w = *p;
			if (!--w->listeners) {
				*p = w->next;
				free(w);
			}
			return;
		}
}
