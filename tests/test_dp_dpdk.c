/* The dpdk datapath: Ethernet/IPv6/UDP frames built as kernel UDP would
 * send them and parsed defensively (datapath/frame.c), the EAL command
 * line and plane devices made from datapath_args (datapath/dpdk_args.c),
 * and, where DPDK is built in, a send/receive round trip through DPDK on
 * ring ports (a ring port loops its tx queue to its rx queue). */
#include <arpa/inet.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "datapath/datapath.h"
#include "datapath/dpdk_args.h"
#include "datapath/frame.h"
#include "tests/support/skip.h"

static const struct mrc__dp_frame_hdr fh = {
	.dmac = { 0x02, 0, 0, 0, 0, 0x01 }, .smac = { 0x02, 0, 0, 0, 0, 0x02 },
	.src = { { { 0xfc, 0xbb, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1 } } },
	.sport = 4791,
};

static struct mrc_dp_out out_of(uint8_t *hdr, size_t hl, uint8_t *pay, size_t pl, uint16_t dport)
{
	struct mrc_dp_out o = { .plane = 0, .dport = dport, .iovcnt = 2,
		.iov = { { hdr, hl }, { pay, pl } } };
	inet_pton(AF_INET6, "fcbb:0:700::", &o.dst);
	return o;
}

/* The frame of a single-piece datagram pay[0..pl) into f. */
static int one_piece(uint8_t *f, size_t cap, uint8_t *pay, size_t pl)
{
	struct mrc_dp_out o = out_of(pay, pl, pay, 0, 0);
	o.iovcnt = 1;
	return mrc__dp_frame_build(f, cap, &fh, &o);
}

static void frame_build_wire_format(void **state)
{
	(void)state;
	uint8_t hdr[10], pay[300], f[512];
	for (size_t i = 0; i < sizeof(pay); i++)
		pay[i] = (uint8_t)i;
	memset(hdr, 0xa5, sizeof(hdr));
	struct mrc_dp_out o = out_of(hdr, sizeof(hdr), pay, sizeof(pay), 0);
	int n = mrc__dp_frame_build(f, sizeof(f), &fh, &o);
	assert_int_equal(n, MRC__FRAME_HDR_LEN + 310);
	assert_memory_equal(f, fh.dmac, 6);
	assert_memory_equal(f + 6, fh.smac, 6);
	assert_int_equal(f[12] << 8 | f[13], 0x86dd);
	const uint8_t *ip = f + 14, *u = ip + 40;
	assert_int_equal(ip[0] >> 4, 6);
	assert_int_equal((ip[0] & 0xf) << 4 | ip[1] >> 4, 0x02);   /* ECT(0) */
	assert_int_equal(ip[4] << 8 | ip[5], 8 + 310);
	assert_int_equal(ip[6], 17);
	assert_int_equal(ip[7], 64);
	assert_memory_equal(ip + 8, &fh.src, 16);
	assert_memory_equal(ip + 24, &o.dst, 16);
	assert_int_equal(u[0] << 8 | u[1], 4791);
	assert_int_equal(u[2] << 8 | u[3], 4791);   /* dport 0: the own port */
	assert_int_equal(u[4] << 8 | u[5], 8 + 310);
	assert_int_equal(u[6] | u[7], 0);           /* no UDP checksum */
	assert_memory_equal(u + 8, hdr, sizeof(hdr));
	assert_memory_equal(u + 8 + sizeof(hdr), pay, sizeof(pay));
	/* and back */
	struct mrc__dp_frame_rx rx;
	assert_int_equal(mrc__dp_frame_parse(f, (size_t)n, &rx), 0);
	assert_int_equal(rx.len, 310);
	assert_ptr_equal(rx.payload, u + 8);
	assert_memory_equal(&rx.src, &fh.src, 16);
	assert_memory_equal(&rx.dst, &o.dst, 16);
	assert_int_equal(rx.sport, 4791);
	assert_int_equal(rx.dport, 4791);
	assert_int_equal(rx.ecn, 2);
	/* A traffic class: the DSCP above ECT(0), the flow label still 0
	 * (af_xdp and dpdk frames; docs/wire.md "Traffic classes"). */
	o.dscp = 46;
	assert_int_equal(mrc__dp_frame_build(f, sizeof(f), &fh, &o), n);
	assert_int_equal(ip[0] >> 4, 6);
	assert_int_equal((ip[0] & 0xf) << 4 | ip[1] >> 4, 46 << 2 | 0x02);
	assert_int_equal((ip[1] & 0xf) | ip[2] | ip[3], 0);
	assert_int_equal(mrc__dp_frame_parse(f, (size_t)n, &rx), 0);
	assert_int_equal(rx.ecn, 2);
	o.dscp = 0;
	/* an explicit destination port */
	o.dport = 9999;
	assert_int_equal(mrc__dp_frame_build(f, sizeof(f), &fh, &o), n);
	assert_int_equal(mrc__dp_frame_parse(f, (size_t)n, &rx), 0);
	assert_int_equal(rx.dport, 9999);
	/* Ethernet padding after the datagram is not payload */
	memset(f + n, 0, 20);
	assert_int_equal(mrc__dp_frame_parse(f, (size_t)n + 20, &rx), 0);
	assert_int_equal(rx.len, 310);
}

static void frame_build_limits(void **state)
{
	(void)state;
	static uint8_t big[MRC_DP_MAX_DGRAM + 1], f[MRC_DP_MAX_DGRAM + 128];
	struct mrc_dp_out o = out_of(big, MRC_DP_MAX_DGRAM, big, 0, 0);
	o.iovcnt = 1;
	assert_int_equal(mrc__dp_frame_build(f, sizeof(f), &fh, &o),
			 MRC__FRAME_HDR_LEN + MRC_DP_MAX_DGRAM);
	o.iov[0].iov_len = MRC_DP_MAX_DGRAM + 1;
	assert_int_equal(mrc__dp_frame_build(f, sizeof(f), &fh, &o), -EMSGSIZE);
	/* the buffer, not the datagram, too small: nothing past cap written */
	o.iov[0].iov_len = 100;
	memset(f, 0x5a, sizeof(f));
	assert_int_equal(mrc__dp_frame_build(f, MRC__FRAME_HDR_LEN + 99, &fh, &o), -EMSGSIZE);
	assert_int_equal(f[MRC__FRAME_HDR_LEN + 99], 0x5a);
	assert_int_equal(mrc__dp_frame_build(f, 10, &fh, &o), -EMSGSIZE);
	o.iovcnt = 4;
	assert_int_equal(mrc__dp_frame_build(f, sizeof(f), &fh, &o), -EINVAL);
}

static void frame_parse_hostile(void **state)
{
	(void)state;
	uint8_t pay[64] = { 1 }, f[256], g[256];
	int n = one_piece(f, sizeof(f), pay, sizeof(pay));
	struct mrc__dp_frame_rx rx;
	/* every truncation is refused, none reads past what it was given
	 * (the sanitizer build checks that: each copy is exactly len bytes) */
	for (int len = 0; len < n; len++) {
		uint8_t *t = malloc((size_t)len + 1);
		memcpy(t, f, (size_t)len);
		assert_int_not_equal(mrc__dp_frame_parse(t, (size_t)len, &rx), 0);
		free(t);
	}
	/* not IPv6 */
	memcpy(g, f, (size_t)n);
	g[12] = 0x08; g[13] = 0x00;
	assert_int_equal(mrc__dp_frame_parse(g, (size_t)n, &rx), -EPROTONOSUPPORT);
	/* IPv6 version wrong */
	memcpy(g, f, (size_t)n);
	g[14] = 0x40;
	assert_int_equal(mrc__dp_frame_parse(g, (size_t)n, &rx), -EBADMSG);
	/* not UDP (ICMPv6: neighbour discovery) */
	memcpy(g, f, (size_t)n);
	g[14 + 6] = 58;
	assert_int_equal(mrc__dp_frame_parse(g, (size_t)n, &rx), -EPROTONOSUPPORT);
	/* jumbogram / payload length beyond the frame */
	memcpy(g, f, (size_t)n);
	g[18] = g[19] = 0;
	assert_int_equal(mrc__dp_frame_parse(g, (size_t)n, &rx), -EBADMSG);
	memcpy(g, f, (size_t)n);
	g[19]++;
	assert_int_equal(mrc__dp_frame_parse(g, (size_t)n, &rx), -EBADMSG);
	/* UDP length beyond the IPv6 payload, and below its own header */
	memcpy(g, f, (size_t)n);
	g[54 + 5]++;
	assert_int_equal(mrc__dp_frame_parse(g, (size_t)n, &rx), -EBADMSG);
	g[54 + 4] = 0; g[54 + 5] = 7;
	assert_int_equal(mrc__dp_frame_parse(g, (size_t)n, &rx), -EBADMSG);
}

/* f with an extension header (type nh, 8 bytes, byte 3 = b3) before UDP. */
static int with_ext(uint8_t *g, const uint8_t *f, int n, uint8_t nh, uint8_t b3)
{
	memcpy(g, f, 54);
	memcpy(g + 62, f + 54, (size_t)n - 54);
	uint8_t *e = g + 54;
	memset(e, 0, 8);
	e[0] = 17;
	e[3] = b3;
	g[14 + 6] = nh;
	int pl = (g[18] << 8 | g[19]) + 8;
	g[18] = (uint8_t)(pl >> 8);
	g[19] = (uint8_t)pl;
	return n + 8;
}

static void frame_parse_ext_headers(void **state)
{
	(void)state;
	uint8_t pay[40] = { 7 }, f[256], g[256];
	int n = one_piece(f, sizeof(f), pay, sizeof(pay));
	struct mrc__dp_frame_rx rx;
	/* a destination options header is walked */
	int m = with_ext(g, f, n, 60, 0);
	assert_int_equal(mrc__dp_frame_parse(g, (size_t)m, &rx), 0);
	assert_int_equal(rx.len, 40);
	assert_int_equal(rx.payload[0], 7);
	/* a routing header with no segments left is done with; one with
	 * segments left names a later hop */
	m = with_ext(g, f, n, 43, 0);
	assert_int_equal(mrc__dp_frame_parse(g, (size_t)m, &rx), 0);
	m = with_ext(g, f, n, 43, 1);
	assert_int_equal(mrc__dp_frame_parse(g, (size_t)m, &rx), -EPROTONOSUPPORT);
	/* a fragment header is not walked */
	m = with_ext(g, f, n, 44, 0);
	assert_int_equal(mrc__dp_frame_parse(g, (size_t)m, &rx), -EPROTONOSUPPORT);
	/* an extension header longer than the payload */
	m = with_ext(g, f, n, 60, 0);
	g[54 + 1] = 200;
	assert_int_equal(mrc__dp_frame_parse(g, (size_t)m, &rx), -EBADMSG);
	/* a loop of extension headers ends */
	m = with_ext(g, f, n, 0, 0);
	g[54] = 0;   /* next header: hop-by-hop again, then UDP bytes as one */
	assert_int_not_equal(mrc__dp_frame_parse(g, (size_t)m, &rx), 0);
}

static int has(const struct mrc__dp_dpdk_args *a, const char *w)
{
	for (int i = 0; i < a->argc; i++)
		if (!strcmp(a->argv[i], w))
			return 1;
	return 0;
}

static void args_default_eal(void **state)
{
	(void)state;
	static struct mrc__dp_dpdk_args a;
	char why[256];
	assert_int_equal(mrc__dp_dpdk_args_parse(&a, NULL, "0-1", why, sizeof(why)), 0);
	const char *want[] = { "mrc", "--no-huge", "--no-shconf", "--no-pci", "-m", "256",
			       "--lcores=0@(0-1)", "--no-telemetry", "--log-level=warning" };
	assert_int_equal(a.argc, 9);
	for (int i = 0; i < 9; i++)
		assert_string_equal(a.argv[i], want[i]);
	assert_null(a.argv[a.argc]);
	assert_string_equal(a.pmd, "af_packet");
	assert_int_equal(a.dmac_set, 0);
	assert_int_equal(a.idle_us, MRC__DPDK_IDLE_US);
	char dev[256];
	assert_int_equal(mrc__dp_dpdk_vdev(dev, sizeof(dev), &a, 3, "h0-p0l0"), 0);
	assert_string_equal(dev, "net_af_packet3,iface=h0-p0l0,qpairs=1,blocksz=12288,"
			    "framesz=12288,framecnt=1024,qdisc_bypass=0");
	assert_int_equal(mrc__dp_dpdk_vdev(dev, 20, &a, 3, "h0-p0l0"), -ENAMETOOLONG);
}

static void args_own_and_eal_words(void **state)
{
	(void)state;
	static struct mrc__dp_dpdk_args a;
	char why[256], dev[256];
	/* EAL words replace the default set; ours are not passed on */
	assert_int_equal(mrc__dp_dpdk_args_parse(&a, "  pmd=af_xdp -a 0000:3b:00.0\t-m 1024 "
					      "devargs=busy_budget=0 dmac1=02:aa:bb:cc:dd:0F "
					      "--log-level=debug", "3", why, sizeof(why)), 0);
	const char *want[] = { "mrc", "-a", "0000:3b:00.0", "-m", "1024", "--log-level=debug",
			       "--lcores=0@(3)", "--no-telemetry" };
	assert_int_equal(a.argc, 8);
	for (int i = 0; i < 8; i++)
		assert_string_equal(a.argv[i], want[i]);
	assert_false(has(&a, "--no-huge"));
	assert_string_equal(a.pmd, "af_xdp");
	assert_int_equal(a.dmac_set, 1u << 1);
	const uint8_t mac[6] = { 0x02, 0xaa, 0xbb, 0xcc, 0xdd, 0x0f };
	assert_memory_equal(a.dmac[1], mac, 6);
	assert_int_equal(mrc__dp_dpdk_vdev(dev, sizeof(dev), &a, 0, "eth1"), 0);
	assert_string_equal(dev, "net_af_xdp0,iface=eth1,start_queue=0,queue_count=1,busy_budget=0");
	/* lcores given: not added */
	assert_int_equal(mrc__dp_dpdk_args_parse(&a, "-l 2 pmd=ring", "0-7", why, sizeof(why)), 0);
	assert_false(has(&a, "--lcores=0@(0-7)"));
	assert_true(has(&a, "-l"));
	assert_int_equal(mrc__dp_dpdk_vdev(dev, sizeof(dev), &a, 5, ""), 0);
	assert_string_equal(dev, "net_ring5");
	/* idle_us is ours (0: spin), not an EAL word */
	assert_int_equal(mrc__dp_dpdk_args_parse(&a, "idle_us=0 -m 64", "0", why, sizeof(why)), 0);
	assert_int_equal(a.idle_us, 0);
	assert_false(has(&a, "idle_us=0"));
	assert_true(has(&a, "-m"));
	assert_int_equal(mrc__dp_dpdk_args_parse(&a, "idle_us=10000", "0", why, sizeof(why)), 0);
	assert_int_equal(a.idle_us, 10000);
	/* wait=: auto by default, socket or poll */
	assert_int_equal(a.wait, MRC__DPDK_WAIT_AUTO);
	assert_int_equal(mrc__dp_dpdk_args_parse(&a, "wait=poll", "0", why, sizeof(why)), 0);
	assert_int_equal(a.wait, MRC__DPDK_WAIT_POLL);
	assert_int_equal(mrc__dp_dpdk_args_parse(&a, "wait=socket", "0", why, sizeof(why)), 0);
	assert_int_equal(a.wait, MRC__DPDK_WAIT_SOCKET);
	assert_false(has(&a, "wait=socket"));
	/* pmd=none: the EAL's own ports are the planes */
	assert_int_equal(mrc__dp_dpdk_args_parse(&a, "pmd=none", "0", why, sizeof(why)), 0);
	assert_int_equal(mrc__dp_dpdk_vdev(dev, sizeof(dev), &a, 0, "x"), -ENOTSUP);
	/* bad words are named */
	const char *bad[] = { "pmd=e1000", "dmac0=02:00", "dmac16=02:00:00:00:00:01",
			      "dmac0=02:00:00:00:00:01x", "devargs=", "dmacx=02:00:00:00:00:01",
			      "idle_us=", "idle_us=x", "idle_us=10001", "idle_us=-1",
			      "wait=", "wait=spin", "wait=pollx" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why[0] = 0;
		assert_int_equal(mrc__dp_dpdk_args_parse(&a, bad[i], "0", why, sizeof(why)), -EINVAL);
		assert_non_null(strstr(why, bad[i]));
	}
	/* too many words */
	char many[1024] = "";
	for (int i = 0; i < MRC__DPDK_MAX_ARGS + 2; i++)
		strcat(many, " -v");
	assert_int_equal(mrc__dp_dpdk_args_parse(&a, many, "0", why, sizeof(why)), -EINVAL);
	/* this thread's CPUs, as an EAL list */
	char cpus[256];
	assert_int_equal(mrc__dp_dpdk_cpus(cpus, sizeof(cpus)), 0);
	assert_true(cpus[0] >= '0' && cpus[0] <= '9');
}

static int elapsed_s(const struct timespec *t0)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int)(t.tv_sec - t0->tv_sec);
}

/* Up to n datagrams from plane 0 of d within 5 s into in; how many. */
static int recv_some(struct mrc_dp *d, struct mrc_dp_in *in, int n)
{
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	int got = 0;
	while (!got && elapsed_s(&t0) < 5) {
		got = mrc_dp_recv(d, 0, in, (uint32_t)n);
		if (got < 0)
			return got;
	}
	return got;
}

#define CHILD_CHECK(c, code) do { if (!(c)) { fprintf(stderr, "line %d: %s\n", __LINE__, #c); _exit(code); } } while (0)

/* The child of dpdk_af_packet_interop, in a network namespace of its own
 * (no name: nothing to collide with): a veth pair va-vb, dpdk (af_packet)
 * on va, kernel UDP (the udp provider) on vb, each the other's next hop. */
static void af_packet_child(void)
{
	CHILD_CHECK(unshare(CLONE_NEWNET) == 0, 10);
	CHILD_CHECK(system("ip link set lo up && ip link add va type veth peer name vb && "
			   "ip link set va up && ip link set vb up && "
			   "ip -6 addr add fe80::1/64 dev va nodad && ip -6 addr add fe80::2/64 dev vb nodad && "
			   "ip -6 addr add fcbb:0:700::/128 dev vb nodad && "
			   "ip -6 route add fcbb:0:700::/128 via fe80::2 dev va && "
			   "ip -6 route add fcbb:0:100::/128 via fe80::1 dev vb") == 0, 11);
	struct mrc_dp_plane pa = { .ifname = "va" }, pb = { .ifname = "vb" };
	inet_pton(AF_INET6, "fcbb:0:100::", &pa.local);
	inet_pton(AF_INET6, "fcbb:0:700::", &pb.local);
	struct mrc_dp_cfg ca = { .planes = &pa, .nplanes = 1, .port = 4791 }, cb = ca;
	cb.planes = &pb;
	struct mrc_dp *a, *b;
	char why[512] = "";
	int rc = mrc_dp_open(&b, "udp", &cb, why, sizeof(why));
	CHILD_CHECK(rc == 0, 12);
	rc = mrc_dp_open(&a, "dpdk", &ca, why, sizeof(why));
	if (rc)
		fprintf(stderr, "dpdk open: %s\n", why);
	CHILD_CHECK(rc == 0, 13);
	/* dpdk -> kernel UDP: the kernel takes DPDK's frames (checksum 0) */
	static uint8_t pay[1400];   /* the veth MTU is 1500 */
	for (size_t i = 0; i < sizeof(pay); i++)
		pay[i] = (uint8_t)(i * 7);
	struct mrc_dp_out o = { .plane = 0, .dst = pb.local, .iovcnt = 1, .iov = { { pay, sizeof(pay) } } };
	CHILD_CHECK(mrc_dp_send(a, &o, 1) == 1, 14);
	struct mrc_dp_in in[8];
	CHILD_CHECK(recv_some(b, in, 8) == 1, 15);
	CHILD_CHECK(in[0].len == sizeof(pay) && !memcmp(in[0].buf, pay, sizeof(pay)), 16);
	CHILD_CHECK(in[0].sport == 4791 && !memcmp(&in[0].src, &pa.local, 16), 17);
	/* kernel UDP -> dpdk: DPDK parses the kernel's frames */
	o.dst = pa.local;
	pay[0] ^= 0xff;
	CHILD_CHECK(mrc_dp_send(b, &o, 1) == 1, 18);
	CHILD_CHECK(recv_some(a, in, 8) == 1, 19);
	CHILD_CHECK(in[0].len == sizeof(pay) && !memcmp(in[0].buf, pay, sizeof(pay)), 20);
	CHILD_CHECK(in[0].sport == 4791 && !memcmp(&in[0].src, &pb.local, 16), 21);
	/* wait=auto on af_packet: the driver's socket is the plane's fd,
	 * readable exactly while its rx ring holds a frame */
	int fd = mrc_dp_fd(a, 0);
	CHILD_CHECK(fd >= 0, 22);
	struct pollfd pf = { .fd = fd, .events = POLLIN };
	for (int i = 0; i < 100 && poll(&pf, 1, 0) != 0; i++)
		CHILD_CHECK(mrc_dp_recv(a, 0, in, 8) >= 0, 23);   /* leftovers (ND) */
	CHILD_CHECK(poll(&pf, 1, 0) == 0, 24);
	pay[0] ^= 0xff;
	CHILD_CHECK(mrc_dp_send(b, &o, 1) == 1, 25);
	CHILD_CHECK(poll(&pf, 1, 5000) == 1 && (pf.revents & POLLIN), 26);
	CHILD_CHECK(mrc_dp_recv(a, 0, in, 8) == 1 && in[0].buf[0] == pay[0], 27);
	/* more frames than the rx ring holds, none received meanwhile: the
	 * kernel drops the rest, and rx_dropped says so (DPDK 22.11's
	 * af_packet driver counts nothing; it is read from the socket).  A
	 * ring of 16 frames (devargs' framecnt, the last one given wins), so
	 * that one batch overflows it and nothing else can (the backlog of
	 * the veth holds 1000). */
	mrc_dp_close(a);
	rc = mrc_dp_open(&a, "dpdk", &(struct mrc_dp_cfg){ .planes = &pa, .nplanes = 1,
		.port = 4791, .args = "devargs=framecnt=16" }, why, sizeof(why));
	if (rc)
		fprintf(stderr, "dpdk open (framecnt=16): %s\n", why);
	CHILD_CHECK(rc == 0, 28);
	struct mrc_dp_stats st;
	mrc_dp_get_stats(a, &st);
	CHILD_CHECK(st.rx_dropped == 0, 29);
	struct mrc_dp_out f[MRC_DP_BATCH];
	for (int i = 0; i < MRC_DP_BATCH; i++)
		f[i] = o;
	CHILD_CHECK(mrc_dp_send(b, f, MRC_DP_BATCH) == MRC_DP_BATCH, 30);
	int got = 0;
	for (int n; (n = mrc_dp_recv(a, 0, in, 8)) > 0;)
		got += n;
	mrc_dp_get_stats(a, &st);
	if (!(got <= 16 && got + (int)st.rx_dropped >= MRC_DP_BATCH))
		fprintf(stderr, "%d frames into a ring of 16: received %d, rx_dropped %llu\n",
			MRC_DP_BATCH, got, (unsigned long long)st.rx_dropped);
	CHILD_CHECK(got <= 16 && got + (int)st.rx_dropped >= MRC_DP_BATCH, 31);
	mrc_dp_get_stats(a, &st);   /* the kernel's count resets as it is read: summed */
	CHILD_CHECK(got + (int)st.rx_dropped >= MRC_DP_BATCH, 32);
	pf.fd = mrc_dp_fd(a, 0);
	CHILD_CHECK(pf.fd >= 0, 34);
	/* the NIC going down sets the socket's error (POLLERR): a receive
	 * clears it, or an event loop waiting on the fd would spin; back up,
	 * frames flow again */
	CHILD_CHECK(system("ip link set va down") == 0, 40);
	CHILD_CHECK(poll(&pf, 1, 5000) == 1 && (pf.revents & POLLERR), 41);
	for (int i = 0; i < 100 && poll(&pf, 1, 0) != 0; i++)   /* frames left: taken */
		CHILD_CHECK(mrc_dp_recv(a, 0, in, 8) >= 0, 42);
	CHILD_CHECK(poll(&pf, 1, 0) == 0, 43);
	/* (down took the link-local address and the route away: given back) */
	CHILD_CHECK(system("ip link set va up && ip -6 addr replace fe80::1/64 dev va nodad && "
			   "ip -6 route replace fcbb:0:700::/128 via fe80::2 dev va") == 0, 44);
	pay[0] ^= 0xff;
	int back = 0;
	for (int i = 0; i < 50 && !back; i++) {
		/* the kernel re-resolves its neighbour after the link flap: a
		 * datagram may need a retry; bounded, each waiting for a frame */
		CHILD_CHECK(mrc_dp_send(b, &o, 1) == 1, 45);
		poll(&pf, 1, 100);
		back = mrc_dp_recv(a, 0, in, 8);
	}
	CHILD_CHECK(back >= 1 && in[0].buf[0] == pay[0], 46);
	mrc_dp_close(a);
	/* wait=poll: no descriptor, mrcd polls */
	rc = mrc_dp_open(&a, "dpdk", &(struct mrc_dp_cfg){ .planes = &pa, .nplanes = 1,
		.port = 4791, .args = "wait=poll" }, why, sizeof(why));
	if (rc)
		fprintf(stderr, "dpdk open (wait=poll): %s\n", why);
	CHILD_CHECK(rc == 0 && mrc_dp_fd(a, 0) == -EOPNOTSUPP, 33);
	mrc_dp_close(a);
	mrc_dp_close(b);
	_exit(0);
}

/* dpdk on an af_packet port talks to kernel UDP both ways, through a real
 * NIC (veth) and next-hop resolution.  Runs first: the EAL starts in the
 * child, which has a network namespace of its own (root only). */
static void dpdk_af_packet_interop(void **state)
{
	(void)state;
	if (!mrc_dp_find("dpdk")->fd)
		MRC_SKIP("the dpdk datapath is not built in (no libdpdk-dev)");
	if (geteuid())
		MRC_SKIP("needs root (a network namespace with a veth pair)");
	fflush(NULL);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (!pid)
		af_packet_child();
	int st = 0;
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (waitpid(pid, &st, WNOHANG) == 0) {
		if (elapsed_s(&t0) > 30) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			fail_msg("af_packet child still running after 30 s");
		}
		struct timespec ts = { 0, 10000000 };
		nanosleep(&ts, NULL);   /* the child's exit, polled with a deadline */
	}
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

/* Two planes on ring ports, each looping back: what is sent on a plane is
 * received on it as a frame a peer would have sent this host. */
static void dpdk_ring_roundtrip(void **state)
{
	(void)state;
	const struct mrc_dp_ops *ops = mrc_dp_find("dpdk");
	assert_non_null(ops);
	if (!ops->fd)
		MRC_SKIP("the dpdk datapath is not built in (no libdpdk-dev)");
	struct mrc_dp_plane pl[2] = { { .ifname = "" }, { .ifname = "" } };
	inet_pton(AF_INET6, "fcbb:0:100::", &pl[0].local);
	pl[1].local = pl[0].local;
	struct mrc_dp_cfg c = { .planes = pl, .nplanes = 2, .port = 4791,
		.args = "pmd=ring --no-huge --no-shconf --no-pci -m 128" };
	struct mrc_dp *d;
	char why[512] = "";
	int rc = mrc_dp_open(&d, "dpdk", &c, why, sizeof(why));
	if (rc)
		fail_msg("open: %s (%d)", why, rc);
	assert_int_equal(mrc_dp_fd(d, 0), -EOPNOTSUPP);   /* poll mode */
	enum { N = 100 };
	static uint8_t hdr[N][16], pay[N][2000];
	struct mrc_dp_out o[N];
	for (int i = 0; i < N; i++) {
		memset(hdr[i], i, sizeof(hdr[i]));
		memset(pay[i], 0x80 ^ i, sizeof(pay[i]));
		o[i] = (struct mrc_dp_out){ .plane = (uint32_t)(i & 1), .dst = pl[0].local,
			.iovcnt = 2, .iov = { { hdr[i], 16 }, { pay[i], 1000 + (size_t)i } } };
	}
	/* one not for this host and one to another port: dropped at receive */
	o[N - 2].dst.s6_addr[15] ^= 1;
	o[N - 1].dport = 4792;
	assert_int_equal(mrc_dp_send(d, o, N), N);
	/* the received buffers stay valid while the plane is not received
	 * from again: check every one, polled with a deadline */
	int got[2] = { 0, 0 };
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (got[0] + got[1] < N - 2) {
		clock_gettime(CLOCK_MONOTONIC, &t);
		assert_true(t.tv_sec - t0.tv_sec < 5);
		for (uint32_t p = 0; p < 2; p++) {
			struct mrc_dp_in in[MRC_DP_BATCH];
			int n = mrc_dp_recv(d, p, in, MRC_DP_BATCH);
			assert_true(n >= 0);
			for (int k = 0; k < n; k++) {
				int i = 2 * got[p]++ + (int)p;
				assert_int_equal(in[k].plane, p);
				assert_int_equal(in[k].len, 16 + 1000 + (size_t)i);
				assert_int_equal(in[k].buf[0], i);
				assert_int_equal(in[k].buf[16], 0x80 ^ i);
				assert_int_equal(in[k].buf[in[k].len - 1], 0x80 ^ i);
				assert_int_equal(in[k].sport, 4791);
				assert_memory_equal(&in[k].src, &pl[0].local, 16);
				assert_int_equal(in[k].ecn_ce, 0);   /* sent ECT(0) */
			}
		}
	}
	struct mrc_dp_stats st;
	mrc_dp_get_stats(d, &st);
	assert_int_equal(st.tx_pkts, N);
	assert_int_equal(st.rx_pkts, N - 2);
	/* a plane that is not there, a datagram too big */
	o[0].plane = 2;
	assert_int_equal(mrc_dp_send(d, o, 1), -EAGAIN);
	mrc_dp_get_stats(d, &st);
	assert_int_equal(st.tx_errs, 1);
	assert_int_equal(mrc_dp_recv(d, 2, NULL, 1), -EINVAL);
	mrc_dp_close(d);
	/* the EAL stays up: a second open in the same process works */
	c.nplanes = 1;
	assert_int_equal(mrc_dp_open(&d, "dpdk", &c, why, sizeof(why)), 0);
	assert_int_equal(mrc_dp_send(d, o + 2, 1), 1);
	mrc_dp_close(d);
	/* wait=socket where there is no socket to wait on: refused, named */
	c.args = "pmd=ring wait=socket";
	why[0] = 0;
	assert_int_equal(mrc_dp_open(&d, "dpdk", &c, why, sizeof(why)), -EOPNOTSUPP);
	assert_non_null(strstr(why, "wait=socket"));
	/* a NIC that is not there is named */
	snprintf(pl[0].ifname, sizeof(pl[0].ifname), "mrc-nonic0");
	c.args = NULL;
	why[0] = 0;
	assert_int_equal(mrc_dp_open(&d, "dpdk", &c, why, sizeof(why)), -ENODEV);
	assert_non_null(strstr(why, "mrc-nonic0"));
}

int main(void)
{
	const struct CMUnitTest t[] = {
		cmocka_unit_test(frame_build_wire_format),
		cmocka_unit_test(frame_build_limits),
		cmocka_unit_test(frame_parse_hostile),
		cmocka_unit_test(frame_parse_ext_headers),
		cmocka_unit_test(args_default_eal),
		cmocka_unit_test(args_own_and_eal_words),
		cmocka_unit_test(dpdk_af_packet_interop),
		cmocka_unit_test(dpdk_ring_roundtrip),
	};
	return cmocka_run_group_tests(t, NULL, NULL);
}
