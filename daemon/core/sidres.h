/* service_reserve (mrcd.conf): service ids an operator reserves for a
 * user, "SID[-SID]:uid|user[,...]", e.g. "1000-1099:alice,7:1001".  Only
 * that user's clients may listen on a reserved id (daemon/clients/sidown.c). */
#ifndef MRC_DAEMON_SIDRES_H
#define MRC_DAEMON_SIDRES_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct mrcd_sid_res {
	uint32_t lo, hi;              /* inclusive */
	uid_t uid;
};

/* Parses s ("" is none) into a malloc'd array (*out, *n; free it).  User
 * names are looked up now.  On error fills err with the item and why and
 * returns -EINVAL (-ENOENT: no such user). */
int mrcd_sid_reserve_parse(const char *s, struct mrcd_sid_res **out, size_t *n,
			   char *err, size_t errlen);

#endif
