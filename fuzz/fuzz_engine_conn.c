/* libFuzzer target: packets into a CONNECTED engine, not only the decoder.
 *
 * Each input builds a fresh engine with one peer (4 EVs), a QP in RTS with
 * work in flight (so ACKs have something to acknowledge), two posted RECVs,
 * a QP left in RESET, and four regions, each inside a canary frame:
 *   DST   pd 1, REMOTE_WRITE | REMOTE_ATOMIC: remote writes may land here
 *   SRC   pd 1, LOCAL_READ: our sends read it; must never change
 *   RECV  pd 1, LOCAL_WRITE: SENDs land in the two posted buffers only
 *   OTHER pd 2, REMOTE_WRITE | REMOTE_ATOMIC: another client's; the QP's
 *         peer may never touch it
 * After every packet the canaries, SRC, OTHER and RECV outside the posted
 * buffers are checked: the engine must never write outside what it may.
 *
 * The input is a list of records
 *   ctl u8, dt u8, len u16 (little-endian), len bytes of packet
 * ctl bits: 0 dqpn := the QP (the remote QP for a NOQP NACK); 1 PSNs made
 * relative to the QP's starting PSNs (low byte; a piggybacked ACK's too);
 * 2 rkey := one of the four regions' keys (SEND: ssn low 2 bits); 3 CRCs recomputed; 4 ECN-CE;
 * 5 toggle DENIED on EV dt & 3 first; 6 from a peer id that does not exist;
 * 7 post one more WRITE and RECV first.  Then time advances dt * 20 us and
 * every timer due fires.  The fix-ups let mutations reach the engine's
 * logic instead of dying at the CRC and QPN checks. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz/fixcrc.h"
#include "transport/engine.h"

#define ENSURE(c) do { if (!(c)) abort(); } while (0)

#define REG_LEN   8192u
#define CANARY    256u
#define NREG      4
enum { R_DST, R_SRC, R_RECV, R_OTHER };
#define SQ_PSN    1000u
#define RQ_PSN    5000u
#define RQPN      0x00070003u
#define NEV       4
#define PKT_MAX   (MRC_DATA_HDR_LEN + MRC_MAX_PAYLOAD + MRC_TRAILER_LEN)
/* Posted RECV buffers in RECV: [off, off + len). */
static const uint64_t recv_off[2] = { 0, 2048 }, recv_len[2] = { 1000, 3000 };

struct fx {
	struct mrce *e;
	uint32_t peer, qpn, qpn_reset;
	uint8_t *mem;              /* NREG frames: canary, region, canary */
	uint8_t *ref;              /* what mem held after setup */
	uint32_t key[NREG];
	uint64_t now;
	uint32_t extra_recvs;      /* RECVs posted by ctl bit 7 (in DST) */
};

static uint8_t *region(struct fx *f, int r)
{
	return f->mem + (size_t)r * (REG_LEN + 2 * CANARY) + CANARY;
}

static uint8_t canary_byte(int r, size_t i) { return (uint8_t)(0xa5 ^ (r * 31) ^ i); }
static uint8_t fill_byte(int r, size_t i) { return (uint8_t)(r * 17 + i * 7); }

/* mem[from, to) of region r (negative / past REG_LEN: its canaries) is
 * as setup left it. */
static void same(struct fx *f, int r, ptrdiff_t from, ptrdiff_t to)
{
	ptrdiff_t o = region(f, r) - f->mem;
	ENSURE(!memcmp(f->mem + o + from, f->ref + o + from, (size_t)(to - from)));
}

static void check_memory(struct fx *f)
{
	for (int r = 0; r < NREG; r++) {
		same(f, r, -(ptrdiff_t)CANARY, 0);
		same(f, r, REG_LEN, REG_LEN + CANARY);
	}
	/* Regions the peer may not write keep their content; RECV changes
	 * only inside the posted buffers. */
	same(f, R_SRC, 0, REG_LEN);
	same(f, R_OTHER, 0, REG_LEN);
	same(f, R_RECV, 0, (ptrdiff_t)recv_off[0]);
	same(f, R_RECV, (ptrdiff_t)(recv_off[0] + recv_len[0]), (ptrdiff_t)recv_off[1]);
	same(f, R_RECV, (ptrdiff_t)(recv_off[1] + recv_len[1]), REG_LEN);
}

static void drain(struct fx *f)
{
	struct mrce_tx_pkt pk[32];
	struct mrce_wc wc[32];
	struct mrce_event ev;
	int n, rounds = 0;
	while ((n = mrce_tx(f->e, f->now, pk, 32)) > 0) {
		for (int i = 0; i < n; i++) {
			ENSURE(pk[i].hdr_len <= MRCE_TX_HDR_MAX && pk[i].ev < NEV);
			ENSURE(!pk[i].plen || pk[i].payload);
		}
		ENSURE(++rounds < 100000);
	}
	while ((n = mrce_wc_drain(f->e, wc, 32)) > 0)
		for (int i = 0; i < n; i++)
			ENSURE(wc[i].status <= 0);
	while (mrce_event_pop(f->e, &ev) > 0)
		;
}

/* Fires every timer due by now (bounded: a timer that re-arms in the past
 * forever would be an engine bug, and so would be reported). */
static void run_timers(struct fx *f)
{
	for (int k = 0; k < 1000; k++) {
		uint64_t d = mrce_next_deadline(f->e);
		if (d > f->now)
			return;
		mrce_tick(f->e, f->now);
		drain(f);
	}
	abort();
}

static void post_write(struct fx *f, uint64_t len)
{
	struct mrc_sqe wr = { .wr_id = 1, .op = MRC_SQE_WRITE, .lkey = f->key[R_SRC],
		.len = len, .rkey = 0x12345, .roff = 64 };
	(void)mrce_qp_post(f->e, f->now, f->qpn, &wr);
}

static int setup(struct fx *f)
{
	struct mrce_cfg c;
	mrce_cfg_default(&c);
	c.mtu = 1024;
	c.max_qps = 4;
	c.max_peers = 2;
	c.max_mrs = 8;
	c.window = 32;
	c.sq_depth = 16;
	c.rq_depth = 8;
	c.ctrl_queue = 64;
	c.event_queue = 64;
	c.no_path_timeout_ns = 5000000;
	c.rnr_retry = 3;
	memset(f, 0, sizeof(*f));
	f->now = 1000000000;
	if (mrce_create(&c, &f->e, NULL))
		return -1;
	const uint8_t plane_of[NEV] = { 0, 1, 0, 1 };
	ENSURE(mrce_peer_add(f->e, NEV, plane_of, &f->peer) == 0);
	size_t frame = REG_LEN + 2 * CANARY;
	f->mem = malloc(NREG * frame);
	f->ref = malloc(NREG * frame);
	ENSURE(f->mem && f->ref);
	for (int r = 0; r < NREG; r++) {
		uint8_t *b = region(f, r);
		for (size_t i = 0; i < CANARY; i++) {
			b[-(ptrdiff_t)CANARY + (ptrdiff_t)i] = canary_byte(r, i);
			b[REG_LEN + i] = canary_byte(r, i + CANARY);
		}
		for (size_t i = 0; i < REG_LEN; i++)
			b[i] = fill_byte(r, i);
	}
	memcpy(f->ref, f->mem, NREG * frame);
	static const uint32_t access[NREG] = {
		[R_DST] = MRCE_ACCESS_REMOTE_WRITE | MRCE_ACCESS_REMOTE_ATOMIC | MRCE_ACCESS_LOCAL_WRITE,
		[R_SRC] = MRCE_ACCESS_LOCAL_READ,
		[R_RECV] = MRCE_ACCESS_LOCAL_WRITE,
		[R_OTHER] = MRCE_ACCESS_REMOTE_WRITE | MRCE_ACCESS_REMOTE_ATOMIC,
	};
	for (int r = 0; r < NREG; r++)
		ENSURE(mrce_mr_add(f->e, r == R_OTHER ? 2 : 1, region(f, r), REG_LEN,
				  access[r], &f->key[r]) == 0);
	struct mrce_qp_attr a = { .pd = 1 };
	ENSURE(mrce_qp_open(f->e, &a, &f->qpn) == 0);
	ENSURE(mrce_qp_open(f->e, &a, &f->qpn_reset) == 0);
	ENSURE(mrce_qp_connect(f->e, f->qpn, f->peer, RQPN, SQ_PSN, RQ_PSN) == 0);
	for (int k = 0; k < 2; k++)
		ENSURE(mrce_qp_post_recv(f->e, f->qpn, 100 + k, f->key[R_RECV], recv_off[k],
					recv_len[k]) == 0);
	/* In flight: a 3-packet WRITE, a SEND, an ATOMIC_ADD (PSN 1000..1004). */
	post_write(f, 3000);
	struct mrc_sqe s = { .wr_id = 2, .op = MRC_SQE_SEND, .lkey = f->key[R_SRC], .len = 500 };
	ENSURE(mrce_qp_post(f->e, f->now, f->qpn, &s) == 0);
	struct mrc_sqe at = { .wr_id = 3, .op = MRC_SQE_ATOMIC_ADD, .rkey = 0x777, .roff = 8,
		.add = 1, .flags = MRC_SQE_F_FENCE };
	ENSURE(mrce_qp_post(f->e, f->now, f->qpn, &at) == 0);
	drain(f);
	return 0;
}

static uint32_t ld32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void fix_up(struct fx *f, uint8_t ctl, uint8_t *p, size_t len)
{
	if (!fz_hdr_len(p, len))
		return;
	uint8_t op = p[1];
	if ((ctl & 1) && (mrc_op_is_data(op) || op == MRC_OP_ACK))
		fz_st32be(p + 4, op == MRC_OP_ACK && p[14] == MRC_NACK_NOQP ? RQPN : f->qpn);
	if (ctl & 2) {
		if (mrc_op_is_data(op)) {
			fz_st32be(p + 8, RQ_PSN + p[11]);
			if (p[3] & MRC_F_PB_ACK)   /* the piggybacked ACK's, too */
				fz_st32be(p + 56, SQ_PSN + (p[59] & 0x3f));
		} else if (op == MRC_OP_ACK) {
			uint32_t cum = SQ_PSN + (p[11] & 0x3f);
			fz_st32be(p + 8, cum);
			fz_st32be(p + 16, SQ_PSN + (p[19] & 0x3f));
			fz_st32be(p + 20, cum + (p[23] & 7));
		}
	}
	if ((ctl & 4) && mrc_op_is_data(op)) {
		uint32_t raw = ld32(p + 20);
		int send = op == MRC_OP_SEND || op == MRC_OP_SEND_IMM;
		fz_st32be(p + 20, send ? raw & 3 : f->key[raw % NREG]);
	}
	if (ctl & 8)
		fz_fix_crcs(p, len);
}

static void one_record(struct fx *f, uint8_t ctl, uint8_t dt, const uint8_t *data, size_t len)
{
	if (ctl & 0x20) {
		uint32_t ev = dt & 3;
		struct mrce_ev_info ei;
		ENSURE(mrce_ev_info(f->e, f->peer, ev, &ei) == 0);
		ENSURE(mrce_ev_set_denied(f->e, f->now, f->peer, ev,
					 ei.state != MRCE_EV_DENIED) == 0);
	}
	if (ctl & 0x80) {
		post_write(f, (uint64_t)dt * 100);
		(void)mrce_qp_post_recv(f->e, f->qpn, 200 + f->extra_recvs++, f->key[R_DST],
				       (uint64_t)dt * 64, 512);
	}
	uint8_t *p = malloc(len ? len : 1);   /* exact size: ASan sees over-reads */
	ENSURE(p);
	memcpy(p, data, len);
	fix_up(f, ctl, p, len);
	uint32_t peer = (ctl & 0x40) ? f->peer + 1 : f->peer;
	(void)mrce_rx(f->e, f->now, peer, p, len, (ctl & 0x10) ? MRCE_RX_ECN : 0);
	free(p);
	drain(f);
	f->now += (uint64_t)dt * 20000;
	run_timers(f);
	check_memory(f);
	struct mrce_qp_info qi;
	ENSURE(mrce_qp_info(f->e, f->qpn, &qi) == 0);
	ENSURE(qi.inflight <= 32);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fx f;
	if (setup(&f))
		return 0;
	size_t i = 0;
	for (int recs = 0; recs < 64 && i + 4 <= size; recs++) {
		uint8_t ctl = data[i], dt = data[i + 1];
		size_t len = (size_t)data[i + 2] | (size_t)data[i + 3] << 8;
		i += 4;
		if (len > size - i)
			len = size - i;
		if (len > PKT_MAX)
			len = PKT_MAX;
		one_record(&f, ctl, dt, data + i, len);
		i += len;
	}
	/* Let time run out every timer (RTOs, probes, the no-path bound). */
	for (int k = 0; k < 64; k++) {
		uint64_t d = mrce_next_deadline(f.e);
		if (d == UINT64_MAX)
			break;
		if (d > f.now)
			f.now = d;
		run_timers(&f);
	}
	check_memory(&f);
	mrce_destroy(f.e);
	free(f.mem);
	free(f.ref);
	return 0;
}
