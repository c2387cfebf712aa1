/* The Wireshark dissector (tools/wireshark/mrc.lua) against the project's
 * own encoders: one packet of every type with distinct values in every
 * field, written to a capture (text2pcap, raw IPv6), decoded by tshark
 * with the dissector, and every field compared with what was encoded.
 * Also: a corrupted header and a corrupted payload are flagged, a packet
 * on another UDP port is found by the heuristic, a non-MRC datagram on
 * another port is left alone, and the uSID destination is shown as nodes.
 * Skipped when tshark or text2pcap is missing (scripts/deps.sh installs
 * them).  Seed: MRC_TEST_SEED=<n>; it is printed with every failure. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <errno.h>
#include <cmocka.h>

#include "tests/support/seeded.h"
#include "tests/support/skip.h"
#include "auth/auth.h"
#include "daemon/core/ctrl.h"
#include "transport/crc32c.h"
#include "transport/wire.h"

#define LUA "tools/wireshark/mrc.lua"
#define MAXPKT (48 + MRC_DATA_HDR_LEN + 256 + 28)
#define MAXF 40
/* What the "MRC" profile `make install` ships sets (tools/wireshark/):
 * without it Wireshark calls every zero UDP checksum over IPv6 illegal. */
#define ZERO_CSUM "udp.ignore_ipv6_zero_checksum:TRUE"
#define MAXP 24

struct exp {
	const char *name;
	char val[2 * 256 + 8];
};

struct pkt {
	uint8_t b[MAXPKT];      /* IPv6 + UDP + MRC */
	size_t len;
	struct exp e[MAXF];
	int ne;
};

static struct pkt pk[MAXP];
static int npk;

static void want(struct pkt *p, const char *name, const char *fmt, ...)
{
	assert_true(p->ne < MAXF);
	struct exp *e = &p->e[p->ne++];
	e->name = name;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(e->val, sizeof(e->val), fmt, ap);
	va_end(ap);
}

static void hexs(char *out, const uint8_t *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", b[i]);
}

/* Wraps the MRC datagram already at p->b + 48 (mlen bytes) in IPv6 + UDP:
 * source host src, destination the uSID container usids[] (0-terminated)
 * in the fcbb:bb00::/32 block, UDP ports port -> port, checksum zero as
 * mrc sends it. */
static void wrap(struct pkt *p, size_t mlen, unsigned src, const uint16_t *usids, uint16_t port)
{
	uint8_t *ip = p->b, *udp = p->b + 40;
	memset(p->b, 0, 48);
	ip[0] = 0x60;
	ip[4] = (uint8_t)((8 + mlen) >> 8), ip[5] = (uint8_t)(8 + mlen);
	ip[6] = 17, ip[7] = 64;
	ip[8] = 0xfc, ip[9] = 0xbb, ip[10] = 0xbb, ip[11] = 0x00;
	ip[12] = (uint8_t)((0x8000 + src) >> 8), ip[13] = (uint8_t)(0x8000 + src);
	ip[24] = 0xfc, ip[25] = 0xbb, ip[26] = 0xbb, ip[27] = 0x00;
	for (int i = 0; usids[i]; i++)
		ip[28 + 2 * i] = (uint8_t)(usids[i] >> 8), ip[29 + 2 * i] = (uint8_t)usids[i];
	udp[0] = udp[2] = (uint8_t)(port >> 8), udp[1] = udp[3] = (uint8_t)port;
	udp[4] = (uint8_t)((8 + mlen) >> 8), udp[5] = (uint8_t)(8 + mlen);
	p->len = 48 + mlen;
}

static const uint16_t route4[] = { 0x1100, 0x2101, 0x1103, 0x8007, 0 };  /* p1l0 p1s1 p1l3 h7 */
static const uint16_t route1[] = { 0x8005, 0 };                          /* arrived at h5 */

static struct pkt *next(void)
{
	assert_true(npk < MAXP);
	struct pkt *p = &pk[npk++];
	memset(p, 0, sizeof(*p));
	return p;
}

static uint32_t r32(void) { return (uint32_t)rnd(); }

static void want_route4(struct pkt *p)
{
	want(p, "mrc.route", "p1l0 > p1s1 > p1l3 > h7");
	want(p, "mrc.route.plane", "1");
	want(p, "mrc.route.leaf", "0");
	want(p, "mrc.route.spine", "1");
	want(p, "mrc.route.host", "7");
	want(p, "mrc.src_host", "2");
}

/* A data packet of opcode op with random fields and plen payload bytes. */
static void data_pkt(uint8_t op, uint16_t flags, uint16_t plen, int corrupt)
{
	struct pkt *p = next();
	struct mrc_data_hdr h = {
		.op = op, .flags = flags, .dqpn = r32() & 0xffffff, .psn = r32(), .ev = (uint16_t)(r32() & 0x3ff),
		.plen = plen, .msn = r32(), .rkey = r32(), .off = (uint64_t)(r32() & 0xffff) * 8,
		.ts = rnd(), .mlen = plen ? plen : 0, .imm = 0, .token = rnd(),
	};
	if (op == MRC_OP_WRITE_IMM || op == MRC_OP_SEND_IMM)
		h.imm = r32();
	if (op == MRC_OP_SEND || op == MRC_OP_SEND_IMM)
		h.off = 0, h.flags |= MRC_F_FIRST | MRC_F_LAST;
	if (flags & MRC_F_PB_ACK)
		h.pb_cum_psn = r32(), h.pb_sack = (uint16_t)r32(), h.pb_hold = (uint16_t)r32();
	uint8_t *m = p->b + 48;
	size_t n = mrce_wire_put_data(m, &h);
	for (uint16_t i = 0; i < plen; i++)
		m[n + i] = (uint8_t)rnd();
	/* ENC (docs/wire.md): AEAD seq and tag after the ciphertext, the pcrc
	 * over all three; random bytes stand in for the ciphertext and tag. */
	size_t aead = flags & MRC_F_ENC ? 24 : 0;
	for (size_t i = 0; i < aead; i++)
		m[n + plen + i] = (uint8_t)rnd();
	if (plen) {
		mrce_wire_put_trailer(m + n + plen + aead, m + n, plen + aead);
		n += plen + aead + MRC_TRAILER_LEN;
	}
	if (flags & MRC_F_TRIMMED)
		n = mrce_wire_trim(m, n);
	if (corrupt == 1)
		m[20] ^= 0x10;            /* rkey: hcrc must fail */
	if (corrupt == 2)
		m[MRC_DATA_HDR_LEN + 3] ^= 0x01;   /* payload: pcrc must fail */
	wrap(p, n, 2, route4, 791);
	want_route4(p);
	want(p, "mrc.version", "2");
	want(p, "mrc.opcode", "%u", op);
	want(p, "mrc.flags", "0x%04x", h.flags);
	want(p, "mrc.flags.first", "%d", !!(h.flags & MRC_F_FIRST));
	want(p, "mrc.flags.last", "%d", !!(h.flags & MRC_F_LAST));
	want(p, "mrc.flags.retx", "%d", !!(h.flags & MRC_F_RETX));
	want(p, "mrc.flags.trimmed", "%d", !!(h.flags & MRC_F_TRIMMED));
	want(p, "mrc.flags.pb_ack", "%d", !!(h.flags & MRC_F_PB_ACK));
	want(p, "mrc.flags.pb_ecn", "%d", !!(h.flags & MRC_F_PB_ECN));
	want(p, "mrc.flags.enc", "%d", !!(h.flags & MRC_F_ENC));
	want(p, "mrc.dqpn", "%u", h.dqpn);
	want(p, "mrc.psn", "%u", h.psn);
	want(p, "mrc.ev", "%u", h.ev);
	want(p, "mrc.plen", "%u", h.plen);
	want(p, "mrc.msn", "%u", h.msn);
	if (op == MRC_OP_SEND || op == MRC_OP_SEND_IMM)
		want(p, "mrc.ssn", "%u", h.rkey), want(p, "mrc.rkey", "%s", "");
	else
		want(p, "mrc.rkey", "0x%08x", corrupt == 1 ? h.rkey ^ 0x10000000u : h.rkey),
			want(p, "mrc.ssn", "%s", "");
	want(p, "mrc.off", "%llu", (unsigned long long)h.off);
	want(p, "mrc.ts", "%llu", (unsigned long long)h.ts);
	want(p, "mrc.mlen", "%u", h.mlen);
	want(p, "mrc.imm", "0x%08x", h.imm);
	want(p, "mrc.token", "0x%016llx", (unsigned long long)h.token);
	want(p, "mrc.pb.cum_psn", "%u", h.pb_cum_psn);
	want(p, "mrc.pb.sack", "0x%04x", h.pb_sack);
	want(p, "mrc.pb.hold", "%u", h.pb_hold);
	want(p, "mrc.hcrc.status", "%d", corrupt == 1 ? 0 : 1);
	int whole = plen && !(flags & MRC_F_TRIMMED);
	if (whole) {
		char hx[2 * 256 + 1];
		hexs(hx, m + MRC_DATA_HDR_LEN, plen);
		if (op == MRC_OP_ATOMIC_ADD) {
			uint64_t a = 0;
			for (int i = 0; i < 8; i++)
				a = a << 8 | m[MRC_DATA_HDR_LEN + i];
			want(p, "mrc.addend", "%llu", (unsigned long long)a), want(p, "mrc.payload", "%s", "");
		} else {
			want(p, "mrc.payload", "%s", hx), want(p, "mrc.addend", "%s", "");
		}
		want(p, "mrc.pcrc.status", "%d", corrupt == 2 ? 0 : 1);
		if (aead) {
			uint64_t seq = 0;
			for (int i = 0; i < 8; i++)
				seq = seq << 8 | m[MRC_DATA_HDR_LEN + plen + i];
			hexs(hx, m + MRC_DATA_HDR_LEN + plen + 8, 16);
			want(p, "mrc.enc.seq", "%llu", (unsigned long long)seq);
			want(p, "mrc.enc.tag", "%s", hx);
		}
		want(p, "_expert", "%s", corrupt ? (corrupt == 1 ? "bad_hcrc" : "bad_pcrc") : "");
	} else {
		want(p, "mrc.payload", "%s", "");
		want(p, "mrc.pcrc.status", "%s", "");
	}
}

static void ack_pkt(uint8_t nack)
{
	struct pkt *p = next();
	struct mrc_ack_hdr h = {
		.flags = nack ? 0 : MRC_AF_ECN, .nack = nack, .rnr_timer = nack == MRC_NACK_RNR ? 7 : 0,
		.dqpn = r32() & 0xffffff, .cum_psn = r32(), .trig_psn = r32(), .ev = (uint16_t)(r32() & 0x3ff),
		.ts_echo = rnd(), .token = rnd(),
	};
	h.sack_base = h.cum_psn + (r32() & 0xff);
	int bits = 0;
	for (int i = 0; i < MRC_SACK_BITS; i++)
		if (rnd() % 3 == 0)
			h.sack[i / 8] |= (uint8_t)(1u << (i % 8)), bits++;
	size_t n = mrce_wire_put_ack(p->b + 48, &h);
	wrap(p, n, 2, route4, 791);
	want_route4(p);
	want(p, "mrc.opcode", "16");
	want(p, "mrc.flags.ecn", "%d", !!(h.flags & MRC_AF_ECN));
	want(p, "mrc.dqpn", "%u", h.dqpn);
	want(p, "mrc.ack.cum_psn", "%u", h.cum_psn);
	want(p, "mrc.ev", "%u", h.ev);
	want(p, "mrc.ack.nack", "%u", nack);
	want(p, "mrc.ack.rnr_timer", "%u", h.rnr_timer);
	want(p, "mrc.ack.trig_psn", "%u", h.trig_psn);
	want(p, "mrc.ack.sack_base", "%u", h.sack_base);
	want(p, "mrc.ts_echo", "%llu", (unsigned long long)h.ts_echo);
	want(p, "mrc.token", "0x%016llx", (unsigned long long)h.token);
	char hx[65];
	hexs(hx, h.sack, 32);
	want(p, "mrc.ack.sack", "%s", hx);
	want(p, "mrc.ack.sacked", "%d", bits);
	want(p, "mrc.hcrc.status", "1");
}

static void probe_pkt(uint8_t op, uint16_t port)
{
	struct pkt *p = next();
	struct mrc_probe_hdr h = {
		.op = op, .ev = (uint16_t)(r32() & 0x3ff), .seq = r32(), .ts = rnd(),
		.ts_echo = op == MRC_OP_PROBE_REPLY ? rnd() : 0, .token = rnd(),
	};
	size_t n = mrce_wire_put_probe(p->b + 48, &h);
	wrap(p, n, 4, route1, port);
	want(p, "mrc.route", "h5");
	want(p, "mrc.route.host", "5");
	want(p, "mrc.route.plane", "%s", "");
	want(p, "mrc.src_host", "4");
	want(p, "mrc.opcode", "%u", op);
	want(p, "mrc.probe.seq", "%u", h.seq);
	want(p, "mrc.ev", "%u", h.ev);
	want(p, "mrc.ts", "%llu", (unsigned long long)h.ts);
	want(p, "mrc.ts_echo", "%llu", (unsigned long long)h.ts_echo);
	want(p, "mrc.token", "0x%016llx", (unsigned long long)h.token);
	want(p, "mrc.hcrc.status", "1");
}

/* neps > 0: with the endpoint block of a verbs daemon (docs/wire.md). */
static void ctrl_pkt(const struct mrc_auth *a, uint8_t type, uint32_t neps)
{
	struct pkt *p = next();
	struct mrce_ctrl m = { .type = type, .sid = r32(), .id = rnd(), .qpn = r32() & 0xffffff };
	if (type == MRCE_CTRL_REQ) {
		m.psn = r32(), m.arg = r32(), m.window = 64, m.mtu = 4096;
		for (int i = 0; i < 16; i++)
			m.nonce[i] = (uint8_t)(rnd() | 1);
	} else {
		m.arg = 0x3;          /* PLANES: planes 0 and 1 down */
	}
	m.neps = neps;
	char eps[16 * 9] = "";
	for (uint32_t i = 0; i < neps; i++) {
		m.ep[i] = 2 + (r32() & 0xfffff);
		snprintf(eps + strlen(eps), sizeof(eps) - strlen(eps), "%s%u", i ? "," : "", m.ep[i]);
	}
	struct mrc_auth_ctrl_tx tx;
	assert_int_equal(mrc_auth_ctrl_tx_init(&tx), 0);
	uint64_t stamp = 1700000000000000000ull + (rnd() & 0xffffff);
	size_t len = 0, blen = MRCE_CTRL_BODY + (neps ? 4 + 4 * neps : 0);
	assert_int_equal(mrcd_ctrl_seal_len(a, &tx, NULL, stamp, 3, 6, &m, p->b + 48, &len), 0);
	assert_int_equal(len, MRC_AUTH_CTRL_OVERHEAD + blen);
	wrap(p, len, 3, route4, 791);
	want(p, "mrc.opcode", "48");
	want(p, "mrc.ctrl.src_host", "3");
	want(p, "mrc.ctrl.dst_host", "6");
	want(p, "mrc.ctrl.blen", "%zu", blen);
	if (neps) {
		want(p, "mrc.ctrl.neps", "%u", neps);
		want(p, "mrc.ctrl.ep", "%s", eps);
	}
	want(p, "mrc.ctrl.stamp", "%llu", (unsigned long long)stamp);
	want(p, "mrc.ctrl.src_epoch", "0x%016llx", (unsigned long long)tx.epoch);
	want(p, "mrc.ctrl.dst_tag", "0x%016llx", 0ull);
	want(p, "mrc.ctrl.type", "%u", type);
	want(p, "mrc.ctrl.sid", "%u", m.sid);
	want(p, "mrc.ctrl.id", "0x%016llx", (unsigned long long)m.id);
	want(p, "mrc.ctrl.qpn", "%u", m.qpn);
	want(p, "mrc.ctrl.psn", "%u", m.psn);
	want(p, "mrc.ctrl.arg", "0x%08x", m.arg);
	want(p, "mrc.ctrl.window", "%u", m.window);
	want(p, "mrc.ctrl.mtu", "%u", m.mtu);
	char hx[33];
	hexs(hx, m.nonce, 16);
	want(p, "mrc.ctrl.nonce", "%s", hx);
	char mac[33];
	hexs(mac, p->b + 48 + MRC_AUTH_CTRL_HDR + blen, 16);
	want(p, "mrc.ctrl.mac", "%s", mac);
}

/* Not MRC: a datagram on another port whose first byte is 2 and whose
 * opcode is known, but whose hcrc is wrong: the heuristic must refuse it. */
static void foreign_pkt(void)
{
	struct pkt *p = next();
	uint8_t *m = p->b + 48;
	for (int i = 0; i < 80; i++)
		m[i] = (uint8_t)rnd();
	m[0] = 2, m[1] = MRC_OP_ACK;
	wrap(p, 76, 1, route1, 5353);
	want(p, "mrc.opcode", "%s", "");
}

static char *run(const char *cmd, size_t *len)
{
	FILE *f = popen(cmd, "r");
	assert_non_null(f);
	size_t cap = 1 << 16, n = 0;
	char *out = malloc(cap);
	assert_non_null(out);
	size_t k;
	while ((k = fread(out + n, 1, cap - n - 1, f)) > 0) {
		n += k;
		if (cap - n < 4096) {
			cap *= 2;
			out = realloc(out, cap);
			assert_non_null(out);
		}
	}
	out[n] = 0;
	int st = pclose(f);
	CHECK(st == 0, "`%s` exited with status %d:\n%s", cmd, st, out);
	*len = n;
	return out;
}

static int have(const char *prog)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "command -v %s >/dev/null 2>&1", prog);
	return system(cmd) == 0;
}

static void test_every_field(void **state)
{
	(void)state;
	if (!have("tshark") || !have("text2pcap"))
		MRC_SKIP("tshark or text2pcap not installed (scripts/deps.sh installs tshark)");
	CHECK(access(LUA, R_OK) == 0, "%s not readable (run from the source tree)", LUA);
	static const uint8_t key[MRC_AUTH_KEY_BYTES] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	struct mrc_auth *a = NULL;
	const char *why = NULL;
	assert_int_equal(mrc_auth_key_parse(key, sizeof(key), &a, &why), 0);

	npk = 0;
	data_pkt(MRC_OP_WRITE, MRC_F_FIRST | MRC_F_PB_ACK, 200, 0);
	data_pkt(MRC_OP_WRITE_IMM, MRC_F_LAST | MRC_F_RETX, 64, 0);
	data_pkt(MRC_OP_SEND, MRC_F_PB_ACK | MRC_F_PB_ECN, 33, 0);
	data_pkt(MRC_OP_SEND_IMM, 0, 0, 0);
	data_pkt(MRC_OP_ATOMIC_ADD, MRC_F_FIRST | MRC_F_LAST, 8, 0);
	data_pkt(MRC_OP_WRITE, MRC_F_TRIMMED, 120, 0);
	data_pkt(MRC_OP_WRITE, MRC_F_ENC | MRC_F_FIRST, 77, 0);
	data_pkt(MRC_OP_WRITE, 0, 100, 1);
	data_pkt(MRC_OP_WRITE, 0, 100, 2);
	for (uint8_t nk = 0; nk <= MRC_NACK_MAX; nk++)
		ack_pkt(nk);
	probe_pkt(MRC_OP_PROBE, 791);
	probe_pkt(MRC_OP_PROBE_REPLY, 791);
	probe_pkt(MRC_OP_PROBE, 6000);         /* the heuristic's case */
	ctrl_pkt(a, MRCE_CTRL_REQ, 0);
	ctrl_pkt(a, MRCE_CTRL_PLANES, 0);
	ctrl_pkt(a, MRCE_CTRL_REQ, 2);
	ctrl_pkt(a, MRCE_CTRL_PLANES, 1);
	foreign_pkt();
	mrc_auth_free(a);

	char dir[] = "/tmp/mrc-ws-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char txt[64], pcap[64], cmd[4096];
	snprintf(txt, sizeof(txt), "%s/p.txt", dir);
	snprintf(pcap, sizeof(pcap), "%s/p.pcap", dir);
	FILE *f = fopen(txt, "w");
	assert_non_null(f);
	for (int i = 0; i < npk; i++) {
		for (size_t o = 0; o < pk[i].len; o += 16) {
			fprintf(f, "%06zx", o);
			for (size_t j = o; j < o + 16 && j < pk[i].len; j++)
				fprintf(f, " %02x", pk[i].b[j]);
			fprintf(f, "\n");
		}
	}
	fclose(f);
	snprintf(cmd, sizeof(cmd), "text2pcap -q -l 101 %s %s 2>&1", txt, pcap);
	size_t n;
	free(run(cmd, &n));

	/* Every field any packet names, once, as one tshark column each. */
	const char *cols[128];
	int ncol = 0;
	for (int i = 0; i < npk; i++)
		for (int j = 0; j < pk[i].ne; j++) {
			int k;
			for (k = 0; k < ncol; k++)
				if (!strcmp(cols[k], pk[i].e[j].name))
					break;
			if (k == ncol) {
				assert_true(ncol < 128);
				cols[ncol++] = pk[i].e[j].name;
			}
		}
	int o = snprintf(cmd, sizeof(cmd), "tshark -n -r %s -X lua_script:%s -o %s -T fields "
			 "-E separator='|' -E occurrence=a", pcap, LUA, ZERO_CSUM);
	for (int k = 0; k < ncol; k++) {
		const char *c = !strcmp(cols[k], "_expert") ? "_ws.expert.message" : cols[k];
		o += snprintf(cmd + o, sizeof(cmd) - (size_t)o, " -e %s", c);
		assert_true(o < (int)sizeof(cmd) - 64);
	}
	/* stderr stays the test's: tshark warns there when run as root */
	char *out = run(cmd, &n);

	int line = 0, checked = 0;
	for (char *s = out, *nl; *s && (nl = strchr(s, '\n')); s = nl + 1, line++) {
		*nl = 0;
		CHECK(line < npk, "tshark printed more rows than packets: '%s'", s);
		const char *val[128];
		int nv = 0;
		for (char *c = s;; ) {
			val[nv++] = c;
			char *bar = strchr(c, '|');
			if (!bar)
				break;
			*bar = 0;
			c = bar + 1;
		}
		CHECK(nv == ncol, "packet %d: %d columns, want %d", line + 1, nv, ncol);
		for (int j = 0; j < pk[line].ne; j++) {
			const struct exp *e = &pk[line].e[j];
			int k;
			for (k = 0; strcmp(cols[k], e->name); k++)
				;
			const char *got = val[k];
			if (!strcmp(e->name, "_expert")) {
				/* the expert message names the CRC that failed */
				int bad = strstr(got, "CRC mismatch") != NULL;
				CHECK(bad == (e->val[0] != 0), "packet %d: expert '%s', want %s", line + 1, got,
				      e->val[0] ? e->val : "none");
			} else {
				CHECK(!strcmp(got, e->val), "packet %d (opcode %u): %s = '%s', want '%s'", line + 1,
				      pk[line].b[49], e->name, got, e->val);
			}
			checked++;
		}
	}
	CHECK(line == npk, "tshark printed %d rows for %d packets:\n%s", line, npk, out);
	printf("%d packets, %d fields checked\n", npk, checked);
	free(out);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
}

int main(void)
{
	seed_init("test_wireshark");
	const struct CMUnitTest t[] = {
		cmocka_unit_test_setup(test_every_field, reseed),
	};
	return cmocka_run_group_tests(t, NULL, NULL);
}
