/* Helpers shared by the example programs (header-only, libmrc only). */
#ifndef MRC_EXAMPLES_COMMON_H
#define MRC_EXAMPLES_COMMON_H

#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mrc/mrc.h>

static inline double ex_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static inline void ex_die(const char *what, int err, struct mrc_ctx *ctx)
{
	const char *why = ctx ? mrc_last_error(ctx) : "";
	fprintf(stderr, "%s: %s%s%s\n", what, mrc_strerror(err), *why ? ": " : "", why);
	exit(1);
}
#define EX_CHECK(call, ctx) do { int r_ = (call); if (r_ < 0) ex_die(#call, r_, ctx); } while (0)

/* A seeded pattern: splitmix64 per 8-byte word. */
static inline void ex_fill(void *buf, uint64_t len, uint64_t seed)
{
	uint8_t *b = buf;
	uint64_t x = seed;
	for (uint64_t i = 0; i < len; i += 8) {
		uint64_t z = (x += 0x9e3779b97f4a7c15ull);
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
		z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
		z ^= z >> 31;
		memcpy(b + i, &z, len - i < 8 ? len - i : 8);
	}
}

/* FNV-1a over 64-bit words (and the tail bytes): a content hash that is
 * fast enough for gigabytes. */
static inline uint64_t ex_hash(const void *buf, uint64_t len)
{
	const uint8_t *b = buf;
	uint64_t h = 0xcbf29ce484222325ull, w;
	uint64_t i = 0;
	for (; i + 8 <= len; i += 8) {
		memcpy(&w, b + i, 8);
		h = (h ^ w) * 0x100000001b3ull;
	}
	for (; i < len; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

/* Waits for one completion of qp (timeout_ms in all); exits on error. */
static inline struct mrc_completion ex_get(struct mrc_qp *qp, struct mrc_ctx *ctx, int timeout_ms)
{
	struct mrc_completion c;
	double end = ex_now() + timeout_ms / 1000.0;
	for (;;) {
		int n = mrc_poll_cq(qp, &c, 1);
		if (n < 0)
			ex_die("mrc_poll_cq", n, ctx);
		if (n == 1) {
			if (c.status)
				ex_die(mrc_cqe_op_name(c.op), c.status, NULL);
			return c;
		}
		int left = (int)((end - ex_now()) * 1000);
		if (left <= 0)
			ex_die("waiting for a completion", -ETIMEDOUT, NULL);
		int r = mrc_wait(qp, left);
		if (r && r != -ETIMEDOUT)
			ex_die("mrc_wait", r, ctx);
	}
}

/* Connects qp to a peer: as the server, accepts on sid, having first
 * listened with backlog when backlog > 0 (and said "NAME: serving on
 * service SID", for scripts to wait on); as the client, connects to
 * host:sid, retrying for 10 s while nobody listens.  priv travels to the
 * peer (its peer->priv). */
static inline void ex_pair(struct mrc_ctx *ctx, struct mrc_qp *qp, const char *name, int server,
			   uint32_t backlog, uint32_t host, uint32_t sid, uint32_t priv,
			   struct mrc_qp_addr *peer)
{
	if (server) {
		if (backlog) {
			EX_CHECK(mrc_listen(ctx, sid, backlog), ctx);
			printf("%s: serving on service %u\n", name, sid);
			fflush(stdout);
		}
		EX_CHECK(mrc_accept(qp, sid, priv, 0, peer), ctx);
		return;
	}
	int r;
	for (int i = 0; (r = mrc_connect(qp, host, sid, priv, peer)) == -ECONNREFUSED && i < 100; i++) {
		struct timespec ts = { 0, 100000000 };
		nanosleep(&ts, NULL);
	}
	EX_CHECK(r, ctx);
}

/* A non-negative decimal number, or a host given by index ("7") or by the
 * generated name ("h7"); anything else exits with a clear message (atoi
 * would turn "h7" into host 0, the sender itself). */
static inline uint32_t ex_uint(const char *s, const char *what)
{
	char *end;
	const char *d = strcmp(what, "host") == 0 && s[0] == 'h' ? s + 1 : s;
	errno = 0;
	unsigned long v = *d >= '0' && *d <= '9' ? strtoul(d, &end, 10) : 0;
	if (!(*d >= '0' && *d <= '9') || *end || errno || v > UINT32_MAX) {
		fprintf(stderr, "invalid %s '%s': want a number%s\n", what, s,
			strcmp(what, "host") == 0 ? " (host index, or its name hN)" : "");
		exit(2);
	}
	return (uint32_t)v;
}

/* The role argument(s) after the options: "server" (1) or "client HOST"
 * (0, *host set); -1 for anything else. */
static inline int ex_role(int argc, char **argv, int optind_, uint32_t *host)
{
	if (optind_ < argc && !strcmp(argv[optind_], "server"))
		return 1;
	if (optind_ + 1 < argc && !strcmp(argv[optind_], "client")) {
		*host = ex_uint(argv[optind_ + 1], "host");
		return 0;
	}
	return -1;
}

/* A byte count: decimal digits and an optional K, M or G (powers of
 * 1024); anything else exits with a clear message ("8x" is not 8). */
static inline uint64_t ex_size(const char *s)
{
	char *end;
	errno = 0;
	unsigned long long v = *s >= '0' && *s <= '9' ? strtoull(s, &end, 10) : 0;
	int sh = 0;
	if (*s >= '0' && *s <= '9' && !errno) {
		const char *u = strchr("KMG", toupper((unsigned char)*end));
		if (*end && u) {
			sh = 10 * (int)(u - "KMG" + 1);
			end++;
		}
	}
	if (!(*s >= '0' && *s <= '9') || errno || *end || v > (UINT64_MAX >> sh)) {
		fprintf(stderr, "invalid size '%s': want bytes, optionally with K, M or G\n", s);
		exit(2);
	}
	return (uint64_t)v << sh;
}

#endif
