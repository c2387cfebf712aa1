/* mrc-forge: sends forged MRC packets, for tests/root/forge.sh and
 * hostile.sh only.  It plays an attacker that knows everything visible
 * (addresses, QP numbers from `mrcctl qps`, the wire format) but not the
 * cluster key: tokens and MACs are random, unless --token gives one an
 * on-path observer read off the wire.  Every packet is otherwise well
 * formed (valid CRCs), so a receiver can refuse it only by source, token,
 * tag or MAC.
 *
 *   mrc-forge --dst ADDR [--src ADDR] [--sport P] [--port P] [--count N] [--dev NIC]
 *             [--token HEX] [--psn N] [--imm HEX] KIND QPN [SRC_HOST DST_HOST]
 * KIND: noqp (NOQP NACK naming QPN), ack (ACK to QPN), data (a 64-byte
 * WRITE to QPN), imm (a zero-length WRITE_IMM to QPN carrying --imm),
 * planes (CTRL PLANES: every plane down), req (CTRL REQ to service QPN);
 * the CTRL kinds claim to come from SRC_HOST to DST_HOST; raw (QPN is a
 * datagram in hex, sent as it is: a recorded packet replayed). */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "auth/auth.h"
#include "daemon/core/ctrl.h"
#include "topology/addr.h"
#include "transport/engine.h"

/* Room for any kind, a raw datagram of a full MTU included. */
#define MRC_DP_MAX_DGRAM_FORGE 9216

static uint64_t rnd64(void)
{
	uint64_t v = 0;
	if (getrandom(&v, sizeof(v), 0) != sizeof(v))
		exit(1);
	return v | 1;   /* never 0: a token of 0 is not what a forger would try */
}

/* What the attacker knows beyond the wire format: 0 means random. */
static uint64_t g_token;
static uint32_t g_psn, g_imm;
static int g_psn_set;

static uint64_t token(void) { return g_token ? g_token : rnd64(); }
static uint32_t psn(void) { return g_psn_set ? g_psn : (uint32_t)rnd64() & 0xffffff; }

/* Hex digits to bytes; 0 on anything else. */
static size_t unhex(const char *x, uint8_t *b, size_t max)
{
	size_t n = strlen(x);
	if (n % 2 || n / 2 > max)
		return 0;
	for (size_t i = 0; i < n / 2; i++) {
		unsigned v;
		if (sscanf(x + 2 * i, "%2x", &v) != 1)
			return 0;
		b[i] = (uint8_t)v;
	}
	return n / 2;
}

static size_t build(const char *kind, const char *arg, uint32_t src_host, uint32_t dst_host,
		    uint8_t *b, size_t max)
{
	if (!strcmp(kind, "raw"))
		return unhex(arg, b, max);
	uint32_t qpn = (uint32_t)strtoul(arg, NULL, 0);
	/* Packets as the engine frames them (mrce_pkt_build), fields chosen. */
	if (!strcmp(kind, "noqp") || !strcmp(kind, "ack"))
		return mrce_pkt_build(b, &(struct mrce_pkt_desc){
			.kind = strcmp(kind, "ack") ? MRCE_PKT_NOQP : MRCE_PKT_ACK,
			.dqpn = qpn, .psn = psn(), .token = token() });
	if (!strcmp(kind, "data") || !strcmp(kind, "imm")) {
		uint8_t pay[64];
		memset(pay, 0xee, sizeof(pay));
		uint16_t plen = strcmp(kind, "imm") ? sizeof(pay) : 0;
		return mrce_pkt_build(b, &(struct mrce_pkt_desc){
			.kind = plen ? MRCE_PKT_WRITE : MRCE_PKT_WRITE_IMM, .dqpn = qpn,
			.psn = psn(), .plen = plen, .imm = g_imm, .token = token(),
			.payload = pay });
	}
	struct mrce_ctrl m = { .type = MRCE_CTRL_PLANES, .arg = 0xffff };
	if (!strcmp(kind, "req")) {
		m = (struct mrce_ctrl){ .type = MRCE_CTRL_REQ, .id = rnd64(), .sid = qpn,
			.qpn = 1, .psn = 1, .window = 256, .mtu = 4096 };
		uint64_t n[2] = { rnd64(), rnd64() };
		memcpy(m.nonce, n, sizeof(m.nonce));
	} else if (strcmp(kind, "planes")) {
		return 0;
	}
	/* The envelope (the engine's CTRL codec) with a random MAC. */
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	memset(b, 0, MRCD_CTRL_LEN);
	mrce_ctrl_env_put(b, &(struct mrce_ctrl_env){ .src_host = src_host,
		.dst_host = dst_host, .blen = MRCE_CTRL_BODY,
		.stamp = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec });
	mrce_ctrl_encode(b + MRCE_CTRL_ENV_HDR, &m);
	uint64_t mac[2] = { rnd64(), rnd64() };
	memcpy(b + MRCE_CTRL_ENV_HDR + MRCE_CTRL_BODY, mac, sizeof(mac));
	return MRCD_CTRL_LEN;
}

int main(int argc, char **argv)
{
	static const struct option o[] = { { "dst", 1, 0, 'd' }, { "src", 1, 0, 's' },
		{ "sport", 1, 0, 'S' }, { "port", 1, 0, 'p' }, { "count", 1, 0, 'n' },
		{ "dev", 1, 0, 'D' }, { "token", 1, 0, 't' }, { "psn", 1, 0, 'P' },
		{ "imm", 1, 0, 'i' }, { 0, 0, 0, 0 } };
	const char *dev = NULL;
	struct sockaddr_in6 to = { .sin6_family = AF_INET6, .sin6_port = htons(MRC_UDP_PORT) };
	struct sockaddr_in6 from = { .sin6_family = AF_INET6 };
	int have_dst = 0, bind_it = 0, c;
	long count = 1;
	while ((c = getopt_long(argc, argv, "", o, NULL)) != -1) {
		switch (c) {
		case 'd': have_dst = inet_pton(AF_INET6, optarg, &to.sin6_addr) == 1; break;
		case 's': bind_it = inet_pton(AF_INET6, optarg, &from.sin6_addr) == 1 ? 1 : -1; break;
		case 'S': from.sin6_port = htons((uint16_t)atoi(optarg)); bind_it |= 2; break;
		case 'p': to.sin6_port = htons((uint16_t)atoi(optarg)); break;
		case 'n': count = atol(optarg); break;
		case 'D': dev = optarg; break;
		case 't': g_token = strtoull(optarg, NULL, 16); break;
		case 'P': g_psn = (uint32_t)strtoul(optarg, NULL, 0) & 0xffffff; g_psn_set = 1; break;
		case 'i': g_imm = (uint32_t)strtoul(optarg, NULL, 16); break;
		default: return 2;
		}
	}
	if (!have_dst || bind_it < 0 || argc - optind < 2 || count < 1) {
		fprintf(stderr, "usage: mrc-forge --dst ADDR [--src ADDR] [--sport P] [--port P] "
			"[--count N] [--dev NIC] [--token HEX] [--psn N] [--imm HEX] "
			"noqp|ack|data|imm|planes|req QPN [SRC_HOST DST_HOST] | raw HEX\n");
		return 2;
	}
	const char *kind = argv[optind];
	uint32_t sh = argc - optind > 2 ? (uint32_t)atoi(argv[optind + 2]) : 0;
	uint32_t dh = argc - optind > 3 ? (uint32_t)atoi(argv[optind + 3]) : 0;
	int fd = socket(AF_INET6, SOCK_DGRAM, 0);
	/* --dev: out of a plane NIC, as the daemon sends (SO_BINDTODEVICE). */
	if (fd < 0 || (dev && setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, dev, (socklen_t)strlen(dev))) ||
	    (bind_it && bind(fd, (struct sockaddr *)&from, sizeof(from)))) {
		perror("mrc-forge: socket/bind");
		return 1;
	}
	uint8_t b[MRC_DP_MAX_DGRAM_FORGE];
	for (long i = 0; i < count; i++) {
		size_t n = build(kind, argv[optind + 1], sh, dh, b, sizeof(b));
		if (!n) {
			fprintf(stderr, "mrc-forge: unknown kind '%s' or bad hex\n", kind);
			return 2;
		}
		if (sendto(fd, b, n, 0, (struct sockaddr *)&to, sizeof(to)) != (ssize_t)n) {
			perror("mrc-forge: sendto");
			return 1;
		}
	}
	close(fd);
	return 0;
}
