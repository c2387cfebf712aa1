/* tc (cls_bpf, direct-action) trimmer: the fabric's model of a switch that
 * trims instead of dropping under congestion.
 *
 * Of the packets leaving a port, it trims a given share (trim_permyriad out
 * of 10000) of MRC data packets: UDP to MRC_UDP_PORT whose payload starts
 * with version 2 and an opcode 1..5 and is longer than the 68-byte data
 * header.  Trimming (the contract with transport/wire.h): cut the packet
 * right after the data header, set MRC_F_TRIMMED (0x0008 of the big-endian
 * flags at payload offset 2), fix the IPv6 payload length and UDP length,
 * and leave the UDP checksum alone (it is zero in this transport).
 * Everything else passes untouched.  One IPv6 routing header (an SRH) may
 * sit between IPv6 and UDP.
 */
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "topology/addr.h"

#define ETH_HLEN 14
#define IP6_HLEN 40
#define UDP_HLEN 8
#define MRC_WIRE_VER 2        /* transport/wire.h MRC_WIRE_VERSION */
#define MRC_DATA_HLEN 68      /* transport/wire.h MRC_DATA_HDR_LEN */
#define MRC_FLAGS_LO 3        /* low byte of the flags: holds TRIMMED */
#define MRC_TRIMMED_LO 0x08
#define NEXTHDR_ROUTING 43
#define NEXTHDR_UDP 17

/* Set by the loader before the program is loaded (.rodata). */
volatile const __u32 trim_permyriad = 10000;

SEC("tc")
int mrc_trim(struct __sk_buff *skb)
{
	__u8 nh, rh[2], udp[UDP_HLEN], mrc[4];
	__u32 l4 = ETH_HLEN + IP6_HLEN;

	if (skb->protocol != bpf_htons(0x86DD))
		return TC_ACT_OK;
	if (bpf_skb_load_bytes(skb, ETH_HLEN + 6, &nh, 1))
		return TC_ACT_OK;
	if (nh == NEXTHDR_ROUTING) {
		if (bpf_skb_load_bytes(skb, l4, rh, 2))
			return TC_ACT_OK;
		nh = rh[0];
		l4 += ((__u32)rh[1] + 1) * 8;
	}
	if (nh != NEXTHDR_UDP || bpf_skb_load_bytes(skb, l4, udp, UDP_HLEN))
		return TC_ACT_OK;
	if (((__u32)udp[2] << 8 | udp[3]) != MRC_UDP_PORT)
		return TC_ACT_OK;
	__u32 ulen = (__u32)udp[4] << 8 | udp[5];
	if (ulen <= UDP_HLEN + MRC_DATA_HLEN || skb->len < l4 + ulen)
		return TC_ACT_OK;
	if (bpf_skb_load_bytes(skb, l4 + UDP_HLEN, mrc, 4))
		return TC_ACT_OK;
	if (mrc[0] != MRC_WIRE_VER || mrc[1] < 1 || mrc[1] > 5)
		return TC_ACT_OK;
	if (bpf_get_prandom_u32() % 10000 >= trim_permyriad)
		return TC_ACT_OK;

	__u32 newlen = l4 + UDP_HLEN + MRC_DATA_HLEN;
	/* A packet the kernel cannot cut (e.g. GSO) goes on whole. */
	if (bpf_skb_change_tail(skb, newlen, 0))
		return TC_ACT_OK;
	__be16 plen = bpf_htons((__u16)(newlen - ETH_HLEN - IP6_HLEN));
	__be16 nulen = bpf_htons(UDP_HLEN + MRC_DATA_HLEN);
	__u8 flags = mrc[3] | MRC_TRIMMED_LO;
	bpf_skb_store_bytes(skb, ETH_HLEN + 4, &plen, 2, 0);
	bpf_skb_store_bytes(skb, l4 + 4, &nulen, 2, 0);
	bpf_skb_store_bytes(skb, l4 + UDP_HLEN + MRC_FLAGS_LO, &flags, 1, 0);
	return TC_ACT_OK;
}

char _license[] SEC("license") = "GPL";
