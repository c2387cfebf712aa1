/* mrc-xfer: moves data between two hosts of the fabric with the daemon's
 * own core (engine, datapath, connection manager) built in, the way
 * perftest's ib_write_bw exercises an RDMA fabric without an application.
 * One side listens, the other connects and WRITEs N bytes (the last chunk
 * as WRITE_WITH_IMM); both print a CRC-32C of the buffer so a script can
 * prove every byte arrived, plus goodput, the longest stall and the bytes
 * sent per plane.  Used by `make demo` and the fabric integration tests. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "daemon/core.h"
#include "mrc/error.h"
#include "transport/crc32c.h"

struct xfer {
	struct mrcd d;
	int server;
	uint32_t peer_host, sid;
	uint64_t bytes, chunk, off, done_bytes;
	uint8_t *buf;
	uint32_t key, qpn, outstanding;
	struct mrcd_qp_addr remote;
	uint64_t t0, t_last, max_gap, *stamps;
	uint32_t nstamps, report_ms, progress, next_pct;
	int rc, finished;
	ev_timer linger;
	uint64_t seed;
};

static void usage(void)
{
	fprintf(stderr,
		"usage: mrc-xfer --topology FILE --host H --listen [--sid S] --bytes N\n"
		"       mrc-xfer --topology FILE --host H --connect PEER [--sid S] --bytes N\n"
		"  [--chunk BYTES] [--seed N] [--port P] [--mtu M] [--report-ms MS] [--cc nscc|fixed]\n"
		"  [--progress]  print {\"progress\":N} every 10%% of the transfer\n"
		"Without --topology both sides run on the loopback single-host fabric.\n");
}

static void fill(uint8_t *b, uint64_t n, uint64_t seed)
{
	uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
	for (uint64_t i = 0; i < n; i += 8) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		memcpy(b + i, &x, n - i < 8 ? n - i : 8);
	}
}

static void plane_report(struct xfer *x)
{
	uint32_t peer;
	if (mrcd_peer_of_host(&x->d, x->peer_host, &peer))
		return;
	uint64_t per[MRC_MAX_PLANES] = { 0 }, lost = 0, bad = 0, denied = 0, trims = 0;
	struct mrc_ev_info in;
	for (uint32_t ev = 0; !mrc_ev_info(x->d.eng, peer, ev, &in); ev++) {
		per[in.plane] += in.tx_pkts;
		lost += in.lost;
		bad += in.state == MRC_EV_ASSUMED_BAD;
		denied += in.state == MRC_EV_DENIED;
		trims += in.trims;
	}
	printf("{\"role\":\"%s\",\"planes_tx_pkts\":[", x->server ? "server" : "client");
	for (uint32_t p = 0; p < x->d.nplanes; p++)
		printf("%s%" PRIu64, p ? "," : "", per[p]);
	struct mrc_qp_info qi = { 0 };
	if (x->qpn)
		mrc_qp_info(x->d.eng, x->qpn, &qi);
	printf("],\"ev_state\":[");
	for (uint32_t ev = 0; !mrc_ev_info(x->d.eng, peer, ev, &in); ev++)
		printf("%s\"%s\"", ev ? "," : "", mrc_ev_state_name(in.state));
	printf("],\"paths_lost_pkts\":%" PRIu64 ",\"paths_assumed_bad\":%" PRIu64
	       ",\"paths_denied\":%" PRIu64 ",\"trims\":%" PRIu64 ",\"retx\":%" PRIu64 "}\n",
	       lost, bad, denied, trims, qi.retx);
}

static void finish(struct xfer *x, int rc)
{
	x->rc = rc;
	x->finished = 1;
	ev_break(x->d.loop, EVBREAK_ALL);
}

static void on_linger(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)revents;
	finish(w->data, 0);
}

static void post_more(struct xfer *x)
{
	while (x->off < x->bytes && x->outstanding < 64) {
		uint64_t len = x->bytes - x->off < x->chunk ? x->bytes - x->off : x->chunk;
		int last = x->off + len == x->bytes;
		struct mrc_wr wr = { .wr_id = x->off + len, .op = last ? MRC_WR_WRITE_IMM : MRC_WR_WRITE,
			.lkey = x->key, .loff = x->off, .len = len, .rkey = x->remote.priv,
			.roff = x->off, .imm = 0x6d7263 };
		int rc = mrc_qp_post(x->d.eng, mrcd_now(), x->qpn, &wr);
		if (rc == -ENOSPC)
			break;
		if (rc) {
			fprintf(stderr, "mrc-xfer: post: %s\n", mrc_strerror(rc));
			finish(x, 1);
			return;
		}
		x->off += len;
		x->outstanding++;
	}
	mrcd_kick(&x->d);
}

static void on_wc(void *ctx, const struct mrc_wc *wc)
{
	struct xfer *x = ctx;
	uint64_t now = mrcd_now();
	if (wc->status) {
		fprintf(stderr, "mrc-xfer: completion error: %s\n", mrc_strerror(wc->status));
		finish(x, 1);
		return;
	}
	if (x->server) {
		if (wc->op != MRC_WC_RECV_WRITE_IMM)
			return;
		uint32_t crc = mrc_crc32c(0, x->buf, x->bytes);
		printf("{\"role\":\"server\",\"bytes\":%" PRIu64 ",\"crc32c\":\"%08x\"}\n",
		       x->bytes, crc);
		plane_report(x);
		fflush(stdout);
		/* Stay a moment so the sender's last ACKs can be repeated. */
		ev_timer_init(&x->linger, on_linger, 1.0, 0);
		x->linger.data = x;
		ev_timer_start(x->d.loop, &x->linger);
		return;
	}
	x->outstanding--;
	x->done_bytes += wc->byte_len;
	/* Progress marks let a test inject a fault truly mid-transfer. */
	while (x->progress && x->next_pct < 100 && x->done_bytes * 100 >= x->bytes * x->next_pct) {
		printf("{\"progress\":%u}\n", x->next_pct);
		fflush(stdout);
		x->next_pct += 10;
	}
	if (x->t_last && now - x->t_last > x->max_gap)
		x->max_gap = now - x->t_last;
	x->t_last = now;
	if (x->report_ms) {
		uint64_t slot = (now - x->t0) / (x->report_ms * 1000000ull);
		if (slot < x->nstamps)
			x->stamps[slot] += wc->byte_len;
	}
	if (x->done_bytes == x->bytes) {
		double s = (double)(now - x->t0) / 1e9;
		printf("{\"role\":\"client\",\"bytes\":%" PRIu64 ",\"crc32c\":\"%08x\",\"seconds\":%.3f,"
		       "\"goodput_mbit\":%.1f,\"longest_stall_ms\":%.1f}\n", x->bytes,
		       mrc_crc32c(0, x->buf, x->bytes), s, (double)x->bytes * 8 / s / 1e6,
		       (double)x->max_gap / 1e6);
		plane_report(x);
		if (x->report_ms) {
			uint64_t n = (now - x->t0) / (x->report_ms * 1000000ull) + 1;
			printf("{\"role\":\"client\",\"interval_ms\":%u,\"mbit\":[", x->report_ms);
			for (uint64_t i = 0; i < n && i < x->nstamps; i++)
				printf("%s%.1f", i ? "," : "",
				       (double)x->stamps[i] * 8 / (x->report_ms * 1000.0));
			printf("]}\n");
		}
		finish(x, 0);
		return;
	}
	post_more(x);
}

static void on_connected(void *ctx, int err, const struct mrcd_qp_addr *remote)
{
	struct xfer *x = ctx;
	if (err) {
		fprintf(stderr, "mrc-xfer: connect to host %u service %u: %s\n", x->peer_host,
			x->sid, mrc_strerror(err));
		finish(x, 1);
		return;
	}
	x->remote = *remote;
	x->t0 = mrcd_now();
	post_more(x);
}

static void on_req(void *ctx, const struct mrcd_cm_req *req)
{
	struct xfer *x = ctx;
	if (x->qpn) {
		mrcd_cm_reject(&x->d, req->id, -EBUSY);
		return;
	}
	x->peer_host = req->remote.host;
	int rc = mrc_qp_create(x->d.eng, &(struct mrc_qp_attr){ .pd = 1 }, &x->qpn);
	if (!rc)
		rc = mrcd_qp_bind(&x->d, x->qpn, on_wc, x);
	struct mrcd_qp_addr me = { .host = x->d.self, .qpn = x->qpn, .psn = 1000, .priv = x->key };
	if (!rc)
		rc = mrcd_cm_accept(&x->d, req->id, &me);
	if (rc) {
		fprintf(stderr, "mrc-xfer: accept: %s\n", mrc_strerror(rc));
		finish(x, 1);
	}
}

static uint64_t num(const char *s)
{
	char *e;
	uint64_t v = strtoull(s, &e, 0);
	if (*e == 'K' || *e == 'k')
		v <<= 10;
	else if (*e == 'M' || *e == 'm')
		v <<= 20;
	else if (*e == 'G' || *e == 'g')
		v <<= 30;
	else if (*e) {
		fprintf(stderr, "mrc-xfer: '%s' is not a size\n", s);
		exit(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	static struct xfer x;
	struct mrcd_cfg *c = &x.d.cfg;
	mrcd_cfg_default(c);
	mrcd_log_level = MRCD_LOG_WARNING;
	x.chunk = 256 << 10;
	x.seed = 1;
	const char *peer = NULL;
	static const struct option o[] = {
		{ "topology", 1, 0, 't' }, { "host", 1, 0, 'H' }, { "listen", 0, 0, 'l' },
		{ "connect", 1, 0, 'c' }, { "sid", 1, 0, 's' }, { "bytes", 1, 0, 'b' },
		{ "chunk", 1, 0, 'k' }, { "seed", 1, 0, 'S' }, { "port", 1, 0, 'p' },
		{ "mtu", 1, 0, 'm' }, { "report-ms", 1, 0, 'r' }, { "cc", 1, 0, 'C' },
		{ "verbose", 0, 0, 'v' }, { "progress", 0, 0, 'P' }, { 0, 0, 0, 0 } };
	char err[512];
	int ch;
	while ((ch = getopt_long(argc, argv, "", o, NULL)) != -1) {
		const char *key = NULL;
		switch (ch) {
		case 't': key = "topology"; break;
		case 'H': key = "host"; break;
		case 'p': key = "port"; break;
		case 'm': key = "mtu"; break;
		case 'C': key = "cc"; break;
		case 'l': x.server = 1; break;
		case 'c': peer = optarg; break;
		case 's': x.sid = (uint32_t)num(optarg); break;
		case 'b': x.bytes = num(optarg); break;
		case 'k': x.chunk = num(optarg); break;
		case 'S': x.seed = num(optarg); break;
		case 'r': x.report_ms = (uint32_t)num(optarg); break;
		case 'v': mrcd_log_level = MRCD_LOG_DEBUG; break;
		case 'P': x.progress = 1; x.next_pct = 10; break;
		default: usage(); return 2;
		}
		if (key && mrcd_cfg_set(c, key, optarg, err, sizeof(err))) {
			fprintf(stderr, "mrc-xfer: --%s: %s\n", key, err);
			return 2;
		}
	}
	if (!x.bytes || !x.chunk || x.server == !!peer) {
		usage();
		return 2;
	}
	if (mrcd_cfg_check(c, err, sizeof(err))) {
		fprintf(stderr, "mrc-xfer: %s\n", err);
		return 2;
	}
	if (mrcd_core_init(&x.d, err, sizeof(err))) {
		fprintf(stderr, "mrc-xfer: %s\n", err);
		return 1;
	}
	if (peer) {
		if ((x.d.topo && mrc_topo_host_find(x.d.topo, peer, &x.peer_host)) &&
		    (x.peer_host = (uint32_t)strtoul(peer, NULL, 10)) >= x.d.nhosts) {
			fprintf(stderr, "mrc-xfer: no host '%s' in the topology\n", peer);
			return 2;
		}
	}
	/* MAP_NORESERVE: a 1 GiB buffer costs only the pages written. */
	x.buf = mmap(NULL, x.bytes, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (x.buf == MAP_FAILED) {
		fprintf(stderr, "mrc-xfer: cannot map %" PRIu64 " bytes\n", x.bytes);
		return 1;
	}
	x.nstamps = 100000;
	x.stamps = calloc(x.nstamps, sizeof(uint64_t));
	int rc;
	if (x.server) {
		rc = mrc_mr_reg(x.d.eng, 1, x.buf, x.bytes, MRC_ACCESS_REMOTE_WRITE, &x.key);
		if (!rc)
			rc = mrcd_cm_listen(&x.d, x.sid, on_req, &x);
	} else {
		fill(x.buf, x.bytes, x.seed);
		rc = mrc_mr_reg(x.d.eng, 1, x.buf, x.bytes, MRC_ACCESS_LOCAL_READ, &x.key);
		if (!rc)
			rc = mrc_qp_create(x.d.eng, &(struct mrc_qp_attr){ .pd = 1 }, &x.qpn);
		if (!rc)
			rc = mrcd_qp_bind(&x.d, x.qpn, on_wc, &x);
		struct mrcd_qp_addr me = { .host = x.d.self, .qpn = x.qpn, .psn = 7 };
		if (!rc)
			rc = mrcd_cm_connect(&x.d, x.peer_host, x.sid, &me, on_connected, &x);
	}
	if (rc) {
		fprintf(stderr, "mrc-xfer: setup: %s\n", mrc_strerror(rc));
		return 1;
	}
	fflush(stdout);
	ev_run(x.d.loop, 0);
	mrcd_core_fini(&x.d);
	munmap(x.buf, x.bytes);
	free(x.stamps);
	return x.rc;
}
