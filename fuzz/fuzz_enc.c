/* libFuzzer target for the daemon's AEAD mode input (daemon/core/enc.c):
 * what mrcd_enc_open does with any datagram.  One keyed connection
 * (local QP LQ on x1, connected to RQ on x0) and host-pair keys both ways.
 * The first byte picks what the rest is:
 *   0: a received datagram from the connection's peer: never read or
 *      written outside its bytes, never grown, and never handed on as a
 *      packet of the keyed QP or peer (no forger has the keys): whatever
 *      it hands on is not an MRC packet the engine takes (wrong version,
 *      unknown opcode, a header whose CRC fails) or the header alone of
 *      data for a QP without keys;
 *   1: a WRITE (header fields and payload from the input) sealed on x0 and
 *      opened on x1 (must round trip with the token restored), then with
 *      one bit flipped (chosen by the input) opened again (must not be
 *      taken as the keyed QP's), then replayed (must be refused). */
#include <endian.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "auth/auth.h"
#include "daemon/core/enc.h"
#include "transport/crc32c.h"
#include "transport/wire.h"

#define ENSURE(c) do { if (!(c)) abort(); } while (0)
#define LQ 0x20002u
#define RQ 0x10001u
#define MAXDG (MRC_DATA_HDR_LEN + MRC_MAX_PAYLOAD + MRCD_ENC_TRAILER)

static struct mrcd_enc *x0, *x1;
static uint64_t tok01;          /* x0's tx token = x1's rx token */
static uint64_t ts = 1;
static int ok = -1;

static void init(void)
{
	if (ok >= 0)
		return;
	const char *why = NULL;
	ok = 0;
	if (!mrc_auth_aead_available())
		return;                /* no AES-NI: nothing to fuzz here */
	uint8_t k[MRC_AUTH_KEY_BYTES];
	for (size_t i = 0; i < sizeof k; i++)
		k[i] = (uint8_t)(i * 37 + 1);
	struct mrc_auth *a = NULL;
	ENSURE(mrc_auth_key_parse(k, sizeof k, &a, NULL) == 0);
	ENSURE(mrcd_enc_create(&x0, &why) == 0 && mrcd_enc_create(&x1, &why) == 0);
	struct mrc_auth_conn_id id = { .req_host = 0, .req_qpn = RQ, .rep_host = 1,
				       .rep_qpn = LQ };
	memset(id.req_nonce, 3, sizeof id.req_nonce);
	memset(id.rep_nonce, 5, sizeof id.rep_nonce);
	struct mrc_auth_conn c0, c1;
	ENSURE(mrc_auth_conn_derive(a, &id, MRC_AUTH_REQUESTER, &c0) == 0);
	ENSURE(mrc_auth_conn_derive(a, &id, MRC_AUTH_ACCEPTOR, &c1) == 0);
	ENSURE(mrcd_enc_set(x0, RQ, 1, LQ, &c0, &why) == 0);
	ENSURE(mrcd_enc_set(x1, LQ, 0, RQ, &c1, &why) == 0);
	tok01 = c0.tx_token;
	uint8_t tx[MRC_AUTH_PAIR_KEY_BYTES], rx[MRC_AUTH_PAIR_KEY_BYTES];
	ENSURE(mrc_auth_pair_keys(a, 0, 1, tx, rx) == 0 && mrcd_enc_set_peer(x0, 1, tx, rx) == 0);
	ENSURE(mrc_auth_pair_keys(a, 1, 0, tx, rx) == 0 && mrcd_enc_set_peer(x1, 0, tx, rx) == 0);
	mrc_auth_free(a);
	ok = 1;
}

static uint32_t ld32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return be32toh(v); }

/* Whether buf[0..len), handed on by mrcd_enc_open, is something the
 * engine could act on for the keyed QP or as a keyed peer's packet. */
static int acts(const uint8_t *p, size_t len)
{
	struct mrc_pkt_view v;
	enum mrce_wire_drop why;
	if (mrce_wire_decode(p, len, &v, &why))
		return 0;                  /* the engine drops it */
	if (mrc_op_is_data(v.op))
		return v.u.data.dqpn == LQ && v.u.data.token == tok01;
	return 1;                          /* an ACK or probe taken without a tag */
}

static void received(const uint8_t *d, size_t n)
{
	static uint8_t buf[MAXDG];
	if (n > sizeof buf)
		return;
	/* An exact-size heap copy: ASan sees any read past the datagram. */
	uint8_t *p = malloc(n ? n : 1);
	ENSURE(p);
	memcpy(p, d, n);
	size_t len = n;
	int rc = mrcd_enc_open(x1, 0, p, &len);
	ENSURE(len <= n);
	if (rc == 0)
		ENSURE(!acts(p, len));
	free(p);
}

static void roundtrip(const uint8_t *d, size_t n)
{
	if (n < 8)
		return;
	uint16_t plen = (uint16_t)((d[0] << 8 | d[1]) % 2048);
	uint32_t flip = ld32(d + 2);
	struct mrce_tx_pkt pk = { .peer = 1, .hdr_len = MRC_DATA_HDR_LEN, .plen = plen };
	static uint8_t pl[2048], dg[MAXDG], cp[MAXDG];
	for (uint16_t i = 0; i < plen; i++)
		pl[i] = d[6 + i % (n - 6)];
	pk.payload = pl;
	struct mrc_data_hdr h = { .op = MRC_OP_WRITE, .flags = MRC_F_FIRST | MRC_F_LAST,
		.dqpn = LQ, .psn = ld32(d + 2), .plen = plen, .mlen = plen, .ts = ts++,
		.token = tok01 };
	mrce_wire_put_data(pk.hdr, &h);
	mrce_wire_put_trailer(pk.trailer, pl, plen);
	struct iovec body;
	ENSURE(mrcd_enc_seal(x0, &pk, 0, &body) == 1);
	size_t len = MRC_DATA_HDR_LEN + body.iov_len;
	memcpy(dg, pk.hdr, MRC_DATA_HDR_LEN);
	memcpy(dg + MRC_DATA_HDR_LEN, body.iov_base, body.iov_len);
	memcpy(cp, dg, len);
	/* Flipped first: the original must still open afterwards (a
	 * refused forgery never moves the replay window). */
	cp[flip % len] ^= (uint8_t)(1u << (flip >> 29));
	size_t l2 = len;
	if (mrcd_enc_open(x1, 0, cp, &l2) == 0)
		ENSURE(!acts(cp, l2));
	memcpy(cp, dg, len);
	l2 = len;
	ENSURE(mrcd_enc_open(x1, 0, cp, &l2) == 0);
	ENSURE(l2 == MRC_DATA_HDR_LEN + plen + (plen ? MRC_TRAILER_LEN : 0));
	ENSURE(!memcmp(cp + MRC_DATA_HDR_LEN, pl, plen) && acts(cp, l2));
	memcpy(cp, dg, len);
	l2 = len;
	ENSURE(mrcd_enc_open(x1, 0, cp, &l2) == -EALREADY);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	init();
	if (!ok || size < 1)
		return 0;
	if (data[0] % 2 == 0)
		received(data + 1, size - 1);
	else
		roundtrip(data + 1, size - 1);
	return 0;
}
