/* Kernel UDP/IPv6 datapath: see udp.h. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/udp.h>
#include <net/if.h>
#include <netinet/ip.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/trace.h"
#include "datapath/udp.h"

#ifndef UDP_NO_CHECK6_TX
#define UDP_NO_CHECK6_TX 101   /* linux/udp.h, kernel >= 3.16 */
#define UDP_NO_CHECK6_RX 102
#endif

struct rxpool {
	struct mmsghdr msg[MRC_DP_BATCH];
	struct iovec iov[MRC_DP_BATCH];
	struct sockaddr_in6 from[MRC_DP_BATCH];
	char ctl[MRC_DP_BATCH][CMSG_SPACE(sizeof(int))];
	uint8_t buf[MRC_DP_BATCH][MRC_DP_MAX_DGRAM];
};

struct udp_dp {
	struct mrc_dp base;
	uint32_t n;
	uint16_t port;
	int fd[MRC_DP_MAX_PLANES];
	struct rxpool *rx[MRC_DP_MAX_PLANES];
	struct mrc_dp_stats st;
};

static int sockopt(int fd, int level, int name, int val)
{
	return setsockopt(fd, level, name, &val, sizeof(val)) ? -errno : 0;
}

static int open_plane(const struct mrc_dp_plane *p, uint16_t port, int *out,
		      char *why, size_t whylen)
{
	/* Blocking for send: a full socket buffer (the qdisc is full) makes
	 * sendmmsg wait, which is the backpressure we want; receive uses
	 * MSG_DONTWAIT. */
	int fd = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	int rc = 0;
	const char *what = "";
#define TRY(expr, w) do { if (!rc && (rc = (expr))) what = (w); } while (0)
	TRY(sockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, 1), "IPV6_V6ONLY");
	/* No SO_REUSEADDR (nor SO_REUSEPORT): with it on both sockets Linux
	 * lets a process of any uid bind the same address and port and
	 * receive mrcd's datagrams and send as mrcd (tests/root/hostile.sh). */
	TRY(sockopt(fd, IPPROTO_UDP, UDP_NO_CHECK6_TX, 1), "UDP_NO_CHECK6_TX");
	TRY(sockopt(fd, IPPROTO_UDP, UDP_NO_CHECK6_RX, 1), "UDP_NO_CHECK6_RX");
	TRY(sockopt(fd, IPPROTO_IPV6, IPV6_RECVTCLASS, 1), "IPV6_RECVTCLASS");
	/* ECT(0) on every packet, so switches mark instead of dropping. */
	TRY(sockopt(fd, IPPROTO_IPV6, IPV6_TCLASS, 0x02), "IPV6_TCLASS");
	/* Large buffers absorb a full window of every QP between loop turns;
	 * failure to get them is not fatal (unprivileged, rmem_max). */
	sockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, 8 << 20);
	sockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, 8 << 20);
	if (!rc && p->ifname[0] &&
	    setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, p->ifname, (socklen_t)strlen(p->ifname)))
		rc = -errno, what = "SO_BINDTODEVICE";
	struct sockaddr_in6 sa = { .sin6_family = AF_INET6, .sin6_port = htons(port),
		.sin6_addr = p->local };
	if (!rc && bind(fd, (struct sockaddr *)&sa, sizeof(sa)))
		rc = -errno, what = "bind";
#undef TRY
	if (rc) {
		char a[INET6_ADDRSTRLEN] = "";
		inet_ntop(AF_INET6, &p->local, a, sizeof(a));
		if (why)
			snprintf(why, whylen, "plane socket on %s [%s]:%u: %s: %s",
				 p->ifname[0] ? p->ifname : "(any)", a, port, what,
				 strerror(-rc));
		close(fd);
		return rc;
	}
	*out = fd;
	return 0;
}

/* The kernel writes back only a header's name and control lengths (and
 * flags): the headers are built once, and only what came back is reset,
 * as rebuilding all MRC_DP_BATCH of them per call showed in profiles. */
static void rx_rearm(struct rxpool *r, uint32_t k)
{
	r->msg[k].msg_hdr.msg_namelen = sizeof(r->from[k]);
	r->msg[k].msg_hdr.msg_controllen = sizeof(r->ctl[k]);
}

static struct rxpool *rx_new(void)
{
	struct rxpool *r = calloc(1, sizeof(*r));
	for (uint32_t k = 0; r && k < MRC_DP_BATCH; k++) {
		r->iov[k] = (struct iovec){ r->buf[k], MRC_DP_MAX_DGRAM };
		r->msg[k].msg_hdr = (struct msghdr){ .msg_name = &r->from[k],
			.msg_iov = &r->iov[k], .msg_iovlen = 1, .msg_control = r->ctl[k] };
		rx_rearm(r, k);
	}
	return r;
}

static void udp_close(struct mrc_dp *base);

static int udp_open(struct mrc_dp **out, const struct mrc_dp_cfg *cfg, char *why, size_t whylen)
{
	struct udp_dp *dp = calloc(1, sizeof(*dp));
	if (!dp)
		return -ENOMEM;
	dp->base.ops = &mrc__dp_udp_ops;
	dp->port = cfg->port;
	for (uint32_t i = 0; i < MRC_DP_MAX_PLANES; i++)
		dp->fd[i] = -1;
	for (uint32_t i = 0; i < cfg->nplanes; i++) {
		int rc = open_plane(&cfg->planes[i], cfg->port, &dp->fd[i], why, whylen);
		if (!rc && !(dp->rx[i] = rx_new()))
			rc = -ENOMEM;
		dp->n = i + 1;
		if (rc) {
			udp_close(&dp->base);
			return rc;
		}
	}
	*out = &dp->base;
	return 0;
}

static void udp_close(struct mrc_dp *base)
{
	struct udp_dp *dp = (struct udp_dp *)base;
	for (uint32_t i = 0; i < dp->n; i++) {
		if (dp->fd[i] >= 0)
			close(dp->fd[i]);
		free(dp->rx[i]);
	}
	free(dp);
}

static int udp_fd(const struct mrc_dp *base, uint32_t plane)
{
	const struct udp_dp *dp = (const struct udp_dp *)base;
	return plane < dp->n ? dp->fd[plane] : -EINVAL;
}

/* Sends one plane's share of the batch with a single sendmmsg. */
static int send_plane(struct udp_dp *dp, uint32_t plane, const struct mrc_dp_out *pkts,
		      const uint32_t *idx, uint32_t cnt)
{
	struct mmsghdr m[MRC_DP_BATCH];
	struct sockaddr_in6 to[MRC_DP_BATCH];
	memset(m, 0, sizeof(m[0]) * cnt);
	for (uint32_t k = 0; k < cnt; k++) {
		const struct mrc_dp_out *o = &pkts[idx[k]];
		to[k] = (struct sockaddr_in6){ .sin6_family = AF_INET6,
			.sin6_port = htons(o->dport ? o->dport : dp->port),
			.sin6_addr = o->dst };
		m[k].msg_hdr.msg_name = &to[k];
		m[k].msg_hdr.msg_namelen = sizeof(to[k]);
		m[k].msg_hdr.msg_iov = (struct iovec *)o->iov;
		m[k].msg_hdr.msg_iovlen = o->iovcnt;
	}
	int sent = sendmmsg(dp->fd[plane], m, cnt, 0);
	if (sent < 0) {
		if (errno == EAGAIN || errno == ENOBUFS) {
			dp->st.tx_eagain += cnt;
			return 0;
		}
		dp->st.tx_errs += cnt;
		return -errno;
	}
	for (int k = 0; k < sent; k++)
		dp->st.tx_bytes += m[k].msg_len;
	dp->st.tx_pkts += (uint64_t)sent;
	MRC_TRACE(MRC_TR_D_TX, plane, m[0].msg_len, sent);
	dp->st.tx_eagain += cnt - (uint32_t)sent;
	return sent;
}

static int udp_send(struct mrc_dp *base, const struct mrc_dp_out *pkts, uint32_t n)
{
	struct udp_dp *dp = (struct udp_dp *)base;
	uint32_t idx[MRC_DP_MAX_PLANES][MRC_DP_BATCH], cnt[MRC_DP_MAX_PLANES] = { 0 };
	int total = 0, err = 0;
	for (uint32_t off = 0; off < n; off += MRC_DP_BATCH) {
		uint32_t end = n - off < MRC_DP_BATCH ? n : off + MRC_DP_BATCH;
		memset(cnt, 0, sizeof(cnt));
		for (uint32_t i = off; i < end; i++) {
			uint32_t pl = pkts[i].plane;
			if (pl >= dp->n || pkts[i].iovcnt > 3) {
				dp->st.tx_errs++;
				continue;
			}
			idx[pl][cnt[pl]++] = i;
		}
		for (uint32_t pl = 0; pl < dp->n; pl++) {
			if (!cnt[pl])
				continue;
			int rc = send_plane(dp, pl, pkts, idx[pl], cnt[pl]);
			if (rc < 0)
				err = rc;
			else
				total += rc;
		}
	}
	return total ? total : (err ? err : (n ? -EAGAIN : 0));
}

static int udp_recv(struct mrc_dp *base, uint32_t plane, struct mrc_dp_in *in, uint32_t max)
{
	struct udp_dp *dp = (struct udp_dp *)base;
	if (plane >= dp->n)
		return -EINVAL;
	struct rxpool *r = dp->rx[plane];
	if (max > MRC_DP_BATCH)
		max = MRC_DP_BATCH;
	int got = recvmmsg(dp->fd[plane], r->msg, max, MSG_DONTWAIT, NULL);
	if (got < 0)
		return errno == EAGAIN ? 0 : -errno;
	MRC_TRACE(MRC_TR_D_RX, plane, r->msg[0].msg_len, got);
	int out = 0;
	for (int k = 0; k < got; k++) {
		struct msghdr *h = &r->msg[k].msg_hdr;
		if (h->msg_flags & MSG_TRUNC) {
			dp->st.rx_truncated++;
			continue;
		}
		uint8_t ce = 0;
		for (struct cmsghdr *c = CMSG_FIRSTHDR(h); c; c = CMSG_NXTHDR(h, c))
			if (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_TCLASS) {
				int tc;
				memcpy(&tc, CMSG_DATA(c), sizeof(tc));
				ce = (tc & 3) == 3;
			}
		in[out] = (struct mrc_dp_in){ .buf = r->buf[k], .len = r->msg[k].msg_len,
			.src = r->from[k].sin6_addr, .sport = ntohs(r->from[k].sin6_port),
			.plane = plane, .ecn_ce = ce };
		dp->st.rx_bytes += in[out].len;
		out++;
	}
	/* One past what came back too: the header a failing datagram
	 * stopped at, whatever the kernel left in it. */
	for (uint32_t k = 0; k <= (uint32_t)got && k < max; k++)
		rx_rearm(r, k);
	dp->st.rx_pkts += (uint64_t)out;
	return out;
}

static void udp_get_stats(const struct mrc_dp *base, struct mrc_dp_stats *st)
{
	*st = ((const struct udp_dp *)base)->st;
}

const struct mrc_dp_ops mrc__dp_udp_ops = {
	.name = "udp",
	.open = udp_open,
	.close = udp_close,
	.fd = udp_fd,
	.send = udp_send,
	.recv = udp_recv,
	.get_stats = udp_get_stats,
};
