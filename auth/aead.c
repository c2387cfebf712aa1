/* AEAD payload mode: AES-256-GCM (libsodium, AES-NI only) with nonces that
 * never repeat under a key.  See auth.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "auth/auth_int.h"

struct mrc_auth_aead {
	crypto_aead_aes256gcm_state st;   /* expanded key (aligned 16) */
	uint64_t next_seq;                /* tx: next sequence to use */
	uint32_t dir;                     /* nonce prefix */
	uint8_t tx;
	/* rx: replay window; seq top - 1 is the newest accepted, bit
	 * seq % WINDOW of win says whether seq (top - WINDOW <= seq < top)
	 * was.  top == 0: nothing accepted yet. */
	uint64_t top;
	uint64_t win[MRC_AUTH_REPLAY_WINDOW / 64];
};

int mrc_auth_aead_available(void)
{
	return mrc__auth_ready() == 0 && crypto_aead_aes256gcm_is_available();
}

int mrc_auth_aead_create(const struct mrc_auth_conn *c, int tx,
			 struct mrc_auth_aead **out, const char **why)
{
	if (!c || !out) {
		if (why)
			*why = "no connection";
		return -EINVAL;
	}
	if (!mrc_auth_aead_available()) {
		if (why)
			*why = "AES-256-GCM needs a CPU with AES-NI and PCLMUL; "
			       "this one has none: run without payload encryption";
		return -ENOTSUP;
	}
	void *mem = NULL;
	if (posix_memalign(&mem, 64, sizeof(struct mrc_auth_aead))) {
		if (why)
			*why = "out of memory";
		return -ENOMEM;
	}
	struct mrc_auth_aead *s = mem;
	memset(s, 0, sizeof(*s));
	s->tx = !!tx;
	s->dir = tx ? c->tx_dir : c->rx_dir;
	crypto_aead_aes256gcm_beforenm(&s->st, tx ? c->tx_key : c->rx_key);
	*out = s;
	return 0;
}

void mrc_auth_aead_free(struct mrc_auth_aead *s)
{
	if (!s)
		return;
	sodium_memzero(s, sizeof(*s));
	free(s);
}

static void nonce_of(uint8_t n[crypto_aead_aes256gcm_NPUBBYTES], uint32_t dir,
		     uint64_t seq)
{
	mrc__auth_be32(n, dir);
	mrc__auth_be64(n + 4, seq);
}

int mrc_auth_aead_seal(struct mrc_auth_aead *s, const void *ad, size_t adlen,
		       void *buf, size_t len, uint64_t *seq,
		       uint8_t tag[MRC_AUTH_TAG_BYTES])
{
	if (!s || !s->tx || !seq || !tag || (len && !buf) || (adlen && !ad))
		return -EINVAL;
	if (len > crypto_aead_aes256gcm_MESSAGEBYTES_MAX)
		return -EMSGSIZE;
	if (s->next_seq == UINT64_MAX)
		return -EOVERFLOW;    /* never reused, so never wrapped */
	uint8_t n[crypto_aead_aes256gcm_NPUBBYTES];
	nonce_of(n, s->dir, s->next_seq);
	unsigned long long tlen = 0;
	if (crypto_aead_aes256gcm_encrypt_detached_afternm(buf, tag, &tlen, buf, len,
							   ad, adlen, NULL, n, &s->st) ||
	    tlen != MRC_AUTH_TAG_BYTES)
		return -EIO;
	*seq = s->next_seq++;
	return 0;
}

int mrc_auth_aead_open(const struct mrc_auth_aead *s, const void *ad, size_t adlen,
		       void *buf, size_t len, uint64_t seq,
		       const uint8_t tag[MRC_AUTH_TAG_BYTES])
{
	if (!s || s->tx || !tag || (len && !buf) || (adlen && !ad))
		return -EINVAL;
	if (len > crypto_aead_aes256gcm_MESSAGEBYTES_MAX)
		return -EMSGSIZE;
	uint8_t n[crypto_aead_aes256gcm_NPUBBYTES];
	nonce_of(n, s->dir, seq);
	if (crypto_aead_aes256gcm_decrypt_detached_afternm(buf, NULL, buf, len, tag,
							   ad, adlen, n, &s->st))
		return -EBADMSG;
	return 0;
}

int mrc_auth_aead_replay_check(const struct mrc_auth_aead *s, uint64_t seq)
{
	if (!s || s->tx)
		return -EINVAL;
	if (seq >= s->top)
		return 0;
	if (s->top - seq > MRC_AUTH_REPLAY_WINDOW)
		return -EALREADY;   /* too old to tell: refused, as IPsec does */
	uint64_t b = seq % MRC_AUTH_REPLAY_WINDOW;
	return s->win[b / 64] >> (b % 64) & 1 ? -EALREADY : 0;
}

void mrc_auth_aead_replay_commit(struct mrc_auth_aead *s, uint64_t seq)
{
	if (!s || s->tx || seq == UINT64_MAX)
		return;
	if (seq >= s->top) {
		/* Slide: the bits of the seqs passed over are cleared. */
		if (seq - s->top >= MRC_AUTH_REPLAY_WINDOW) {
			memset(s->win, 0, sizeof s->win);
		} else {
			for (uint64_t q = s->top; q < seq; q++) {
				uint64_t b = q % MRC_AUTH_REPLAY_WINDOW;
				s->win[b / 64] &= ~(1ull << (b % 64));
			}
		}
		s->top = seq + 1;
	}
	uint64_t b = seq % MRC_AUTH_REPLAY_WINDOW;
	s->win[b / 64] |= 1ull << (b % 64);
}

_Static_assert(MRC_AUTH_HKEY_BYTES == crypto_shorthash_KEYBYTES &&
	       MRC_AUTH_HTAG_BYTES == crypto_shorthash_BYTES, "SipHash-2-4 sizes");

int mrc_auth_htag(const uint8_t key[MRC_AUTH_HKEY_BYTES], const void *m, size_t len,
		  uint8_t tag[MRC_AUTH_HTAG_BYTES])
{
	if (!key || !tag || (len && !m))
		return -EINVAL;
	return crypto_shorthash(tag, m, len, key) ? -EIO : 0;
}

int mrc_auth_htag_verify(const uint8_t key[MRC_AUTH_HKEY_BYTES], const void *m, size_t len,
			 const uint8_t tag[MRC_AUTH_HTAG_BYTES])
{
	uint8_t t[MRC_AUTH_HTAG_BYTES];
	if (!tag || mrc_auth_htag(key, m, len, t))
		return -EINVAL;
	return sodium_memcmp(t, tag, sizeof t) ? -EBADMSG : 0;
}

int mrc_auth_pair_mac(const uint8_t key[MRC_AUTH_PAIR_KEY_BYTES], const void *m, size_t len,
		      uint8_t tag[MRC_AUTH_PAIR_TAG_BYTES])
{
	if (!key || !tag || (len && !m))
		return -EINVAL;
	return crypto_generichash(tag, MRC_AUTH_PAIR_TAG_BYTES, m, len, key,
				  MRC_AUTH_PAIR_KEY_BYTES) ? -EIO : 0;
}

int mrc_auth_pair_verify(const uint8_t key[MRC_AUTH_PAIR_KEY_BYTES], const void *m,
			 size_t len, const uint8_t tag[MRC_AUTH_PAIR_TAG_BYTES])
{
	uint8_t t[MRC_AUTH_PAIR_TAG_BYTES];
	if (!tag || mrc_auth_pair_mac(key, m, len, t))
		return -EINVAL;
	return sodium_memcmp(t, tag, sizeof t) ? -EBADMSG : 0;
}
