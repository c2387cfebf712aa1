/* mrc-xfer: moves data between two hosts of the fabric with the daemon's
 * own core (engine, datapath, connection manager) built in, the way
 * perftest's ib_write_bw exercises an RDMA fabric without an application.
 * One side listens, the other connects and WRITEs N bytes over one or more
 * QPs (each slice's last chunk as WRITE_WITH_IMM); both print a CRC-32C of
 * the buffer so a script can prove every byte arrived, plus goodput, the
 * longest stall and the packets sent per plane.  --pingpong measures the
 * round trip of small WRITE_WITH_IMMs instead.  Used by the
 * fabric integration tests and the benchmarks. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "datapath/datapath.h"
#include "mrc/error.h"
#include "tools/xfer/xfer.h"
#include "topology/topo.h"

struct xfer *xfer_self;

static void usage(void)
{
	fprintf(stderr,
		"usage: mrc-xfer [--topology FILE --host H] --listen  [options]\n"
		"       mrc-xfer [--topology FILE --host H] --connect PEER [options]\n"
		"  --bytes N        bytes to move (K/M/G suffixes); with --pingpong: message size\n"
		"  --qps N          connections (the buffer is split among them; same on both sides)\n"
		"  --pin            single-path mode: each QP stays on one EV (ECMP-like)\n"
		"  --pingpong N     N round trips of a --bytes WRITE_WITH_IMM instead of a stream\n"
		"  --chunk BYTES    WRITE size (default 256K)   --sid S  service id (default 0)\n"
		"  --seed N         data pattern                --port P, --mtu M, --cc nscc|fixed\n"
		"  --report-ms MS   goodput every MS            --progress  print {\"progress\":N}\n"
		"  --key-file FILE  the cluster key (mrcd --genkey; default " MRCD_KEY_DEFAULT ")\n"
		"  --payload-encryption off|aes-gcm  (mrcd.conf's key; both sides alike)\n"
		"  --datapath NAME  udp (default), af_xdp, dpdk, verbs  --datapath-args S  its options\n"
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
		fprintf(stderr, "mrc-xfer: '%s' is not a number\n", s);
		exit(2);
	}
	return v;
}

static int setup_client(struct xfer *x)
{
	uint64_t slice = (x->bytes + x->nqps - 1) / x->nqps;
	for (uint32_t i = 0; i < x->nqps; i++) {
		struct xqp *q = &x->q[i];
		q->off = q->posted = x->pingpong ? 0 : (uint64_t)i * slice;
		q->end = x->pingpong ? x->bytes : (q->off + slice < x->bytes ? q->off + slice : x->bytes);
		int rc = xfer_qp_create(x, &q->qpn);
		if (!rc)
			rc = mrcd_qp_bind(x->d, q->qpn, xfer_on_wc, q);
		struct mrcd_qp_addr me = { .host = mrcd_self_host(x->d), .qpn = q->qpn, .psn = 7 + i,
			.priv = x->key };
		if (!rc)
			rc = mrcd_cm_connect(x->d, x->peer_host, x->sid, &me, xfer_on_connected, q);
		if (rc)
			return rc;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static struct xfer x;
	xfer_self = &x;
	struct mrcd_cfg *c = &x.cfg;
	mrcd_cfg_default(c);
	mrcd_log_level = MRCD_LOG_WARNING;
	x.chunk = 256 << 10;
	x.seed = 1;
	x.nqps = 1;
	const char *peer = NULL;
	static const struct option o[] = {
		{ "topology", 1, 0, 't' }, { "host", 1, 0, 'H' }, { "listen", 0, 0, 'l' },
		{ "connect", 1, 0, 'c' }, { "sid", 1, 0, 's' }, { "bytes", 1, 0, 'b' },
		{ "chunk", 1, 0, 'k' }, { "seed", 1, 0, 'S' }, { "port", 1, 0, 'p' },
		{ "mtu", 1, 0, 'm' }, { "report-ms", 1, 0, 'r' }, { "cc", 1, 0, 'C' },
		{ "verbose", 0, 0, 'v' }, { "progress", 0, 0, 'P' }, { "qps", 1, 0, 'q' },
		{ "pin", 0, 0, 'n' }, { "pingpong", 1, 0, 'g' }, { "key-file", 1, 0, 'K' },
		{ "payload-encryption", 1, 0, 'E' }, { "datapath", 1, 0, 'D' },
		{ "datapath-args", 1, 0, 'A' }, { 0, 0, 0, 0 } };
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
		case 'K': key = "key_file"; break;
		case 'E': key = "payload_encryption"; break;
		case 'D': key = "datapath"; break;
		case 'A': key = "datapath_args"; break;
		case 'l': x.server = 1; break;
		case 'c': peer = optarg; break;
		case 's': x.sid = (uint32_t)num(optarg); break;
		case 'b': x.bytes = num(optarg); break;
		case 'k': x.chunk = num(optarg); break;
		case 'S': x.seed = num(optarg); break;
		case 'r': x.report_ms = (uint32_t)num(optarg); break;
		case 'v': mrcd_log_level = MRCD_LOG_DEBUG; break;
		case 'P': x.progress = 1; x.next_pct = 10; break;
		case 'q': x.nqps = (uint32_t)num(optarg); break;
		case 'n': x.pin = 1; break;
		case 'g': x.pingpong = 1; x.iters = num(optarg); break;
		default: usage(); return 2;
		}
		if (key && mrcd_cfg_set(c, key, optarg, err, sizeof(err))) {
			fprintf(stderr, "mrc-xfer: --%s: %s\n", key, err);
			return 2;
		}
	}
	if (!x.bytes || !x.chunk || x.server == !!peer || !x.nqps || x.nqps > XFER_MAX_QPS ||
	    (x.pingpong && (!x.iters || x.nqps != 1))) {
		usage();
		return 2;
	}
	if (mrcd_cfg_check(c, err, sizeof(err))) {
		fprintf(stderr, "mrc-xfer: %s\n", err);
		return 2;
	}
	if (mrcd_core_new(&x.cfg, &x.d, err, sizeof(err))) {
		fprintf(stderr, "mrc-xfer: %s\n", err);
		return 1;
	}
	if (peer && mrcd_topology(x.d) && mrc_topo_host_lookup(mrcd_topology(x.d), peer, &x.peer_host)) {
		fprintf(stderr, "mrc-xfer: no host '%s' in the topology\n", peer);
		return 2;
	}
	/* MAP_NORESERVE: a 1 GiB buffer costs only the pages written. */
	x.buf = mmap(NULL, x.bytes, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	x.nstamps = 100000;
	x.stamps = calloc(x.nstamps, sizeof(uint64_t));
	x.rtts = calloc(x.iters ? x.iters : 1, sizeof(uint64_t));
	if (x.buf == MAP_FAILED || !x.stamps || !x.rtts) {
		fprintf(stderr, "mrc-xfer: out of memory for %" PRIu64 " bytes\n", x.bytes);
		return 1;
	}
	uint32_t access = x.pingpong ? MRCE_ACCESS_LOCAL_READ | MRCE_ACCESS_REMOTE_WRITE :
		x.server ? MRCE_ACCESS_REMOTE_WRITE : MRCE_ACCESS_LOCAL_READ;
	if (!x.server)
		fill(x.buf, x.bytes, x.seed);
	int rc = mrce_mr_add(mrcd_engine(x.d), 1, x.buf, x.bytes, access, &x.key);
	if (!rc)
		rc = x.server ? mrcd_cm_listen(x.d, x.sid, xfer_on_req, &x) : setup_client(&x);
	if (rc) {
		fprintf(stderr, "mrc-xfer: setup: %s\n", mrc_strerror(rc));
		return 1;
	}
	fflush(stdout);
	ev_run(mrcd_loop(x.d), 0);
	uint64_t sealed, opened, dropped;
	if (!mrcd_aead_counts(x.d, &sealed, &opened, &dropped))
		/* Proof for scripts that the mode was in use, not only asked for. */
		printf("{\"aead\":{\"sealed\":%" PRIu64 ",\"opened\":%" PRIu64
		       ",\"dropped\":%" PRIu64 "}}\n", sealed, opened, dropped);
	/* What the datapath dropped on its own (a full tx ring, a full rx
	 * ring): the losses the transport then had to repair. */
	struct mrc_dp_stats ds;
	mrc_dp_get_stats(mrcd_datapath(x.d), &ds);
	printf("{\"datapath\":{\"name\":\"%s\",\"tx_pkts\":%" PRIu64 ",\"rx_pkts\":%" PRIu64
	       ",\"tx_eagain\":%" PRIu64 ",\"rx_dropped\":%" PRIu64 "}}\n", mrc_dp_name(mrcd_datapath(x.d)),
	       ds.tx_pkts, ds.rx_pkts, ds.tx_eagain, ds.rx_dropped);
	mrcd_core_free(x.d);
	munmap(x.buf, x.bytes);
	free(x.stamps);
	free(x.rtts);
	return x.rc;
}
