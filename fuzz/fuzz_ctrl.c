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
static struct mrc_auth_replay *g_rp;
static struct mrc_auth_ctrl_tx g_tx;

static void init(void)
{
	uint8_t k[MRC_AUTH_KEY_BYTES];
	for (int i = 0; i < MRC_AUTH_KEY_BYTES; i++)
		k[i] = (uint8_t)(i * 7 + 1);
	struct mrc_auth_replay_cfg c = { .self_host = 1, .max_hosts = 4,
		.window_ns = 5000000000ull };
	if (mrc_auth_key_parse(k, sizeof(k), &g_key, NULL) || mrc_auth_replay_create(&c, &g_rp))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!g_key)
		init();
	struct mrcd_ctrl m, m2;
	uint32_t src;
	/* Random bytes are no envelope of ours: the MAC stops them. */
	if (!mrcd_ctrl_open(g_key, g_rp, 1, data, size, &src, &m))
		abort();
	if (mrcd_ctrl_decode(data, size, &m))
		return 0;
	/* With or without the endpoint block: the same bytes again. */
	uint8_t again[MRCD_CTRL_BODY_MAX], pkt[MRCD_CTRL_LEN_MAX];
	size_t n = mrcd_ctrl_encode(again, &m), len = 0;
	if (n != size || memcmp(again, data, size))
		abort();
	if (mrcd_ctrl_seal_len(g_key, &g_tx, 1, 0, 1, &m, pkt, &len) ||
	    len != MRC_AUTH_CTRL_OVERHEAD + size)
		abort();
	if (mrcd_ctrl_open(g_key, g_rp, 1, pkt, len, &src, &m2) || src != 0)
		abort();
	if (mrcd_ctrl_encode(again, &m2) != size || memcmp(again, data, size))
		abort();
	if (mrcd_ctrl_open(g_key, g_rp, 1, pkt, len, &src, &m2) != -EALREADY)
		abort();
	return 0;
}
