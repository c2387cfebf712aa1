/* mrcd's persisted admin state (<state_dir>/admin.json): the planes an
 * operator disabled and the paths an operator denied, so a restart keeps
 * them.  This file is the pure codec (text in, struct out; no IO): the
 * daemon's operator module reads, writes and applies it
 * (daemon/oper/oper_state.c).  The format:
 *   {"version":1,"host":"h0","saved":"2026-11-23T17:00:00Z",
 *    "planes_disabled":[1],"paths_denied":[{"peer":"h7","ev":3}]}
 * Parsing is strict: an unknown key, a wrong type, a version other than 1,
 * a plane or EV out of range, a repeated plane, more than
 * MRCD_ADMIN_STATE_MAX_PATHS paths or more than MRCD_ADMIN_STATE_MAX_BYTES
 * of text is -EINVAL with a message naming the field. */
#ifndef MRC_DAEMON_ADMINSTATE_H
#define MRC_DAEMON_ADMINSTATE_H

#include <stddef.h>
#include <stdint.h>

#define MRCD_ADMIN_STATE_VERSION 1
#define MRCD_ADMIN_STATE_MAX_BYTES (64u << 10)
#define MRCD_ADMIN_STATE_MAX_PATHS 4096u
#define MRCD_ADMIN_STATE_NAME 64     /* host and peer names, with the NUL */

struct mrcd_admin_path_ent {
	char peer[MRCD_ADMIN_STATE_NAME];   /* host name as the topology spells it */
	uint32_t ev;
};

struct mrcd_admin_state {
	char host[MRCD_ADMIN_STATE_NAME];   /* the host that saved it */
	char saved[40];                     /* ISO 8601 UTC, informational */
	uint32_t planes;                    /* bit p: plane p disabled */
	uint32_t npaths;
	struct mrcd_admin_path_ent *paths;  /* malloc'd; mrcd_admin_state_free */
};

/* Parses len bytes of text (not NUL-terminated) into s (which the caller
 * frees with mrcd_admin_state_free, also after an error).  0 or -EINVAL
 * with err naming the field and why. */
int mrcd_admin_state_parse(const char *text, size_t len, struct mrcd_admin_state *s,
			   char *err, size_t errlen);
/* Formats s as one line of JSON ending in a newline; *out is malloc'd.
 * -EINVAL when s would not parse back (a name too long or empty, a plane
 * or EV out of range), -EFBIG when the text would exceed
 * MRCD_ADMIN_STATE_MAX_BYTES or there are too many paths, -ENOMEM. */
int mrcd_admin_state_format(const struct mrcd_admin_state *s, char **out,
			    char *err, size_t errlen);
/* Appends a path (grows paths); -ENOMEM, -EFBIG past the limit. */
int mrcd_admin_state_add_path(struct mrcd_admin_state *s, const char *peer, uint32_t ev);
void mrcd_admin_state_free(struct mrcd_admin_state *s);

#endif
