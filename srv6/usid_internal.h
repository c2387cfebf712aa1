/* Helpers shared by the srv6/ encoders (not part of the public API). */
#ifndef MRC_SRV6_USID_INTERNAL_H
#define MRC_SRV6_USID_INTERNAL_H

#include <netinet/in.h>
#include <stdint.h>

struct mrc_srv6_err;

void mrc__srv6_set_err(struct mrc_srv6_err *err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Word i (0..7) of an IPv6 address, as a host-order 16-bit value. */
uint16_t mrc__usid_a6_word(const struct in6_addr *a, unsigned i);
void mrc__usid_a6_set_word(struct in6_addr *a, unsigned i, uint16_t v);

#endif
