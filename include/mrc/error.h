/* mrc error reporting: every function returns 0 or a negative errno. */
#ifndef MRC_ERROR_H
#define MRC_ERROR_H

#ifdef __cplusplus
extern "C" {
#endif

/* A one-line, human description of a negative errno returned by any mrc
 * function (e.g. -EACCES: "remote access violation (key, bounds or
 * rights)").  Never NULL; the string is static. */
const char *mrc_strerror(int err);

#ifdef __cplusplus
}
#endif
#endif
