/* AEAD payload mode between the engine and the datapath; see enc.h. */
#include "daemon/core/enc.h"

#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "transport/crc32c.h"
#include "transport/wire.h"

#define NQP      65536u             /* local QPs by qpn & 0xffff, as the engine */
#define TX_BITS  17                 /* (peer, rqpn) map: twice NQP slots */
#define TX_CAP   (1u << TX_BITS)
#define EMPTY    UINT64_MAX         /* peer ids never reach 0xffffffff */
#define MAXBODY  (MRC_MAX_PAYLOAD + MRCD_ENC_TRAILER)

struct enc_qp {
	uint32_t qpn, peer, rqpn;
	struct mrc_auth_aead *tx, *rx;
};

struct tx_ent {
	uint64_t key;                   /* peer << 32 | rqpn, or EMPTY */
	uint32_t slot;                  /* index into qp[] */
};

struct mrcd_enc {
	struct enc_qp *qp;              /* [NQP]; tx == NULL: not keyed */
	struct tx_ent *tx;              /* [TX_CAP], linear probing */
	uint8_t *buf;                   /* [MRCD_ENC_SLOTS][MAXBODY] */
	struct mrcd_enc_stats st;
};

static inline void st32(uint8_t *p, uint32_t v) { v = htobe32(v); memcpy(p, &v, 4); }
static inline void st64(uint8_t *p, uint64_t v) { v = htobe64(v); memcpy(p, &v, 8); }
static inline uint16_t ld16(const uint8_t *p) { uint16_t v; memcpy(&v, p, 2); return be16toh(v); }
static inline uint32_t ld32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return be32toh(v); }
static inline uint64_t ld64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return be64toh(v); }

/* hcrc of a data header as docs/wire.md defines it: TRIMMED taken as 0. */
static uint32_t data_hcrc(const uint8_t *p)
{
	uint8_t first[4] = { p[0], p[1], p[2], (uint8_t)(p[3] & ~MRC_F_TRIMMED) };
	return mrc_crc32c(mrc_crc32c(0, first, 4), p + 4, MRC_DATA_HDR_LEN - 8);
}

static uint32_t tx_hash(uint64_t key)
{
	return (uint32_t)((key * 0x9e3779b97f4a7c15ull) >> (64 - TX_BITS));
}

static uint32_t tx_find(const struct mrcd_enc *x, uint64_t key)
{
	for (uint32_t i = tx_hash(key);; i = (i + 1) & (TX_CAP - 1)) {
		if (x->tx[i].key == key || x->tx[i].key == EMPTY)
			return i;
	}
}

/* Backward-shift deletion keeps probe chains whole without tombstones. */
static void tx_del(struct mrcd_enc *x, uint64_t key)
{
	uint32_t i = tx_find(x, key);
	if (x->tx[i].key == EMPTY)
		return;
	for (;;) {
		x->tx[i].key = EMPTY;
		uint32_t j = i;
		for (;;) {
			j = (j + 1) & (TX_CAP - 1);
			if (x->tx[j].key == EMPTY)
				return;
			uint32_t k = tx_hash(x->tx[j].key);
			/* Entry j may move to i when its home k is not in (i, j]. */
			if (i <= j ? (k <= i || k > j) : (k <= i && k > j))
				break;
		}
		x->tx[i] = x->tx[j];
		i = j;
	}
}

int mrcd_enc_create(struct mrcd_enc **out, const char **why)
{
	if (!mrc_auth_aead_available()) {
		*why = "payload_encryption = aes-gcm needs a CPU with AES-NI and PCLMUL "
		       "(libsodium's crypto_aead_aes256gcm_is_available() is false here); "
		       "set payload_encryption = off";
		return -ENOTSUP;
	}
	struct mrcd_enc *x = calloc(1, sizeof(*x));
	if (x) {
		x->qp = calloc(NQP, sizeof(*x->qp));
		x->tx = malloc(sizeof(*x->tx) * TX_CAP);
		x->buf = malloc((size_t)MRCD_ENC_SLOTS * MAXBODY);
	}
	if (!x || !x->qp || !x->tx || !x->buf) {
		mrcd_enc_free(x);
		*why = "out of memory";
		return -ENOMEM;
	}
	memset(x->tx, 0xff, sizeof(*x->tx) * TX_CAP);
	*out = x;
	return 0;
}

void mrcd_enc_clear(struct mrcd_enc *x, uint32_t qpn)
{
	struct enc_qp *q = &x->qp[qpn & (NQP - 1)];
	if (!q->tx)
		return;
	tx_del(x, (uint64_t)q->peer << 32 | q->rqpn);
	mrc_auth_aead_free(q->tx);
	mrc_auth_aead_free(q->rx);
	memset(q, 0, sizeof(*q));
}

void mrcd_enc_free(struct mrcd_enc *x)
{
	if (!x)
		return;
	for (uint32_t i = 0; x->qp && i < NQP; i++)
		if (x->qp[i].tx)
			mrcd_enc_clear(x, x->qp[i].qpn);
	free(x->qp);
	free(x->tx);
	free(x->buf);
	free(x);
}

int mrcd_enc_set(struct mrcd_enc *x, uint32_t qpn, uint32_t peer, uint32_t rqpn,
		 const struct mrc_auth_conn *c, const char **why)
{
	struct enc_qp n = { .qpn = qpn, .peer = peer, .rqpn = rqpn };
	uint64_t key = (uint64_t)peer << 32 | rqpn;
	if (peer == UINT32_MAX) {
		*why = "bad peer";
		return -EINVAL;
	}
	int rc = mrc_auth_aead_create(c, 1, &n.tx, why);
	if (!rc && (rc = mrc_auth_aead_create(c, 0, &n.rx, why)))
		mrc_auth_aead_free(n.tx);
	if (rc)
		return rc;
	/* A stale setting of this slot (a QP destroyed without clear) or of
	 * this remote QP (a connection set up again) goes first. */
	mrcd_enc_clear(x, x->qp[qpn & (NQP - 1)].qpn);
	uint32_t i = tx_find(x, key);
	if (x->tx[i].key == key)
		mrcd_enc_clear(x, x->qp[x->tx[i].slot].qpn);
	i = tx_find(x, key);
	x->tx[i] = (struct tx_ent){ key, qpn & (NQP - 1) };
	x->qp[qpn & (NQP - 1)] = n;
	return 0;
}

int mrcd_enc_seal(struct mrcd_enc *x, struct mrce_tx_pkt *pk, unsigned slot,
		  struct iovec *body)
{
	uint8_t *h = pk->hdr;
	if (!pk->plen || pk->hdr_len != MRC_DATA_HDR_LEN || !mrc_op_is_data(h[1]) ||
	    slot >= MRCD_ENC_SLOTS)
		return 0;
	uint32_t i = tx_find(x, (uint64_t)pk->peer << 32 | ld32(h + 4));
	if (x->tx[i].key == EMPTY)
		return 0;
	struct enc_qp *q = &x->qp[x->tx[i].slot];
	uint8_t *c = x->buf + (size_t)slot * MAXBODY, *t = c + pk->plen;
	uint64_t seq;

	h[3] |= MRC_F_ENC;                 /* low byte of the flags */
	st32(h + 64, data_hcrc(h));
	memcpy(c, pk->payload, pk->plen);  /* registered memory stays untouched */
	int rc = mrc_auth_aead_seal(q->tx, h, MRC_DATA_HDR_LEN, c, pk->plen, &seq, t + 8);
	if (rc) {
		x->st.tx_fail++;
		return rc;
	}
	st64(t, seq);
	st32(t + 24, mrc_crc32c(0, c, (size_t)pk->plen + 24));
	*body = (struct iovec){ c, (size_t)pk->plen + MRCD_ENC_TRAILER };
	x->st.tx_sealed++;
	return 1;
}

int mrcd_enc_open(struct mrcd_enc *x, uint8_t *p, size_t *lenp)
{
	size_t len = *lenp;
	if (len < MRC_DATA_HDR_LEN || p[0] != MRC_WIRE_VERSION || !mrc_op_is_data(p[1]))
		return 0;                  /* not data: the engine decides */
	uint16_t flags = ld16(p + 2), plen = ld16(p + 14);
	uint32_t qpn = ld32(p + 4);
	struct enc_qp *q = &x->qp[qpn & (NQP - 1)];
	int keyed = q->rx && q->qpn == qpn;

	if (!(flags & MRC_F_ENC)) {
		if (keyed && plen) {
			x->st.rx_missing++;
			return -EPERM;
		}
		return 0;
	}
	if (!keyed) {
		x->st.rx_nokey++;
		return -ENOKEY;
	}
	/* A header that fails its CRC goes on unchanged: the engine counts it
	 * (bad_hcrc) like any other. */
	if (data_hcrc(p) != ld32(p + 64))
		return 0;
	if (flags & MRC_F_TRIMMED) {
		if (len != MRC_DATA_HDR_LEN)
			return 0;          /* the engine refuses it (length) */
		p[3] &= (uint8_t)~MRC_F_ENC;
		st32(p + 64, data_hcrc(p));
		x->st.rx_trimmed++;
		return 0;
	}
	if (!plen || len != MRC_DATA_HDR_LEN + (size_t)plen + MRCD_ENC_TRAILER) {
		x->st.rx_bad_len++;
		return -EBADMSG;
	}
	uint8_t *c = p + MRC_DATA_HDR_LEN, *t = c + plen;
	if (mrc_crc32c(0, c, (size_t)plen + 24) != ld32(t + 24)) {
		x->st.rx_bad_pcrc++;
		return -EBADMSG;
	}
	if (mrc_auth_aead_open(q->rx, p, MRC_DATA_HDR_LEN, c, plen, ld64(t), t + 8)) {
		x->st.rx_bad_auth++;
		return -EACCES;
	}
	/* What the engine would have received without ENC. */
	p[3] &= (uint8_t)~MRC_F_ENC;
	st32(p + 64, data_hcrc(p));
	mrc_wire_put_trailer(c + plen, c, plen);
	*lenp = MRC_DATA_HDR_LEN + (size_t)plen + MRC_TRAILER_LEN;
	x->st.rx_opened++;
	return 0;
}

void mrcd_enc_get_stats(const struct mrcd_enc *x, struct mrcd_enc_stats *st)
{
	*st = x->st;
}
