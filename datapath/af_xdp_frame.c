/* Ethernet/IPv6/UDP headers of the af_xdp datapath's frames: see
 * af_xdp.h.  Written by hand because the frame is three fixed headers
 * built in place in a UMEM frame; no library builds packets into caller
 * memory without an allocation per packet. */
#include <errno.h>
#include <string.h>

#include "datapath/af_xdp.h"

#define ETH_P_IPV6_HI 0x86
#define ETH_P_IPV6_LO 0xdd
#define NEXTHDR_UDP 17
#define ECT0 0x02
#define HOP_LIMIT 64

static void put16(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

int mrc__xdp_hdr_build(uint8_t *f, const struct mrc__xdp_addrs *a,
		       const struct in6_addr *dst, uint16_t dport, size_t plen)
{
	if (plen > 0xffff - 8)
		return -EMSGSIZE;
	uint8_t *ip = f + MRC__XDP_ETH_HLEN, *udp = ip + 40;
	memcpy(f, a->dst_mac, 6);
	memcpy(f + 6, a->src_mac, 6);
	f[12] = ETH_P_IPV6_HI;
	f[13] = ETH_P_IPV6_LO;
	/* version 6, traffic class ECT(0), flow label 0 */
	ip[0] = 0x60 | (ECT0 >> 4);
	ip[1] = (uint8_t)((ECT0 & 0x0f) << 4);
	ip[2] = ip[3] = 0;
	put16(ip + 4, (uint32_t)(plen + 8));
	ip[6] = NEXTHDR_UDP;
	ip[7] = HOP_LIMIT;
	memcpy(ip + 8, &a->src, 16);
	memcpy(ip + 24, dst, 16);
	put16(udp, a->sport);
	put16(udp + 2, dport);
	put16(udp + 4, (uint32_t)(plen + 8));
	udp[6] = udp[7] = 0;
	return 0;
}

int mrc__xdp_parse(const uint8_t *f, size_t len, uint16_t port, struct mrc__xdp_pkt *p)
{
	if (len < MRC__XDP_ETH_HLEN + 40)
		return len >= MRC__XDP_ETH_HLEN &&
		       (f[12] != ETH_P_IPV6_HI || f[13] != ETH_P_IPV6_LO) ? -EPROTO : -EBADMSG;
	if (f[12] != ETH_P_IPV6_HI || f[13] != ETH_P_IPV6_LO)
		return -EPROTO;
	const uint8_t *ip = f + MRC__XDP_ETH_HLEN;
	if (ip[0] >> 4 != 6)
		return -EBADMSG;
	if (ip[6] != NEXTHDR_UDP)
		return -EPROTO;
	/* The IPv6 payload may be shorter than the frame (Ethernet padding)
	 * but never longer; a payload length of 0 (a jumbogram) is not ours. */
	size_t iplen = get16(ip + 4), avail = len - MRC__XDP_ETH_HLEN - 40;
	if (iplen < 8 || iplen > avail)
		return -EBADMSG;
	const uint8_t *udp = ip + 40;
	size_t ulen = get16(udp + 4);
	if (ulen < 8 || ulen > iplen)
		return -EBADMSG;
	if (get16(udp + 2) != port)
		return -EPROTO;
	uint8_t tc = (uint8_t)((ip[0] & 0x0f) << 4 | ip[1] >> 4);
	p->off = MRC__XDP_HDR_LEN;
	p->len = ulen - 8;
	memcpy(&p->src, ip + 8, 16);
	p->sport = get16(udp);
	p->ecn_ce = (tc & 3) == 3;
	return 0;
}
