/* Ethernet/IPv6/UDP frames: see frame.h.  Written by hand: the three
 * fixed headers are 62 bytes of stores, and the libraries that have them
 * (DPDK's rte_ether/rte_ip, libnet) tie the builder to one provider. */
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>

#include "datapath/frame.h"

#define ETH_IPV6 0x86dd
#define NH_HOPOPTS 0
#define NH_ROUTING 43
#define NH_DSTOPTS 60
#define NH_UDP 17
#define TCLASS_ECT0 0x02
#define HOP_LIMIT 64
#define MAX_EXT_HDRS 8            /* more is not a datagram for us */

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

void mrc__dp_frame_hdr_write(uint8_t *buf, const struct mrc__dp_frame_hdr *h,
			  const struct in6_addr *dst, uint16_t dport, size_t paylen,
			  uint8_t dscp)
{
	uint8_t *e = buf, *ip = buf + 14, *u = ip + 40;
	uint8_t tc = (uint8_t)((dscp & 0x3f) << 2 | TCLASS_ECT0);
	memcpy(e, h->dmac, 6);
	memcpy(e + 6, h->smac, 6);
	put16(e + 12, ETH_IPV6);
	/* version 6, traffic class DSCP + ECT(0), flow label 0 */
	ip[0] = (uint8_t)(0x60 | tc >> 4);
	ip[1] = (uint8_t)(tc << 4);
	ip[2] = ip[3] = 0;
	put16(ip + 4, (uint16_t)(8 + paylen));
	ip[6] = NH_UDP;
	ip[7] = HOP_LIMIT;
	memcpy(ip + 8, &h->src, 16);
	memcpy(ip + 24, dst, 16);
	put16(u, h->sport);
	put16(u + 2, dport ? dport : h->sport);
	put16(u + 4, (uint16_t)(8 + paylen));
	put16(u + 6, 0);   /* no checksum: datapath.h */
}

int mrc__dp_frame_build(uint8_t *buf, size_t cap, const struct mrc__dp_frame_hdr *h,
		     const struct mrc_dp_out *o)
{
	if (o->iovcnt > 3)
		return -EINVAL;
	size_t paylen = 0;
	for (uint32_t i = 0; i < o->iovcnt; i++)
		paylen += o->iov[i].iov_len;
	if (paylen > MRC_DP_MAX_DGRAM || cap < MRC__FRAME_HDR_LEN ||
	    paylen > cap - MRC__FRAME_HDR_LEN)
		return -EMSGSIZE;
	mrc__dp_frame_hdr_write(buf, h, &o->dst, o->dport, paylen, o->dscp);
	uint8_t *p = buf + MRC__FRAME_HDR_LEN;
	for (uint32_t i = 0; i < o->iovcnt; i++) {
		if (o->iov[i].iov_len)
			memcpy(p, o->iov[i].iov_base, o->iov[i].iov_len);
		p += o->iov[i].iov_len;
	}
	return (int)(MRC__FRAME_HDR_LEN + paylen);
}

int mrc__dp_frame_parse(const uint8_t *buf, size_t len, struct mrc__dp_frame_rx *rx)
{
	if (len < 14 || get16(buf + 12) != ETH_IPV6)
		return -EPROTONOSUPPORT;
	const uint8_t *ip = buf + 14;
	size_t left = len - 14;
	if (left < 40 || ip[0] >> 4 != 6)
		return -EBADMSG;
	/* The IPv6 payload length bounds everything after the fixed header;
	 * the frame may be longer (Ethernet padding), never shorter.  0 is a
	 * jumbogram, which no plane carries. */
	size_t plen = get16(ip + 4);
	if (!plen || plen > left - 40)
		return -EBADMSG;
	uint8_t nh = ip[6];
	const uint8_t *p = ip + 40;
	for (int n = 0; nh != NH_UDP; n++) {
		if (n == MAX_EXT_HDRS || (nh != NH_HOPOPTS && nh != NH_ROUTING && nh != NH_DSTOPTS))
			return -EPROTONOSUPPORT;
		if (plen < 8)
			return -EBADMSG;
		size_t el = ((size_t)p[1] + 1) * 8;
		if (el > plen)
			return -EBADMSG;
		/* A routing header with segments left names a later hop. */
		if (nh == NH_ROUTING && p[3])
			return -EPROTONOSUPPORT;
		nh = p[0];
		p += el;
		plen -= el;
	}
	if (plen < 8)
		return -EBADMSG;
	size_t ulen = get16(p + 4);
	if (ulen < 8 || ulen > plen)
		return -EBADMSG;
	rx->payload = p + 8;
	rx->len = ulen - 8;
	memcpy(&rx->src, ip + 8, 16);
	memcpy(&rx->dst, ip + 24, 16);
	rx->sport = get16(p);
	rx->dport = get16(p + 2);
	rx->ecn = (uint8_t)((ip[1] >> 4) & 3);
	return 0;
}
