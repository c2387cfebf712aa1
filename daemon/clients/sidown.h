/* Service ids belong to users: the uid of the first listener owns an id
 * while any of its listeners lives, and another uid's listen is refused
 * (-EADDRINUSE), so a local client cannot squat an id and receive other
 * hosts' connection requests and private data; ids in service_reserve
 * belong to their user from the start. */
#ifndef MRC_DAEMON_SIDOWN_H
#define MRC_DAEMON_SIDOWN_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Reads the reservations (cfg service_reserve); fills err on error. */
int mrcd_sidown_init(const char *reserve, char *err, size_t errlen);
void mrcd_sidown_fini(void);
/* Takes one listener's share of sid for uid: 0, or -EADDRINUSE with
 * *owner the uid that owns or reserved it and *reserved set accordingly. */
int mrcd_sid_claim(uint32_t sid, uid_t uid, uid_t *owner, int *reserved);
/* Gives back a share taken by mrcd_sid_claim. */
void mrcd_sid_release(uint32_t sid);

#endif
