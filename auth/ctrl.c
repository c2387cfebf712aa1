/* CTRL envelope: MAC (keyed BLAKE2b, 128-bit tag) over header and body,
 * and replay protection by per-sender stamps.  See auth.h and
 * docs/wire.md ("CTRL envelope").  The layout is the engine's CTRL codec
 * (mrce_ctrl_env_put/get): this file MACs and judges freshness only. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "auth/auth_int.h"
#include "transport/engine.h"

_Static_assert(MRC_AUTH_CTRL_HDR == MRCE_CTRL_ENV_HDR &&
	       MRC_AUTH_MAC_BYTES == MRCE_CTRL_ENV_MAC &&
	       MRC_AUTH_CTRL_MAX_BODY == MRCE_CTRL_ENV_MAX_BODY &&
	       MRC_AUTH_CTRL_F_CHALLENGE == MRCE_CTRL_F_CHALLENGE, "the engine's CTRL envelope");

struct sender {
	uint64_t hi;                         /* newest stamp accepted; 0: none */
	uint64_t seen[MRC_AUTH_REPLAY_RING]; /* the newest ones accepted */
	uint32_t nseen;
	/* The session: the sender's epoch and the cookie we issued to it
	 * (0: none), and the challenge still unanswered. */
	uint64_t epoch, cookie;
	uint64_t pend_epoch, pend_cookie;
	uint64_t tx_cookie;                  /* what it issued to us: our dst_tag */
};

struct mrc_auth_replay {
	struct mrc_auth_replay_cfg cfg;
	struct sender *s;                    /* [cfg.max_hosts] */
};

static int mac(const struct mrc_auth *a, const uint8_t *p, size_t n,
	       uint8_t out[MRC_AUTH_MAC_BYTES])
{
	return crypto_generichash(out, MRC_AUTH_MAC_BYTES, p, n, a->ctrl, sizeof a->ctrl)
	       ? -EIO : 0;
}

static int seal(const struct mrc_auth *a, struct mrc_auth_ctrl_tx *tx,
		uint64_t now_real_ns, uint16_t flags, uint32_t src_host, uint32_t dst_host,
		uint64_t dst_tag, const void *body, size_t blen, uint8_t *out, size_t cap,
		size_t *outlen)
{
	if (!a || !tx || !out || !outlen || (blen && !body))
		return -EINVAL;
	if (!tx->epoch)
		return -EINVAL;   /* mrc_auth_ctrl_tx_init was not called */
	if (blen > MRC_AUTH_CTRL_MAX_BODY || cap < MRC_AUTH_CTRL_OVERHEAD + blen)
		return -EMSGSIZE;
	int rc = mrc__auth_ready();
	if (rc)
		return rc;
	if (tx->last == UINT64_MAX)
		return -EOVERFLOW;
	uint64_t stamp = now_real_ns > tx->last ? now_real_ns : tx->last + 1;
	mrce_ctrl_env_put(out, &(struct mrce_ctrl_env){ .flags = flags,
		.src_host = src_host, .dst_host = dst_host, .blen = (uint16_t)blen,
		.stamp = stamp, .src_epoch = tx->epoch, .dst_tag = dst_tag });
	if (blen)
		memmove(out + MRC_AUTH_CTRL_HDR, body, blen);
	rc = mac(a, out, MRC_AUTH_CTRL_HDR + blen, out + MRC_AUTH_CTRL_HDR + blen);
	if (rc)
		return rc;
	tx->last = stamp;
	*outlen = MRC_AUTH_CTRL_OVERHEAD + blen;
	return 0;
}

int mrc_auth_ctrl_tx_init(struct mrc_auth_ctrl_tx *tx)
{
	if (!tx)
		return -EINVAL;
	int rc = mrc__auth_ready();
	if (rc)
		return rc;
	tx->last = 0;
	do
		randombytes_buf(&tx->epoch, sizeof tx->epoch);
	while (!tx->epoch);
	return 0;
}

int mrc_auth_ctrl_seal(const struct mrc_auth *a, struct mrc_auth_ctrl_tx *tx,
		       const struct mrc_auth_replay *r, uint64_t now_real_ns,
		       uint32_t src_host, uint32_t dst_host, const void *body, size_t blen,
		       uint8_t *out, size_t cap, size_t *outlen)
{
	uint64_t tag = r && dst_host < r->cfg.max_hosts ? r->s[dst_host].tx_cookie : 0;
	return seal(a, tx, now_real_ns, 0, src_host, dst_host, tag, body, blen, out, cap,
		    outlen);
}

int mrc_auth_ctrl_challenge(const struct mrc_auth *a, struct mrc_auth_ctrl_tx *tx,
			    struct mrc_auth_replay *r, uint64_t now_real_ns,
			    uint32_t src_host, uint32_t dst_host, uint64_t dst_epoch,
			    uint8_t *out, size_t cap, size_t *outlen)
{
	if (!r || dst_host >= r->cfg.max_hosts || !dst_epoch)
		return -EINVAL;
	int rc = mrc__auth_ready();
	if (rc)
		return rc;
	struct sender *s = &r->s[dst_host];
	if (!s->pend_cookie || s->pend_epoch != dst_epoch) {
		uint64_t c;
		do
			randombytes_buf(&c, sizeof c);
		while (!c);
		s->pend_cookie = c;
		s->pend_epoch = dst_epoch;
	}
	uint8_t body[8];
	mrc__auth_be64(body, s->pend_cookie);
	return seal(a, tx, now_real_ns, MRC_AUTH_CTRL_F_CHALLENGE, src_host, dst_host,
		    dst_epoch, body, sizeof body, out, cap, outlen);
}

int mrc_auth_replay_create(const struct mrc_auth_replay_cfg *cfg,
			   struct mrc_auth_replay **out)
{
	if (!cfg || !out || !cfg->max_hosts || cfg->max_hosts > (1u << 20) ||
	    !cfg->max_skew_ns || !cfg->epoch)
		return -EINVAL;
	struct mrc_auth_replay *r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->s = calloc(cfg->max_hosts, sizeof(*r->s));
	if (!r->s) {
		free(r);
		return -ENOMEM;
	}
	r->cfg = *cfg;
	*out = r;
	return 0;
}

void mrc_auth_replay_free(struct mrc_auth_replay *r)
{
	if (!r)
		return;
	free(r->s);
	free(r);
}

/* Freshness of stamp c from sender s; 0 or why it is refused. */
/* Within max_skew_ns of our clock (both directions). */
static int in_skew(const struct mrc_auth_replay *r, uint64_t c, uint64_t now)
{
	uint64_t skew = r->cfg.max_skew_ns;
	return !(c > now + skew || c + skew < c || (now > skew && c < now - skew));
}

/* Freshness of stamp c within sender s's session; 0 or why it is
 * refused. */
static int fresh(const struct mrc_auth_replay *r, const struct sender *s,
		 uint64_t c)
{
	if (!s->nseen || c > s->hi)
		return 0;
	if (s->hi - c > r->cfg.window_ns)
		return -ESTALE;
	uint64_t oldest = UINT64_MAX;
	for (uint32_t i = 0; i < s->nseen; i++) {
		if (s->seen[i] == c)
			return -EALREADY;
		if (s->seen[i] < oldest)
			oldest = s->seen[i];
	}
	/* The ring forgets its smallest stamps first, so every stamp it
	 * forgot is below the oldest it holds: one below that cannot be
	 * proven unseen. */
	if (s->nseen == MRC_AUTH_REPLAY_RING && c < oldest)
		return -ESTALE;
	return 0;
}

static void remember(struct sender *s, uint64_t c)
{
	if (c > s->hi || !s->nseen)
		s->hi = c;
	if (s->nseen < MRC_AUTH_REPLAY_RING) {
		s->seen[s->nseen++] = c;
		return;
	}
	uint32_t min = 0;
	for (uint32_t i = 1; i < s->nseen; i++)
		if (s->seen[i] < s->seen[min])
			min = i;
	s->seen[min] = c;
}

int mrc_auth_ctrl_open(const struct mrc_auth *a, struct mrc_auth_replay *r,
		       uint64_t now_real_ns, uint32_t from_host, const void *pkt,
		       size_t len, struct mrc_auth_ctrl_msg *m)
{
	const uint8_t *p = pkt;
	if (!a || !r || !m || (len && !p))
		return -EINVAL;
	struct mrce_ctrl_env h;
	if (mrce_ctrl_env_get(p, len, &h))
		return -EBADMSG;
	size_t blen = h.blen;
	int rc = mrc__auth_ready();
	if (rc)
		return rc;
	uint8_t want[MRC_AUTH_MAC_BYTES];
	rc = mac(a, p, MRC_AUTH_CTRL_HDR + blen, want);
	if (rc)
		return rc;
	/* Constant time: the MAC of a forgery leaks nothing by timing. */
	if (sodium_memcmp(want, p + MRC_AUTH_CTRL_HDR + blen, sizeof want))
		return -EACCES;
	uint32_t src = h.src_host, dst = h.dst_host;
	uint64_t stamp = h.stamp, epoch = h.src_epoch, tag = h.dst_tag;
	int challenge = h.flags & MRC_AUTH_CTRL_F_CHALLENGE;
	if (dst != r->cfg.self_host)
		return -EXDEV;
	/* The sender is checked before any state is touched: a key holder's
	 * copy sent from another host's address must not burn the stamp of
	 * the genuine one. */
	if (src >= r->cfg.max_hosts || (from_host != UINT32_MAX && src != from_host))
		return -ERANGE;
	if (!epoch || (challenge && blen != 8))
		return -EBADMSG;
	if (!in_skew(r, stamp, now_real_ns))
		return -ESTALE;
	struct sender *s = &r->s[src];
	*m = (struct mrc_auth_ctrl_msg){ .src_host = src, .dst_host = dst, .stamp = stamp,
		.src_epoch = epoch, .challenge = challenge,
		.body = blen ? p + MRC_AUTH_CTRL_HDR : NULL, .blen = blen };
	if (challenge) {
		/* Addressed to this boot, or an old one's (replayed): only the
		 * first may set what we send next. */
		uint64_t c = mrc__auth_ld64(p + MRC_AUTH_CTRL_HDR);
		if (tag != r->cfg.epoch || !c)
			return -ESTALE;
		s->tx_cookie = c;
		m->body = NULL;
		m->blen = 0;
		return 0;
	}
	if (!tag || !((s->cookie && tag == s->cookie && epoch == s->epoch) ||
		      (s->pend_cookie && tag == s->pend_cookie && epoch == s->pend_epoch)))
		return -ENOTCONN;
	if (tag != s->cookie) {
		/* The answer to our challenge: a new session, whose cookie no
		 * envelope sealed before the challenge can carry, so the
		 * replay state starts empty (a sender whose clock stepped
		 * back is not locked out). */
		*s = (struct sender){ .epoch = epoch, .cookie = tag, .tx_cookie = s->tx_cookie };
	}
	rc = fresh(r, s, stamp);
	if (rc)
		return rc;
	remember(s, stamp);
	return 0;
}
