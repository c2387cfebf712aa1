/* Zeroed memory that costs nothing until written (zmem.c).  Setup only:
 * mrce_create (the window pool), mrce_peer_add and mrce_qp_open.  Not installed. */
#ifndef MRC_TRANSPORT_ZMEM_H
#define MRC_TRANSPORT_ZMEM_H

#include <stddef.h>

/* Blocks of this many bytes or more are mapped; below, calloc'd. */
#define MRCE__ZMEM_PAGE 4096u

/* len bytes of zeroes, or NULL; free with mrce__zfree and the same len. */
void *mrce__zalloc(size_t len);
void mrce__zfree(void *p, size_t len);

#endif
