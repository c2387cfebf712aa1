/* libFuzzer target for the wire decoder.  Every input is decoded; when the
 * decoder accepts it, the view must re-encode to exactly the same bytes (so
 * the decoder accepts only the canonical encoding and the view loses
 * nothing), and a data packet with payload must survive trimming (which
 * cuts a cross-QP ACK's extension: the view then has none).
 *
 * Random mutations almost never keep the CRCs valid, which would leave the
 * field checks behind them unexplored, so each input is decoded a second
 * time with its hcrc (and pcrc, where the length fits) recomputed.  Each
 * is also decoded as a split header (MRC_WIRE_SPLIT). */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz/fixcrc.h"
#include "transport/wire.h"

#define PKT_MAX (MRC_DATA_XHDR_LEN + MRC_MAX_PAYLOAD + MRC_TRAILER_LEN)

#define ENSURE(c) do { if (!(c)) abort(); } while (0)

static void check_data(const uint8_t *in, size_t len,
		       const struct mrc_pkt_view *v)
{
	static uint8_t out[PKT_MAX];
	const struct mrc_data_hdr *d = &v->u.data;

	ENSURE(d->op == v->op);
	ENSURE(d->plen <= MRC_MAX_PAYLOAD && d->plen <= d->mlen);
	if (v->trimmed) {
		/* The trim cut the XACK extension: the view drops the flag
		 * (and its fields are 0); the header bytes are the input's. */
		struct mrc_data_hdr w = *d;
		const struct mrc_xack *xa = &v->xack;
		ENSURE(!(d->flags & MRC_F_XACK) && !xa->dqpn && !xa->cum_psn &&
		       !xa->sack && !xa->hold && !xa->token);
		w.flags |= (uint16_t)(((uint16_t)in[2] << 8 | in[3]) & MRC_F_XACK);
		mrce_wire_put_data(out, &w);
		ENSURE((d->flags & MRC_F_TRIMMED) && d->plen && !v->payload);
		ENSURE(len == MRC_DATA_HDR_LEN && !memcmp(in, out, MRC_DATA_HDR_LEN));
		ENSURE(mrce_wire_trim(out, len) == len); /* already trimmed */
		return;
	}
	size_t n = mrce_wire_put_data_x(out, d, &v->xack);
	ENSURE(n == ((d->flags & MRC_F_XACK) ? MRC_DATA_XHDR_LEN : MRC_DATA_HDR_LEN));
	ENSURE(!(d->flags & MRC_F_TRIMMED));
	if (d->plen) {
		ENSURE(v->payload == in + n);
		memcpy(out + n, v->payload, d->plen);
		mrce_wire_put_trailer(out + n + d->plen, v->payload, d->plen);
		n += d->plen + MRC_TRAILER_LEN;
	} else {
		ENSURE(v->payload == NULL);
	}
	ENSURE(len == n && !memcmp(in, out, n));

	/* What a switch does to it must still decode, as the same header. */
	size_t t = mrce_wire_trim(out, n);
	struct mrc_pkt_view tv;
	enum mrce_wire_drop why;
	if (!d->plen && n == MRC_DATA_HDR_LEN) {
		ENSURE(t == n && !memcmp(in, out, n));
		return;
	}
	ENSURE(t == MRC_DATA_HDR_LEN);
	if (!d->plen) {
		/* An XACK without payload is longer than its header: a switch
		 * cuts the extension, and what is left (trimmed, no payload)
		 * is refused, as a trimmed sealed zero-length packet is. */
		ENSURE(mrce_wire_decode(out, t, &tv, &why) == -EBADMSG && why == MRC_DROP_FIELD);
		return;
	}
	ENSURE(mrce_wire_decode(out, t, &tv, &why) == 0 && why == MRC_DROP_NONE);
	ENSURE(tv.trimmed == 1 && tv.payload == NULL && tv.op == v->op);
	struct mrc_data_hdr want = *d;
	want.flags |= MRC_F_TRIMMED;
	want.flags &= (uint16_t)~MRC_F_XACK;
	const struct mrc_data_hdr *g = &tv.u.data;
	ENSURE(g->op == want.op && g->flags == want.flags &&
	       g->dqpn == want.dqpn && g->psn == want.psn && g->ev == want.ev &&
	       g->plen == want.plen && g->msn == want.msn &&
	       g->rkey == want.rkey && g->off == want.off && g->ts == want.ts &&
	       g->mlen == want.mlen && g->imm == want.imm &&
	       g->token == want.token && g->pb_cum_psn == want.pb_cum_psn &&
	       g->pb_sack == want.pb_sack && g->pb_hold == want.pb_hold);
}

static void check_one(const uint8_t *data, size_t size)
{
	struct mrc_pkt_view v;
	enum mrce_wire_drop why = MRC_DROP__COUNT;
	uint8_t out[MRC_HDR_MAX];

	int rc = mrce_wire_decode(data, size, &v, &why);
	if (rc != 0) {
		ENSURE(rc == -EBADMSG && why > MRC_DROP_NONE &&
		       why < MRC_DROP__COUNT);
		ENSURE(mrce_wire_drop_name(why) != NULL);
		return;
	}
	ENSURE(why == MRC_DROP_NONE);
	ENSURE(strcmp(mrce_op_name(v.op), "UNKNOWN") != 0);
	if (mrc_op_is_data(v.op)) {
		check_data(data, size, &v);
	} else if (v.op == MRC_OP_ACK) {
		ENSURE(!v.payload && !v.trimmed);
		size_t n = mrce_wire_put_ack(out, &v.u.ack);
		ENSURE(n == size && !memcmp(out, data, n));
	} else {
		ENSURE(v.op == MRC_OP_PROBE || v.op == MRC_OP_PROBE_REPLY);
		ENSURE(!v.payload && !v.trimmed && v.u.probe.op == v.op);
		size_t n = mrce_wire_put_probe(out, &v.u.probe);
		ENSURE(n == size && !memcmp(out, data, n));
	}
}

/* The split decode (MRC_WIRE_SPLIT, mrce_rx_split: a header whose payload
 * lies apart) accepts only a data header of exactly its length, never
 * trimmed, with no payload pointer, re-encoding to the same bytes. */
static void check_split(const uint8_t *data, size_t size)
{
	struct mrc_pkt_view v;
	enum mrce_wire_drop why = MRC_DROP__COUNT;
	uint8_t out[MRC_DATA_XHDR_LEN];
	int rc = mrce_wire_decode_flags(data, size, &v, &why, MRC_WIRE_SPLIT);
	if (rc != 0) {
		ENSURE(rc == -EBADMSG && why > MRC_DROP_NONE && why < MRC_DROP__COUNT);
		return;
	}
	if (!mrc_op_is_data(v.op))
		return;   /* ACKs and probes decode as ever; mrce_rx_split refuses them */
	ENSURE(!v.trimmed && !v.payload && !(v.u.data.flags & MRC_F_TRIMMED));
	size_t n = mrce_wire_put_data_x(out, &v.u.data, &v.xack);
	ENSURE(n == size && !memcmp(out, data, n));
}

/* Rewrites the CRCs of a copy of the input so the decoder gets past them. */
static void check_fixed_crcs(const uint8_t *data, size_t size)
{
	if (!fz_hdr_len(data, size))
		return;
	uint8_t *c = malloc(size); /* exact size, so ASan sees over-reads */
	ENSURE(c);
	memcpy(c, data, size);
	fz_fix_crcs(c, size);
	check_one(c, size);
	check_split(c, size);
	free(c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	check_one(data, size);
	check_split(data, size);
	check_fixed_crcs(data, size);
	return 0;
}
