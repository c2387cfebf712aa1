/* libFuzzer: daemon-to-daemon CTRL messages (daemon/core/ctrl.h).  The
 * input is tried three ways: as a body, with or without the endpoint
 * block (an accepted body re-encodes to the same bytes); as a sealed datagram, which without the key must never
 * open; and sealed with the key, which must open to the same message once
 * and be refused as a replay the second time. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/core/ctrl.h"

static struct mrc_auth *g_key;
static struct mrc_auth_replay *g_rp, *g_rp0;   /* host 1's, host 0's */
static struct mrc_auth_ctrl_tx g_tx, g_tx1;

static void init(void)
{
	uint8_t k[MRC_AUTH_KEY_BYTES];
	for (int i = 0; i < MRC_AUTH_KEY_BYTES; i++)
		k[i] = (uint8_t)(i * 7 + 1);
	if (mrc_auth_key_parse(k, sizeof(k), &g_key, NULL) || mrc_auth_ctrl_tx_init(&g_tx) ||
	    mrc_auth_ctrl_tx_init(&g_tx1))
		abort();
	struct mrc_auth_replay_cfg c = { .self_host = 1, .max_hosts = 4,
		.window_ns = 5000000000ull, .max_skew_ns = 1000000000ull, .epoch = g_tx1.epoch };
	struct mrc_auth_replay_cfg c0 = c;
	c0.self_host = 0;
	c0.epoch = g_tx.epoch;
	if (mrc_auth_replay_create(&c, &g_rp) || mrc_auth_replay_create(&c0, &g_rp0))
		abort();
	/* Host 0 gets host 1's cookie: its first envelope is challenged. */
	struct mrce_ctrl m = { .type = MRCE_CTRL_PLANES };
	struct mrc_auth_ctrl_msg env;
	uint8_t pkt[MRCD_CTRL_LEN_MAX];
	size_t len;
	if (mrcd_ctrl_seal_len(g_key, &g_tx, g_rp0, 1, 0, 1, &m, pkt, &len) ||
	    mrcd_ctrl_open(g_key, g_rp, 1, 0, pkt, len, &env, &m) != -ENOTCONN ||
	    mrc_auth_ctrl_challenge(g_key, &g_tx1, g_rp, 1, 1, 0, env.src_epoch, pkt,
				    sizeof pkt, &len) ||
	    mrcd_ctrl_open(g_key, g_rp0, 1, 1, pkt, len, &env, &m) || !env.challenge)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!g_key)
		init();
	struct mrce_ctrl m, m2;
	struct mrc_auth_ctrl_msg env;
	/* Random bytes are no envelope of ours: the MAC stops them. */
	if (!mrcd_ctrl_open(g_key, g_rp, 1, UINT32_MAX, data, size, &env, &m))
		abort();
	if (mrce_ctrl_decode(data, size, &m))
		return 0;
	/* With or without the endpoint block: the same bytes again. */
	uint8_t again[MRCE_CTRL_BODY_MAX], pkt[MRCD_CTRL_LEN_MAX];
	size_t n = mrce_ctrl_encode(again, &m), len = 0;
	if (n != size || memcmp(again, data, size))
		abort();
	if (mrcd_ctrl_seal_len(g_key, &g_tx, g_rp0, 1, 0, 1, &m, pkt, &len) ||
	    len != MRC_AUTH_CTRL_OVERHEAD + size)
		abort();
	if (mrcd_ctrl_open(g_key, g_rp, 1, 0, pkt, len, &env, &m2) || env.src_host != 0)
		abort();
	if (mrce_ctrl_encode(again, &m2) != size || memcmp(again, data, size))
		abort();
	if (mrcd_ctrl_open(g_key, g_rp, 1, 0, pkt, len, &env, &m2) != -EALREADY)
		abort();
	return 0;
}
