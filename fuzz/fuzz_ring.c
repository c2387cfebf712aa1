/* libFuzzer target for the daemon's ring consumer itself
 * (daemon/clients/rings.c, linked in by fuzz/ring.mk) on a real engine in
 * loopback: two client QPs of one client, connected to each other through
 * the engine's own peer, whose rings the input fills as a hostile client
 * could (descriptor slots, sequence words, the CQ's tail).  The consumer
 * polls the SQs, the engine's packets are fed back to it, completions go
 * to the rings.  Asserted: no crash or sanitizer report, and no byte
 * written outside the registered regions (canaries around each region,
 * and the bytes of a read-only region unchanged).
 *
 * Input: byte 0 picks the regions' rights; byte 1 the rounds (bits 0-2)
 * and the rings' index_base (bits 3-4: 0, 2^32 - 3, 2^64 - 3, 2^63); then for
 * each ring slot a control byte (bit 0: publish it, i.e. set its sequence
 * word to the one the consumer expects; bit 1: the other QP's ring) and a
 * struct mrc_sqe whose keys select among the regions. */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "daemon/clients/clients.h"
#include "mrc/mrc.h"

#define ENSURE(c) do { if (!(c)) abort(); } while (0)
#define NREG 4
#define REG_LEN 8192u
#define CANARY 64u
#define SLOTS 16u

/* ---- the daemon core, faked: one engine, one loop, bound QPs ---------- */

static struct mrce *g_e;
static struct ev_loop *g_loop;
static uint64_t g_now = 1000000000;
static struct { uint32_t qpn; mrcd_wc_fn fn; void *ctx; } g_bind[2];

uint64_t mrcd_now(void) { return g_now; }
struct ev_loop *mrcd_loop(struct mrcd *d) { (void)d; return g_loop; }
struct mrce *mrcd_engine(struct mrcd *d) { (void)d; return g_e; }
void mrcd_kick(struct mrcd *d) { (void)d; }
static struct mrcd_ring_stats g_rst;
struct mrcd_ring_stats *mrcd_ring_stats(struct mrcd *d) { (void)d; return &g_rst; }
void mrcd_log(int level, const char *fmt, ...) { (void)level; (void)fmt; }
/* A destroyed QP's AEAD keys (node.c): no AEAD mode here. */
void mrcd_node_clear_aead(struct mrcd *d, uint32_t qpn) { (void)d; (void)qpn; }
/* The client's CQ bell (daemon/clients/notify.c): nobody sleeps here. */
void mrcd__cq_bell(struct mrcd_client *c) { (void)c; }
/* The power-floor hint (notify.c): off here (mrcd's default). */
void mrcd__floor_send(struct mrcd_cqp *q) { (void)q; }
void mrcd__floor_done(struct mrcd_cqp *q) { (void)q; }
void mrcd__floor_forget(struct mrcd_cqp *q) { (void)q; }

int mrcd_qp_bind(struct mrcd *d, uint32_t qpn, mrcd_wc_fn fn, void *ctx)
{
	(void)d;
	for (int i = 0; i < 2; i++)
		if (!g_bind[i].fn) {
			g_bind[i].qpn = qpn;
			g_bind[i].fn = fn;
			g_bind[i].ctx = ctx;
			return 0;
		}
	return -EEXIST;
}

void mrcd_qp_unbind(struct mrcd *d, uint32_t qpn)
{
	(void)d;
	for (int i = 0; i < 2; i++)
		if (g_bind[i].fn && g_bind[i].qpn == qpn)
			g_bind[i].fn = NULL;
}

/* ---- the client side, faked: its regions ------------------------------ */

static uint8_t *g_mem;                 /* NREG frames: canary, region, canary */
static uint8_t *g_ref;
static struct mrcd_cmr g_mrs[NREG];

static uint8_t *region(int r) { return g_mem + r * (REG_LEN + 2 * CANARY) + CANARY; }

const struct mrc__mr_view *mrcd_client_mr(void *client, uint32_t key)
{
	(void)client;
	for (int i = 0; i < NREG; i++)
		if (key && g_mrs[i].key == key)
			return &g_mrs[i].view;
	return NULL;
}

/* Moves the engine's packets back into it and its completions to the
 * bound QPs. */
static void run_engine(void)
{
	struct mrce_tx_pkt pk[16];
	static uint8_t buf[MRCE_TX_PKT_MAX];
	for (int round = 0; round < 64; round++) {
		int n = mrce_tx(g_e, g_now, pk, 16);
		for (int i = 0; i < n; i++)
			mrce_rx(g_e, g_now, pk[i].peer, buf, mrce_tx_pkt_copy(&pk[i], buf), 0);
		struct mrce_wc wc[16];
		int m = mrce_wc_drain(g_e, wc, 16);
		for (int i = 0; i < m; i++)
			for (int b = 0; b < 2; b++)
				if (g_bind[b].fn && g_bind[b].qpn == wc[i].qpn)
					g_bind[b].fn(g_bind[b].ctx, &wc[i]);
		g_now += 100000;
		mrce_tick(g_e, g_now);
		if (!n && !m && !mrce_tx_pending(g_e))
			break;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2)
		return 0;
	if (!g_loop)
		ENSURE((g_loop = ev_loop_new(EVFLAG_AUTO)) != NULL);
	struct mrce_cfg cfg;
	mrce_cfg_default(&cfg);
	cfg.mtu = 1024;
	cfg.max_qps = 4;
	cfg.max_peers = 2;
	cfg.max_mrs = 8;
	cfg.window = 32;
	cfg.sq_depth = 16;
	cfg.rq_depth = 16;
	cfg.ctrl_queue = 64;
	cfg.event_queue = 64;
	ENSURE(mrce_create(&cfg, &g_e, NULL) == 0);
	const uint8_t plane_of[1] = { 0 };
	uint32_t peer;
	ENSURE(mrce_peer_add(g_e, 1, plane_of, &peer) == 0);

	size_t frame = REG_LEN + 2 * CANARY;
	g_mem = malloc(NREG * frame);
	g_ref = malloc(NREG * frame);
	ENSURE(g_mem && g_ref);
	for (size_t i = 0; i < NREG * frame; i++)
		g_mem[i] = (uint8_t)(i * 131 + 7);
	memcpy(g_ref, g_mem, NREG * frame);
	uint8_t sel = data[0];
	/* region 0 is read-only to everyone: it must never change */
	static const uint32_t fixed[NREG] = { MRC_MR_LOCAL_READ, 0, 0, 0 };
	for (int r = 0; r < NREG; r++) {
		uint32_t acc = r ? (uint32_t)((sel >> (2 * r)) * 5 + r) & MRC_MR_ALL : fixed[r];
		g_mrs[r].view.len = REG_LEN;
		g_mrs[r].view.access = acc;
		ENSURE(mrce_mr_add(g_e, 1000, region(r), REG_LEN, acc & MRC_MR_ALL,
				  &g_mrs[r].key) == 0);
	}

	struct mrcd_client c;
	memset(&c, 0, sizeof(c));
	c.d = (struct mrcd *)&c;       /* opaque to rings.c; the fakes ignore it */
	c.id = 1000;
	c.max_ring = SLOTS;
	ev_init(&c.retry, NULL);
	struct mrcd_cqp *q[2];
	static const uint64_t bases[4] = { 0, (1ull << 32) - 3, UINT64_MAX - 2, 1ull << 63 };
	uint64_t base = bases[(data[1] >> 3) & 3];
	for (int i = 0; i < 2; i++) {
		struct mrc_cli_create_qp rq = { .sq_entries = SLOTS, .cq_entries = SLOTS / 2,
						.index_base = base };
		struct mrc_cli_create_qp_rep rep;
		int memfd;
		const char *why = "";
		ENSURE(mrcd_cqp_create(&c, &rq, 0, &q[i], &memfd, &rep, &why) == 0);
		close(memfd);
	}
	ENSURE(mrce_qp_connect(g_e, q[0]->qpn, peer, q[1]->qpn, q[0]->psn, q[1]->psn) == 0);
	ENSURE(mrce_qp_connect(g_e, q[1]->qpn, peer, q[0]->qpn, q[1]->psn, q[0]->psn) == 0);

	int rounds = 1 + (data[1] & 7);
	data += 2;
	size -= 2;
	uint64_t next[2] = { base, base };
	const size_t rec = 1 + sizeof(struct mrc_sqe);
	for (int round = 0; round < rounds; round++) {
		for (; size >= rec; data += rec, size -= rec) {
			uint8_t ctl = data[0];
			if (ctl == 0xff)      /* end of this round */
				break;
			int w = (ctl >> 1) & 1;
			struct mrc_sqe s;
			memcpy(&s, data + 1, sizeof(s));
			/* keys name the regions most of the time */
			if (ctl & 4)
				s.lkey = g_mrs[s.lkey % NREG].key;
			if (ctl & 8)
				s.rkey = g_mrs[s.rkey % NREG].key;
			if (ctl & 1)
				s.seq = (uint32_t)(next[w] + 1);
			struct mrc_sqe *slot = &q[w]->sq[next[w] & q[w]->sq_mask];
			memcpy(slot, &s, sizeof(s));
			if (ctl & 1)
				next[w]++;
			if (ctl & 16)         /* a hostile CQ tail */
				q[w]->cqh->tail = s.wr_id;
			else
				q[w]->cqh->tail = q[w]->cq_head;   /* a client that keeps up */
		}
		if (size >= rec) {
			data += rec;
			size -= rec;
		}
		for (int i = 0; i < 2; i++) {
			mrcd_cqp_poll(q[i], 64);
			if (!mrcd_cqp_arm(q[i], g_now))
				mrcd_cqp_deactivate(q[i]);
		}
		run_engine();
		for (int i = 0; i < 2; i++) {
			q[i]->cqh->tail = q[i]->cq_head;
			mrcd_cqp_flush(q[i]);
		}
	}
	for (int i = 0; i < 2; i++)
		mrcd_cqp_destroy(q[i]);
	/* Nothing outside the regions changed, nor the read-only region. */
	for (int r = 0; r < NREG; r++) {
		size_t base = (size_t)r * frame;
		ENSURE(!memcmp(g_mem + base, g_ref + base, CANARY));
		ENSURE(!memcmp(g_mem + base + CANARY + REG_LEN, g_ref + base + CANARY + REG_LEN, CANARY));
	}
	ENSURE(!memcmp(g_mem + CANARY, g_ref + CANARY, REG_LEN));
	ev_timer_stop(g_loop, &c.retry);
	mrce_destroy(g_e);
	g_e = NULL;
	memset(g_bind, 0, sizeof(g_bind));
	free(g_mem);
	free(g_ref);
	return 0;
}
