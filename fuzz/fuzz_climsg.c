/* libFuzzer target for the client protocol decoder (codec/climsg.c).
 * Every input is decoded as a request and as a reply.  An accepted client
 * request must re-encode to exactly the same bytes (the decoder accepts
 * only the canonical form); an accepted reply must re-encode the same way
 * from its status, body and reason.  An accepted QP_STATS_N (either way)
 * has a count of 1 to MRC_CLI_QP_STATS_N_MAX, nothing past it, and no
 * counters in a refused QP's record.  The first input byte doubles as a
 * "fix the header" switch so that mutations reach the body checks. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "codec/climsg.h"

#define ENSURE(c) do { if (!(c)) abort(); } while (0)

static int zero(const void *p, size_t n)
{
	const uint8_t *c = p;
	for (size_t i = 0; i < n; i++)
		if (c[i])
			return 0;
	return 1;
}

static void qp_stats_n(const struct mrc_cli_msg *m, int rep)
{
	if (!rep) {
		struct mrc_cli_qp_stats_n q;
		memcpy(&q, m->body, sizeof(q));
		ENSURE(q.n >= 1 && q.n <= MRC_CLI_QP_STATS_N_MAX);
		ENSURE(zero(&q.qpn[q.n], (MRC_CLI_QP_STATS_N_MAX - q.n) * sizeof(q.qpn[0])));
		return;
	}
	struct mrc_cli_qp_stats_n_rep r;
	memcpy(&r, m->body, sizeof(r));
	ENSURE(r.n >= 1 && r.n <= MRC_CLI_QP_STATS_N_MAX);
	for (uint32_t i = 0; i < MRC_CLI_QP_STATS_N_MAX; i++)
		ENSURE(i < r.n ? r.rec[i].status <= 0 && (!r.rec[i].status || zero(&r.rec[i].s, sizeof(r.rec[i].s)))
			       : zero(&r.rec[i], sizeof(r.rec[i])));
}

static void one(const uint8_t *in, size_t len)
{
	uint8_t out[MRC_CLI_MSG_MAX];
	struct mrc_cli_msg m;
	const char *why = NULL;
	int r = mrc__cli_dec_req(in, len, &m, &why);
	if (r == 0) {
		ENSURE(m.body_len + sizeof(struct mrc_cli_hdr) == len);
		ENSURE(m.body_len == mrc__cli_req_size(m.hdr.type));
		if (m.hdr.type == MRC_CLI_QP_STATS_N)
			qp_stats_n(&m, 0);
		int n = mrc__cli_enc_req(out, sizeof(out), m.hdr.type, m.hdr.req_id,
					 m.body, m.body_len);
		ENSURE(n == (int)len && !memcmp(out, in, len));
	} else {
		ENSURE(why != NULL);
	}
	why = NULL;
	r = mrc__cli_dec_rep(in, len, &m, &why);
	if (r == 0) {
		uint16_t type = m.hdr.type & (uint16_t)~MRC_CLI_REPLY;
		ENSURE(m.status <= 0);
		if (m.status < 0) {
			char reason[MRC_CLI_REASON_MAX + 1];
			memcpy(reason, m.reason, m.reason_len);
			reason[m.reason_len] = 0;
			int n = mrc__cli_enc_rep(out, sizeof(out), type, m.hdr.req_id, m.status,
						 NULL, 0, reason);
			ENSURE(n == (int)len && !memcmp(out, in, len));
		} else {
			if (type == MRC_CLI_QP_STATS_N)
				qp_stats_n(&m, 1);
			int n = mrc__cli_enc_rep(out, sizeof(out), type, m.hdr.req_id, 0,
						 m.body, m.body_len, NULL);
			ENSURE(n == (int)len && !memcmp(out, in, len));
		}
	} else {
		ENSURE(why != NULL);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1 || size > MRC_CLI_MSG_MAX + 1)
		return 0;
	uint8_t buf[MRC_CLI_MSG_MAX + 1];
	size_t len = size - 1;
	memcpy(buf, data + 1, len);
	if ((data[0] & 1) && len >= sizeof(struct mrc_cli_hdr)) {
		struct mrc_cli_hdr h;
		memcpy(&h, buf, sizeof(h));
		h.magic = MRC_CLI_MAGIC;
		h.version = MRC_CLI_VERSION;
		h.len = (uint32_t)(len - sizeof(h));
		memcpy(buf, &h, sizeof(h));
	}
	one(buf, len);
	return 0;
}
