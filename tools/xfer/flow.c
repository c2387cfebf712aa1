/* mrc-xfer: what happens on the connections: a bulk WRITE stream split
 * over one or more QPs, or a WRITE_WITH_IMM ping-pong; reports as JSON. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mrc/error.h"
#include "tools/xfer/xfer.h"
#include "transport/crc32c.h"

#define IMM_LAST 0x6d7263u        /* the last WRITE of a slice */
#define IMM_PING 0x70696e67u

void xfer_finish(struct xfer *x, int rc)
{
	x->rc = rc;
	ev_break(mrcd_loop(x->d), EVBREAK_ALL);
}

static void on_linger(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)revents;
	xfer_finish(w->data, 0);
}

static void plane_report(struct xfer *x);

/* The receiver's check runs from a timer, not inside the completion
 * callback: hashing a GiB there would hold back the ACKs of the last
 * packets (callbacks run before the daemon core sends). */
static void on_verify(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct xfer *x = w->data;
	(void)revents;
	printf("{\"role\":\"server\",\"bytes\":%" PRIu64 ",\"crc32c\":\"%08x\"}\n",
	       x->bytes, mrce_crc32c(0, x->buf, x->bytes));
	plane_report(x);
	fflush(stdout);
	/* Stay a moment so the sender's last ACKs can be repeated. */
	ev_timer_init(&x->linger, on_linger, 1.0, 0);
	x->linger.data = x;
	ev_timer_start(loop, &x->linger);
}

/* Single-path mode pins each QP to one EV, chosen like an ECMP hash would
 * (a function of the flow, here seeded per QP), for comparisons. */
int xfer_qp_create(struct xfer *x, uint32_t *qpn)
{
	static uint64_t h;
	if (!h)
		h = x->seed * 0x9e3779b97f4a7c15ull + (uint64_t)mrcd_self_host(x->d) * 7919;
	h ^= h << 13;
	h ^= h >> 7;
	h ^= h << 17;
	struct mrce_qp_attr a = { .pd = 1, .flags = x->pin ? MRCE_QP_PIN_EV : 0,
		.pin_ev = (uint32_t)(h % 4096) };
	return mrce_qp_open(mrcd_engine(x->d), &a, qpn);
}

static void plane_report(struct xfer *x)
{
	uint32_t peer;
	if (mrcd_peer_of_host(x->d, x->peer_host, &peer))
		return;
	uint64_t per[MRCE_MAX_PLANES] = { 0 }, lost = 0, bad = 0, denied = 0, trims = 0, retx = 0;
	struct mrce_ev_info in;
	for (uint32_t ev = 0; !mrce_ev_info(mrcd_engine(x->d), peer, ev, &in); ev++) {
		per[in.plane] += in.tx_pkts;
		lost += in.lost;
		bad += in.state == MRCE_EV_ASSUMED_BAD;
		denied += in.state == MRCE_EV_DENIED;
		trims += in.trims;
	}
	for (uint32_t i = 0; i < x->nqps; i++) {
		struct mrce_qp_info qi;
		if (x->q[i].qpn && !mrce_qp_info(mrcd_engine(x->d), x->q[i].qpn, &qi))
			retx += qi.retx;
	}
	printf("{\"role\":\"%s\",\"planes_tx_pkts\":[", x->server ? "server" : "client");
	for (uint32_t p = 0; p < mrcd_n_planes(x->d); p++)
		printf("%s%" PRIu64, p ? "," : "", per[p]);
	printf("],\"ev_state\":[");
	for (uint32_t ev = 0; !mrce_ev_info(mrcd_engine(x->d), peer, ev, &in); ev++)
		printf("%s\"%s\"", ev ? "," : "", mrce_ev_state_name(in.state));
	printf("],\"paths_lost_pkts\":%" PRIu64 ",\"paths_assumed_bad\":%" PRIu64
	       ",\"paths_denied\":%" PRIu64 ",\"trims\":%" PRIu64 ",\"retx\":%" PRIu64 "}\n",
	       lost, bad, denied, trims, retx);
}

/* ---- bulk -------------------------------------------------------------- */

static void post_more(struct xfer *x, struct xqp *q)
{
	while (q->posted < q->end && q->outstanding < 64) {
		uint64_t len = q->end - q->posted < x->chunk ? q->end - q->posted : x->chunk;
		int last = q->posted + len == q->end;
		struct mrc_sqe wr = { .wr_id = len, .op = last ? MRC_SQE_WRITE_IMM : MRC_SQE_WRITE,
			.lkey = x->key, .loff = q->posted, .len = len, .rkey = q->remote.priv,
			.roff = q->posted, .imm = IMM_LAST };
		int rc = mrce_qp_post(mrcd_engine(x->d), mrcd_now(), q->qpn, &wr);
		if (rc == -ENOSPC)
			break;
		if (rc) {
			fprintf(stderr, "mrc-xfer: post: %s\n", mrc_strerror(rc));
			xfer_finish(x, 1);
			return;
		}
		q->posted += len;
		q->outstanding++;
	}
	mrcd_kick(x->d);
}

static void bulk_done(struct xfer *x, uint64_t now)
{
	double s = (double)(now - x->t0) / 1e9;
	printf("{\"role\":\"client\",\"bytes\":%" PRIu64 ",\"qps\":%u,\"crc32c\":\"%08x\","
	       "\"seconds\":%.3f,\"goodput_mbit\":%.1f,\"longest_stall_ms\":%.1f}\n",
	       x->bytes, x->nqps, mrce_crc32c(0, x->buf, x->bytes), s,
	       (double)x->bytes * 8 / s / 1e6, (double)x->max_gap / 1e6);
	plane_report(x);
	if (x->report_ms) {
		uint64_t n = (now - x->t0) / (x->report_ms * 1000000ull) + 1;
		printf("{\"role\":\"client\",\"interval_ms\":%u,\"mbit\":[", x->report_ms);
		for (uint64_t i = 0; i < n && i < x->nstamps; i++)
			printf("%s%.1f", i ? "," : "", (double)x->stamps[i] * 8 / (x->report_ms * 1000.0));
		printf("]}\n");
	}
	xfer_finish(x, 0);
}

static void bulk_wc(struct xfer *x, struct xqp *q, const struct mrce_wc *wc, uint64_t now)
{
	if (x->server) {
		if (wc->op != MRCE_WC_RECV_WRITE_IMM || ++x->imms < x->nqps)
			return;
		ev_timer_init(&x->linger, on_verify, 0.0, 0);
		x->linger.data = x;
		ev_timer_start(mrcd_loop(x->d), &x->linger);
		return;
	}
	if (wc->op == MRCE_WC_RECV_WRITE_IMM)
		return;
	q->outstanding--;
	q->done += wc->byte_len;
	x->done_bytes += wc->byte_len;
	if (x->t_last && now - x->t_last > x->max_gap)
		x->max_gap = now - x->t_last;
	x->t_last = now;
	if (x->report_ms) {
		uint64_t slot = (now - x->t0) / (x->report_ms * 1000000ull);
		if (slot < x->nstamps)
			x->stamps[slot] += wc->byte_len;
	}
	/* Progress marks let a test inject a fault truly mid-transfer. */
	while (x->progress && x->next_pct < 100 && x->done_bytes * 100 >= x->bytes * x->next_pct) {
		printf("{\"progress\":%u}\n", x->next_pct);
		fflush(stdout);
		x->next_pct += 10;
	}
	if (x->done_bytes == x->bytes)
		bulk_done(x, now);
	else
		post_more(x, q);
}

/* ---- ping-pong ----------------------------------------------------------- */

static int cmp64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static void ping(struct xfer *x, struct xqp *q)
{
	struct mrc_sqe wr = { .wr_id = x->iter, .op = MRC_SQE_WRITE_IMM, .lkey = x->key,
		.len = x->bytes, .rkey = q->remote.priv, .imm = IMM_PING };
	x->t_ping = mrcd_now();
	int rc = mrce_qp_post(mrcd_engine(x->d), x->t_ping, q->qpn, &wr);
	if (rc) {
		fprintf(stderr, "mrc-xfer: post: %s\n", mrc_strerror(rc));
		xfer_finish(x, 1);
		return;
	}
	mrcd_flush(x->d);
}

static void pingpong_wc(struct xfer *x, struct xqp *q, const struct mrce_wc *wc, uint64_t now)
{
	if (wc->op != MRCE_WC_RECV_WRITE_IMM)
		return;               /* our own WRITE_IMM completed */
	if (x->server) {
		ping(x, q);           /* pong */
		return;
	}
	x->rtts[x->iter++] = now - x->t_ping;
	if (x->iter < x->iters) {
		ping(x, q);
		return;
	}
	double total = (double)(now - x->t0) / 1e9;
	qsort(x->rtts, x->iters, sizeof(uint64_t), cmp64);
	/* The client's ACK packets and ACKs that rode on its requests: a
	 * ping-pong should need (almost) none of the former. */
	struct mrce_stats st;
	mrce_stats(mrcd_engine(x->d), &st);
	printf("{\"role\":\"client\",\"pingpong\":%" PRIu64 ",\"size\":%" PRIu64
	       ",\"rtt_us_min\":%.1f,\"rtt_us_p50\":%.1f,\"rtt_us_p99\":%.1f,\"msgs_per_s\":%.0f"
	       ",\"tx_acks\":%" PRIu64 ",\"tx_pb_acks\":%" PRIu64 "}\n",
	       x->iters, x->bytes, x->rtts[0] / 1e3, x->rtts[x->iters / 2] / 1e3,
	       x->rtts[x->iters * 99 / 100] / 1e3, 2.0 * x->iters / total,
	       st.tx_acks, st.tx_pb_acks);
	xfer_finish(x, 0);
}

void xfer_on_wc(void *ctx, const struct mrce_wc *wc)
{
	struct xqp *q = ctx;
	struct xfer *x = xfer_self;
	uint64_t now = mrcd_now();
	if (wc->status) {
		fprintf(stderr, "mrc-xfer: completion error on qp %#x: %s\n", wc->qpn,
			mrc_strerror(wc->status));
		xfer_finish(x, 1);
		return;
	}
	if (x->pingpong)
		pingpong_wc(x, q, wc, now);
	else
		bulk_wc(x, q, wc, now);
}

/* ---- connection setup ------------------------------------------------------ */

void xfer_on_connected(void *ctx, int err, const struct mrcd_qp_addr *remote)
{
	struct xqp *q = ctx;
	struct xfer *x = xfer_self;
	if (err) {
		fprintf(stderr, "mrc-xfer: connect to host %u service %u: %s\n", x->peer_host,
			x->sid, mrc_strerror(err));
		xfer_finish(x, 1);
		return;
	}
	q->remote = *remote;
	q->up = 1;
	if (!x->t0)
		x->t0 = mrcd_now();
	if (x->pingpong) {
		ping(x, q);
		return;
	}
	post_more(x, q);
}

void xfer_on_req(void *ctx, const struct mrcd_cm_req *req)
{
	struct xfer *x = ctx;
	if (x->accepted == x->nqps) {
		mrcd_cm_reject(x->d, req->id, -EBUSY);
		return;
	}
	struct xqp *q = &x->q[x->accepted];
	x->peer_host = req->remote.host;
	q->remote = req->remote;
	int rc = xfer_qp_create(x, &q->qpn);
	if (!rc)
		rc = mrcd_qp_bind(x->d, q->qpn, xfer_on_wc, q);
	struct mrcd_qp_addr me = { .host = mrcd_self_host(x->d), .qpn = q->qpn, .psn = 1000, .priv = x->key };
	if (!rc)
		rc = mrcd_cm_accept(x->d, req->id, &me);
	if (rc) {
		fprintf(stderr, "mrc-xfer: accept: %s\n", mrc_strerror(rc));
		xfer_finish(x, 1);
		return;
	}
	x->accepted++;
}
