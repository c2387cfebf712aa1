/* auth/ internals shared by its files.  Not installed. */
#ifndef MRC_AUTH_AUTH_INT_H
#define MRC_AUTH_AUTH_INT_H

#include <sodium.h>

#include "auth/auth.h"

/* Subkeys of the cluster key, one per use, so no two uses share a key. */
struct mrc_auth {
	uint8_t conn[crypto_kdf_KEYBYTES];   /* per-connection secrets */
	uint8_t ctrl[crypto_kdf_KEYBYTES];   /* CTRL envelope MAC */
	uint8_t probe[crypto_kdf_KEYBYTES];  /* probe tokens */
};

/* sodium_init once; -EIO if libsodium cannot start. */
int mrc__auth_ready(void);

static inline void mrc__auth_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24); p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8); p[3] = (uint8_t)v;
}
static inline void mrc__auth_be64(uint8_t *p, uint64_t v)
{
	mrc__auth_be32(p, (uint32_t)(v >> 32));
	mrc__auth_be32(p + 4, (uint32_t)v);
}
static inline uint32_t mrc__auth_ld32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}
static inline uint64_t mrc__auth_ld64(const uint8_t *p)
{
	return (uint64_t)mrc__auth_ld32(p) << 32 | mrc__auth_ld32(p + 4);
}

#endif
