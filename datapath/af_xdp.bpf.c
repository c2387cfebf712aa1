/* The af_xdp datapath's XDP program (compiled with clang -target bpf,
 * embedded in the binary by af_xdp_prog.c): IPv6/UDP to mrc's port goes to
 * the AF_XDP socket of the receiving queue (XSKMAP), everything else -
 * neighbour discovery, the fabric's control traffic, ssh - to the kernel.
 * No routing header is expected: in uSID mode the path is the destination
 * address, so UDP follows the IPv6 header directly.  "xdp.frags": jumbo
 * frames (MTU 9216) arrive as multi-buffer packets; only the first 62
 * bytes are read, and they are always in the first buffer. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#define ETH_HLEN 14
#define IP6_HLEN 40
#define UDP_HLEN 8
#define NEXTHDR_UDP 17

/* Set by the loader before the program is loaded (.rodata). */
volatile const __u16 mrc_port = 4791;

struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, __u32);
} mrc_xsks SEC(".maps");

SEC("xdp.frags")
int mrc_xdp(struct xdp_md *ctx)
{
	const __u8 *p = (const __u8 *)(long)ctx->data;
	const __u8 *end = (const __u8 *)(long)ctx->data_end;

	if (p + ETH_HLEN + IP6_HLEN + UDP_HLEN > end)
		return XDP_PASS;
	if (p[12] != 0x86 || p[13] != 0xdd || (p[ETH_HLEN] >> 4) != 6 ||
	    p[ETH_HLEN + 6] != NEXTHDR_UDP)
		return XDP_PASS;
	const __u8 *udp = p + ETH_HLEN + IP6_HLEN;
	if (((__u16)udp[2] << 8 | udp[3]) != mrc_port)
		return XDP_PASS;
	/* No socket on this queue: the kernel gets it (the flags' low bits
	 * are the action when the lookup fails). */
	return bpf_redirect_map(&mrc_xsks, ctx->rx_queue_index, XDP_PASS);
}

char _license[] SEC("license") = "GPL";
