/* Engine test fixtures; see etest.h. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "tests/support/etest.h"

/* Fixtures still alive, so a test that fails mid-way (cmocka longjmps
 * out) is cleaned up by its teardown and ASan reports only real leaks. */
#define ETEST_LIVE 8
static struct etest *g_live[ETEST_LIVE];

static void live_set(struct etest *t, int on)
{
	for (int i = 0; i < ETEST_LIVE; i++)
		if (on ? !g_live[i] : g_live[i] == t) {
			g_live[i] = on ? t : NULL;
			return;
		}
}

void etest_cleanup_all(void)
{
	for (int i = 0; i < ETEST_LIVE; i++)
		if (g_live[i])
			etest_fini(g_live[i]);
}

int etest_init(struct etest *t, const struct chan_cfg *cfg, size_t src_len,
	       size_t dst_len, int sparse)
{
	const char *why = NULL;
	struct mrce_qp_attr attr = { .pd = ETEST_PD };
	int rc;

	memset(t, 0, sizeof(*t));
	live_set(t, 1);
	rc = chan_create(cfg, &t->ch, &why);
	if (rc < 0) {
		fprintf(stderr, "etest: chan_create: %d %s\n", rc, why ? why : "");
		return rc;
	}
	rc = chan_gbuf_alloc(&t->src, src_len, ETEST_GUARD, cfg->seed * 2 + 1, 1, sparse);
	if (rc == 0)
		rc = chan_gbuf_alloc(&t->dst, dst_len, ETEST_GUARD, cfg->seed * 2 + 2, 1, sparse);
	if (rc < 0)
		return rc;
	rc = mrce_mr_add(t->ch->node[0].e, ETEST_PD, t->src.p, src_len,
			MRCE_ACCESS_LOCAL_READ | MRCE_ACCESS_LOCAL_WRITE, &t->lkey);
	if (rc == 0)
		rc = mrce_mr_add(t->ch->node[1].e, ETEST_PD, t->dst.p, dst_len,
				MRCE_ACCESS_REMOTE_WRITE | MRCE_ACCESS_REMOTE_ATOMIC |
				MRCE_ACCESS_LOCAL_WRITE | MRCE_ACCESS_LOCAL_READ, &t->rkey);
	t->dst_lkey = t->rkey;
	if (rc == 0)
		rc = chan_qp_pair(t->ch, 0, 1, &attr, &attr, &t->qa, &t->qb);
	if (rc < 0)
		fprintf(stderr, "etest: setup failed: %d\n", rc);
	return rc;
}

void etest_fini(struct etest *t)
{
	live_set(t, 0);
	chan_destroy(t->ch);
	chan_gbuf_free(&t->src);
	chan_gbuf_free(&t->dst);
	memset(t, 0, sizeof(*t));
}

static int pred_wcs(struct chan *ch, void *arg)
{
	const uint64_t *want = arg;
	for (uint32_t n = 0; n < ch->cfg.nodes; n++)
		if (ch->node[n].wc_total < want[n])
			return 0;
	return 1;
}

int etest_run_wcs(struct chan *ch, const uint64_t *want, uint64_t max_ns)
{
	return chan_run(ch, pred_wcs, (void *)want, max_ns, ETEST_MAX_STEPS);
}

int etest_run2(struct chan *ch, uint64_t n0, uint64_t n1, uint64_t max_ns)
{
	uint64_t want[CHAN_MAX_NODES] = { n0, n1 };
	return etest_run_wcs(ch, want, max_ns);
}

int etest_post(struct chan *ch, uint32_t n, uint32_t qpn, uint8_t op, uint64_t wr_id,
	       uint32_t lkey, uint64_t loff, uint64_t len, uint32_t rkey,
	       uint64_t roff, uint32_t imm, uint64_t add)
{
	struct mrc_sqe wr = { .wr_id = wr_id, .op = op, .lkey = lkey, .loff = loff,
			     .len = len, .rkey = rkey, .roff = roff, .imm = imm,
			     .add = add };
	return mrce_qp_post(ch->node[n].e, ch->now, qpn, &wr);
}
