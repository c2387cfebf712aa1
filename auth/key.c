/* Cluster key file, its subkeys, per-connection secrets and tokens, probe
 * tokens.  See auth.h. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "auth/auth_int.h"

/* crypto_kdf contexts: 8 bytes each, one per derivation step. */
static const char CTX_CLUSTER[crypto_kdf_CONTEXTBYTES] = { 'm','r','c','c','l','u','s','2' };
static const char CTX_CONN[crypto_kdf_CONTEXTBYTES] = { 'm','r','c','c','o','n','n','2' };
enum { SUB_CONN = 1, SUB_CTRL = 2, SUB_PROBE = 3 };
enum { CONN_TOK_REQ = 1, CONN_TOK_REP = 2, CONN_KEY_REQ = 3, CONN_KEY_REP = 4,
       CONN_HKEY_REQ = 5, CONN_HKEY_REP = 6 };
/* AEAD nonce prefixes: requester->acceptor and back. */
enum { DIR_REQ = 1, DIR_REP = 2 };

int mrc__auth_ready(void)
{
	return sodium_init() < 0 ? -EIO : 0;
}

#define WHY(msg) do { if (why) *why = (msg); } while (0)

int mrc_auth_key_parse(const void *buf, size_t len, struct mrc_auth **out,
		       const char **why)
{
	int rc = mrc__auth_ready();
	if (rc) {
		WHY("libsodium failed to initialise");
		return rc;
	}
	if (!buf || !out) {
		WHY("no key");
		return -EINVAL;
	}
	if (len != MRC_AUTH_KEY_BYTES) {
		WHY("a cluster key is exactly 32 bytes");
		return -EINVAL;
	}
	if (sodium_is_zero(buf, len)) {
		WHY("the cluster key is all zeros (not generated?)");
		return -EINVAL;
	}
	struct mrc_auth *a = sodium_malloc(sizeof(*a));
	if (!a) {
		WHY("out of memory");
		return -ENOMEM;
	}
	const uint8_t *k = buf;
	if (crypto_kdf_derive_from_key(a->conn, sizeof a->conn, SUB_CONN, CTX_CLUSTER, k) ||
	    crypto_kdf_derive_from_key(a->ctrl, sizeof a->ctrl, SUB_CTRL, CTX_CLUSTER, k) ||
	    crypto_kdf_derive_from_key(a->probe, sizeof a->probe, SUB_PROBE, CTX_CLUSTER, k)) {
		sodium_free(a);
		WHY("key derivation failed");
		return -EIO;
	}
	/* Read-only from here: a stray write faults instead of changing keys. */
	sodium_mprotect_readonly(a);
	*out = a;
	return 0;
}

void mrc_auth_free(struct mrc_auth *a)
{
	if (a)
		sodium_free(a);   /* wipes it */
}

int mrc_auth_key_load(const char *path, struct mrc_auth **out, const char **why)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
	if (fd < 0) {
		int err = errno;
		WHY(err == ELOOP ? "the key file is a symbolic link" :
		    err == ENOENT ? "no key file (generate one with mrcd --genkey)" :
		    "cannot open the key file");
		return -err;
	}
	struct stat st;
	uint8_t key[MRC_AUTH_KEY_BYTES + 1];
	ssize_t n = 0;
	int rc = 0;
	if (fstat(fd, &st)) {
		rc = -errno;
		WHY("cannot stat the key file");
	} else if (!S_ISREG(st.st_mode)) {
		rc = -EINVAL;
		WHY("the key file is not a regular file");
	} else if (st.st_uid != geteuid()) {
		rc = -EACCES;
		WHY("the key file is not owned by the user reading it (root for mrcd)");
	} else if (st.st_mode & (S_IRWXG | S_IRWXO)) {
		rc = -EACCES;
		WHY("the key file is accessible by group or others: chmod 600 it");
	} else if (st.st_size != MRC_AUTH_KEY_BYTES) {
		rc = -EINVAL;
		WHY("the key file must hold exactly 32 bytes");
	} else {
		/* One byte more than wanted: a file that grew since fstat is
		 * caught too. */
		size_t got = 0;
		while (got < sizeof key && (n = read(fd, key + got, sizeof key - got)) > 0)
			got += (size_t)n;
		if (n < 0) {
			rc = -errno;
			WHY("cannot read the key file");
		} else if (got != MRC_AUTH_KEY_BYTES) {
			rc = -EINVAL;
			WHY("the key file must hold exactly 32 bytes");
		} else {
			rc = mrc_auth_key_parse(key, got, out, why);
		}
	}
	sodium_memzero(key, sizeof key);
	close(fd);
	return rc;
}

int mrc_auth_key_generate(const char *path, const char **why)
{
	int rc = mrc__auth_ready();
	if (rc) {
		WHY("libsodium failed to initialise");
		return rc;
	}
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		int err = errno;
		WHY(err == EEXIST ? "the key file exists; refusing to overwrite it" :
		    "cannot create the key file");
		return -err;
	}
	uint8_t key[MRC_AUTH_KEY_BYTES];
	randombytes_buf(key, sizeof key);
	/* The umask can only take bits away; 0600 exactly is what load wants. */
	errno = 0;
	if (fchmod(fd, 0600) || write(fd, key, sizeof key) != (ssize_t)sizeof key ||
	    fsync(fd)) {
		rc = errno ? -errno : -EIO;
		WHY("cannot write the key file");
	}
	sodium_memzero(key, sizeof key);
	if (close(fd) && !rc) {
		rc = -errno;
		WHY("cannot write the key file");
	}
	if (rc)
		unlink(path);
	return rc;
}

int mrc_auth_nonce(uint8_t out[MRC_AUTH_NONCE_BYTES])
{
	int rc = mrc__auth_ready();
	if (rc)
		return rc;
	randombytes_buf(out, MRC_AUTH_NONCE_BYTES);
	return 0;
}

/* A token from 16 derived bytes; 0 is the engine's "unset", so never 0. */
static uint64_t token_of(const uint8_t b[16])
{
	uint64_t t = mrc__auth_ld64(b);
	return t ? t : 1;
}

int mrc_auth_conn_derive(const struct mrc_auth *a, const struct mrc_auth_conn_id *id,
			 enum mrc_auth_role role, struct mrc_auth_conn *out)
{
	if (!a || !id || !out || (role != MRC_AUTH_REQUESTER && role != MRC_AUTH_ACCEPTOR))
		return -EINVAL;
	if (sodium_is_zero(id->req_nonce, sizeof id->req_nonce) ||
	    sodium_is_zero(id->rep_nonce, sizeof id->rep_nonce))
		return -EINVAL;
	int rc = mrc__auth_ready();
	if (rc)
		return rc;
	/* Extract: the connection secret is BLAKE2b keyed with the
	 * connection subkey over a fixed-layout transcript (a label, then
	 * every input at a fixed offset, so no two inputs collide). */
	static const char label[16] = "mrc conn v2";
	uint8_t t[sizeof label + 16 + 2 * MRC_AUTH_NONCE_BYTES];
	memcpy(t, label, sizeof label);
	mrc__auth_be32(t + 16, id->req_host);
	mrc__auth_be32(t + 20, id->req_qpn);
	mrc__auth_be32(t + 24, id->rep_host);
	mrc__auth_be32(t + 28, id->rep_qpn);
	memcpy(t + 32, id->req_nonce, MRC_AUTH_NONCE_BYTES);
	memcpy(t + 32 + MRC_AUTH_NONCE_BYTES, id->rep_nonce, MRC_AUTH_NONCE_BYTES);
	uint8_t secret[crypto_kdf_KEYBYTES], tok[2][16];
	struct mrc_auth_conn c;
	/* Expand: one subkey per use and direction. */
	if (crypto_generichash(secret, sizeof secret, t, sizeof t, a->conn, sizeof a->conn) ||
	    crypto_kdf_derive_from_key(tok[0], 16, CONN_TOK_REQ, CTX_CONN, secret) ||
	    crypto_kdf_derive_from_key(tok[1], 16, CONN_TOK_REP, CTX_CONN, secret) ||
	    crypto_kdf_derive_from_key(role == MRC_AUTH_REQUESTER ? c.tx_key : c.rx_key,
				       32, CONN_KEY_REQ, CTX_CONN, secret) ||
	    crypto_kdf_derive_from_key(role == MRC_AUTH_REQUESTER ? c.rx_key : c.tx_key,
				       32, CONN_KEY_REP, CTX_CONN, secret) ||
	    crypto_kdf_derive_from_key(role == MRC_AUTH_REQUESTER ? c.tx_hkey : c.rx_hkey,
				       16, CONN_HKEY_REQ, CTX_CONN, secret) ||
	    crypto_kdf_derive_from_key(role == MRC_AUTH_REQUESTER ? c.rx_hkey : c.tx_hkey,
				       16, CONN_HKEY_REP, CTX_CONN, secret))
		rc = -EIO;
	if (!rc) {
		int req = role == MRC_AUTH_REQUESTER;
		c.tx_token = token_of(tok[req ? 0 : 1]);
		c.rx_token = token_of(tok[req ? 1 : 0]);
		c.tx_dir = req ? DIR_REQ : DIR_REP;
		c.rx_dir = req ? DIR_REP : DIR_REQ;
		*out = c;
	}
	sodium_memzero(secret, sizeof secret);
	sodium_memzero(tok, sizeof tok);
	sodium_memzero(&c, sizeof c);
	return rc;
}

void mrc_auth_conn_wipe(struct mrc_auth_conn *c)
{
	if (c)
		sodium_memzero(c, sizeof(*c));
}

/* AEAD-mode MAC key of the direction from -> to: the probe subkey under
 * its own label (domain-separated from the probe tokens), 32 bytes. */
static int pair_key(const struct mrc_auth *a, uint32_t from, uint32_t to, uint8_t *key)
{
	static const char label[16] = "mrc pairmac v2";
	uint8_t t[sizeof label + 8];
	memcpy(t, label, sizeof label);
	mrc__auth_be32(t + 16, from);
	mrc__auth_be32(t + 20, to);
	return crypto_generichash(key, MRC_AUTH_PAIR_KEY_BYTES, t, sizeof t, a->probe,
				  sizeof a->probe) ? -EIO : 0;
}

int mrc_auth_pair_keys(const struct mrc_auth *a, uint32_t self_host, uint32_t peer_host,
		       uint8_t tx[MRC_AUTH_PAIR_KEY_BYTES],
		       uint8_t rx[MRC_AUTH_PAIR_KEY_BYTES])
{
	if (!a || !tx || !rx)
		return -EINVAL;
	int rc = mrc__auth_ready();
	if (!rc)
		rc = pair_key(a, self_host, peer_host, tx);
	if (!rc)
		rc = pair_key(a, peer_host, self_host, rx);
	return rc;
}

/* The v3 token: v2's input plus both boot epochs (from, to), so a probe or
 * a reply recorded before either side restarted carries a token neither
 * side accepts any more. */
static int probe_token_ep(const struct mrc_auth *a, uint32_t from, uint32_t to,
			  uint64_t from_epoch, uint64_t to_epoch, uint64_t *tok)
{
	static const char label[16] = "mrc probe v3";
	uint8_t t[sizeof label + 24], h[16];
	memcpy(t, label, sizeof label);
	mrc__auth_be32(t + 16, from);
	mrc__auth_be32(t + 20, to);
	mrc__auth_be64(t + 24, from_epoch);
	mrc__auth_be64(t + 32, to_epoch);
	if (crypto_generichash(h, sizeof h, t, sizeof t, a->probe, sizeof a->probe))
		return -EIO;
	*tok = token_of(h);
	return 0;
}

int mrc_auth_probe_tokens_epoch(const struct mrc_auth *a, uint32_t self_host,
				uint32_t peer_host, uint64_t self_epoch, uint64_t peer_epoch,
				uint64_t *tx, uint64_t *rx)
{
	if (!a || !tx || !rx)
		return -EINVAL;
	int rc = mrc__auth_ready();
	if (!rc)
		rc = probe_token_ep(a, self_host, peer_host, self_epoch, peer_epoch, tx);
	if (!rc)
		rc = probe_token_ep(a, peer_host, self_host, peer_epoch, self_epoch, rx);
	return rc;
}

/* Without epochs (both 0): what a daemon uses before it has any. */
int mrc_auth_probe_tokens(const struct mrc_auth *a, uint32_t self_host,
			  uint32_t peer_host, uint64_t *tx, uint64_t *rx)
{
	return mrc_auth_probe_tokens_epoch(a, self_host, peer_host, 0, 0, tx, rx);
}
