/* Kernel UDP/IPv6 datapath: see udp.h. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <linux/udp.h>
#include <net/if.h>
#include <netinet/ip.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/trace.h"
#include "datapath/udp.h"

#ifndef UDP_NO_CHECK6_TX
#define UDP_NO_CHECK6_TX 101   /* linux/udp.h, kernel >= 3.16 */
#define UDP_NO_CHECK6_RX 102
#endif
#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103        /* linux/udp.h, kernel >= 4.18 */
#endif
#ifndef UDP_GRO
#define UDP_GRO 104            /* linux/udp.h, kernel >= 5.0 */
#endif
#ifndef SOL_UDP
#define SOL_UDP 17
#endif

/* GSO (datapath_args gso=on): consecutive datagrams of a batch to one
 * destination with one size leave as one sendmsg with UDP_SEGMENT, so the
 * kernel's stack (route lookup, skb, qdisc, loopback or driver) is walked
 * once per run instead of once per datagram; the receiver still gets
 * ordinary datagrams (the kernel segments before its socket).  At most
 * 64 segments (older kernels' UDP_MAX_SEGMENTS) and 64 KiB per send. */
#define GSO_MAX_SEGS 64
#define GSO_MAX_BYTES 65000

/* GRO (datapath_args gro=on, the default): the kernel hands the socket a
 * run of same-size datagrams of one flow and traffic class as one buffer
 * of up to 64 KiB with its segment size (the UDP_GRO cmsg): a sender's
 * UDP_SEGMENT run on loopback is never split at all, and a NIC's GRO
 * coalesces what arrives.  recv splits it back into datagrams, so the
 * caller sees what it saw without GRO.  Every buffer must then hold 64
 * KiB (a shorter one truncates a coalesced run).  A GRO plane keeps
 * MRC_DP_BATCH of them (4 MiB of address space; pages are touched only as
 * far as datagrams reach), not fewer: where nothing coalesces (a sender
 * without gso, datagrams of many flows) one recvmmsg must still take as
 * many datagrams as before, as mrcd reads a full batch as congestion
 * (rx_plane) and a shorter batch as "socket drained". */
#define GRO_SLOTS MRC_DP_BATCH
#define GRO_BUF 65536

struct rxpool {
	uint32_t nslots;
	/* Datagrams received but not yet handed up (GRO: a buffer may hold
	 * more than the caller's max): message next, byte off within it. */
	uint32_t got, next, off;
	struct mmsghdr msg[MRC_DP_BATCH];
	struct iovec iov[MRC_DP_BATCH];
	struct sockaddr_in6 from[MRC_DP_BATCH];
	union {
		char buf[CMSG_SPACE(sizeof(int)) * 2];   /* TCLASS, UDP_GRO */
		struct cmsghdr align;
	} ctl[MRC_DP_BATCH];
	uint8_t buf[];
};

struct udp_dp {
	struct mrc_dp base;
	uint32_t n;
	uint16_t port;
	int fd[MRC_DP_MAX_PLANES];
	/* urgent_dscp (udp.h): the urgent socket, both's epoll set, its pool */
	int ufd[MRC_DP_MAX_PLANES], efd[MRC_DP_MAX_PLANES];
	struct rxpool *urx[MRC_DP_MAX_PLANES];
	uint8_t gso[MRC_DP_MAX_PLANES];   /* 1: UDP_SEGMENT runs on this plane */
	uint8_t gro[MRC_DP_MAX_PLANES];   /* 1: UDP_GRO on this plane's socket */
	struct rxpool *rx[MRC_DP_MAX_PLANES];
	struct mrc_dp_stats st;
};

static int sockopt(int fd, int level, int name, int val)
{
	return setsockopt(fd, level, name, &val, sizeof(val)) ? -errno : 0;
}

/* Whether ifname is a veth port: the emulated fabric's links (mrc-fabric),
 * which carry a UDP_SEGMENT run into the next namespace whole, so its
 * per-packet fault rules (nftables drop PCT, the trimming eBPF program)
 * would meet a run as one packet.  Everywhere else a run is segmented
 * before anything counts packets: by the NIC (USO), by the kernel before
 * a driver without it, or never on loopback, where the receiver takes
 * it whole (GRO) or the kernel segments it before the socket. */
static int is_veth(int fd, const char *ifname)
{
	struct ethtool_drvinfo di = { .cmd = ETHTOOL_GDRVINFO };
	struct ifreq ifr;
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	ifr.ifr_data = (void *)&di;
	return ifname[0] && !ioctl(fd, SIOCETHTOOL, &ifr) && !strcmp(di.driver, "veth");
}

static int open_plane(const struct mrc_dp_plane *p, uint16_t port, int gso_opt, int gro_opt,
		      int reuseport, int *out, uint8_t *gso_out, uint8_t *gro_out, char *why, size_t whylen)
{
	/* Blocking for send: a full socket buffer (the qdisc is full) makes
	 * sendmmsg wait, which is the backpressure we want; receive uses
	 * MSG_DONTWAIT. */
	int fd = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	int gso = gso_opt == OPT_AUTO ? !is_veth(fd, p->ifname) : gso_opt == OPT_ON;
	int rc = 0;
	const char *what = "";
#define TRY(expr, w) do { if (!rc && (rc = (expr))) what = (w); } while (0)
	TRY(sockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, 1), "IPV6_V6ONLY");
	/* No SO_REUSEADDR (nor SO_REUSEPORT): with it on both sockets Linux
	 * lets a process of any uid bind the same address and port and
	 * receive mrcd's datagrams and send as mrcd (tests/root/hostile.sh).
	 * The urgent queue's SO_REUSEPORT (1: the group's first socket, the
	 * port checked free first; 2: joins it) admits only mrcd's own uid
	 * (docs/security.md); if refused, the plane keeps one socket. */
	if (reuseport == 1 && !rc && (rc = mrc__dp_udp_port_free(p, port)))
		what = "bind";   /* in use: as without the urgent queue */
	if (reuseport && !rc)
		sockopt(fd, SOL_SOCKET, SO_REUSEPORT, 1);
	/* The packet's own CRC makes the UDP checksum redundant, but the
	 * kernel refuses UDP_SEGMENT without it (offloaded or free on
	 * loopback). */
	if (!gso)
		TRY(sockopt(fd, IPPROTO_UDP, UDP_NO_CHECK6_TX, 1), "UDP_NO_CHECK6_TX");
	TRY(sockopt(fd, IPPROTO_UDP, UDP_NO_CHECK6_RX, 1), "UDP_NO_CHECK6_RX");
	TRY(sockopt(fd, IPPROTO_IPV6, IPV6_RECVTCLASS, 1), "IPV6_RECVTCLASS");
	/* ECT(0) on every packet, so switches mark instead of dropping. */
	TRY(sockopt(fd, IPPROTO_IPV6, IPV6_TCLASS, 0x02), "IPV6_TCLASS");
	/* A kernel without UDP_GRO (before 5.0) is not an error: the plane
	 * receives one datagram per buffer as before (counted). */
	*gro_out = 0;
	if (!rc && gro_opt == OPT_ON)
		*gro_out = !sockopt(fd, IPPROTO_UDP, UDP_GRO, 1);
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
	*gso_out = (uint8_t)gso;
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

static struct rxpool *rx_new(int gro)
{
	uint32_t ns = gro ? GRO_SLOTS : MRC_DP_BATCH, len = gro ? GRO_BUF : MRC_DP_MAX_DGRAM;
	struct rxpool *r = calloc(1, sizeof(*r) + (size_t)ns * len);
	if (!r)
		return NULL;
	r->nslots = ns;
	for (uint32_t k = 0; k < ns; k++) {
		r->iov[k] = (struct iovec){ r->buf + (size_t)k * len, len };
		r->msg[k].msg_hdr = (struct msghdr){ .msg_name = &r->from[k],
			.msg_iov = &r->iov[k], .msg_iovlen = 1, .msg_control = r->ctl[k].buf };
		rx_rearm(r, k);
	}
	return r;
}

static void udp_close(struct mrc_dp *base);

/* The plane's urgent socket, steered and watched with the first (udp.h);
 * where the kernel refuses any of it the plane keeps its one socket. */
static void urgent_open(struct udp_dp *dp, const struct mrc_dp_cfg *cfg, uint32_t i, int gso, int gro)
{
	uint8_t g, r;
	int ufd = -1;
	if (open_plane(&cfg->planes[i], cfg->port, gso, gro, 2, &ufd, &g, &r, NULL, 0) ||
	    mrc__dp_udp_steer(dp->fd[i], cfg->urgent_dscp) ||
	    (dp->efd[i] = mrc__dp_udp_epoll(dp->fd[i], ufd)) < 0 || !(dp->urx[i] = rx_new(r))) {
		if (ufd >= 0)
			close(ufd);
		if (dp->efd[i] >= 0)
			close(dp->efd[i]);
		dp->efd[i] = -1;
		dp->st.rx_urgent_fallbacks++;
		return;
	}
	dp->ufd[i] = ufd;
}

static int udp_open(struct mrc_dp **out, const struct mrc_dp_cfg *cfg, char *why, size_t whylen)
{
	struct udp_dp *dp = calloc(1, sizeof(*dp));
	if (!dp)
		return -ENOMEM;
	dp->base.ops = &mrc__dp_udp_ops;
	dp->port = cfg->port;
	for (uint32_t i = 0; i < MRC_DP_MAX_PLANES; i++)
		dp->fd[i] = dp->ufd[i] = dp->efd[i] = -1;
	int gso, gro, prc = mrc__dp_udp_args(cfg->args, &gso, &gro, why, whylen);
	if (prc) {
		free(dp);
		return prc;
	}
	for (uint32_t i = 0; i < cfg->nplanes; i++) {
		int urgent = (cfg->urgent_dscp & 0x3f) != 0;
		int rc = open_plane(&cfg->planes[i], cfg->port, gso, gro, urgent, &dp->fd[i],
				    &dp->gso[i], &dp->gro[i], why, whylen);
		if (!rc && urgent)
			urgent_open(dp, cfg, i, gso, gro);
		if (!rc && gro == OPT_ON && !dp->gro[i])
			dp->st.rx_gro_fallbacks++;
		if (!rc && !(dp->rx[i] = rx_new(dp->gro[i])))
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
		if (dp->ufd[i] >= 0)
			close(dp->ufd[i]);
		if (dp->efd[i] >= 0)
			close(dp->efd[i]);
		free(dp->rx[i]);
		free(dp->urx[i]);
	}
	free(dp);
}

static int udp_fd(const struct mrc_dp *base, uint32_t plane)
{
	const struct udp_dp *dp = (const struct udp_dp *)base;
	if (plane >= dp->n)
		return -EINVAL;
	return dp->efd[plane] >= 0 ? dp->efd[plane] : dp->fd[plane];
}

static size_t out_len(const struct mrc_dp_out *o)
{
	size_t n = 0;
	for (uint32_t i = 0; i < o->iovcnt; i++)
		n += o->iov[i].iov_len;
	return n;
}

static int same_dest(const struct mrc_dp_out *a, const struct mrc_dp_out *b)
{
	return a->dport == b->dport && (a->dscp & 0x3f) == (b->dscp & 0x3f) &&
	       !memcmp(&a->dst, &b->dst, sizeof(a->dst));
}

/* Appends one cmsg to h's control buffer (msg_control set, large
 * enough: send_plane's ctl). */
static void put_cmsg(struct msghdr *h, int level, int type, const void *v, size_t n)
{
	struct cmsghdr *c = (struct cmsghdr *)((char *)h->msg_control + h->msg_controllen);
	c->cmsg_level = level;
	c->cmsg_type = type;
	c->cmsg_len = CMSG_LEN(n);
	memcpy(CMSG_DATA(c), v, n);
	h->msg_controllen += CMSG_SPACE(n);
}

/* A packet of a class (DSCP) other than 0 says so in an IPV6_TCLASS cmsg,
 * with the socket's ECT(0): one socket per plane carries every class. */
static void put_tclass(struct msghdr *h, uint8_t dscp)
{
	int tc = (dscp & 0x3f) << 2 | 0x02;
	if (dscp & 0x3f)
		put_cmsg(h, IPPROTO_IPV6, IPV6_TCLASS, &tc, sizeof(tc));
}

/* The kernel cannot segment here (no UDP_SEGMENT, or the path's MTU is
 * below a datagram): one datagram per message from now on. */
static void gso_off(struct udp_dp *dp, uint32_t plane)
{
	dp->gso[plane] = 0;
	dp->st.tx_gso_fallbacks++;
	sockopt(dp->fd[plane], IPPROTO_UDP, UDP_NO_CHECK6_TX, 1);
}

/* Sends one plane's share of the batch with a single sendmmsg; with GSO,
 * each run of datagrams to one destination with one size is one message
 * (in posting order: runs never reorder datagrams). */
static int send_plane(struct udp_dp *dp, uint32_t plane, const struct mrc_dp_out *pkts,
		      const uint32_t *idx, uint32_t cnt)
{
	struct mmsghdr m[MRC_DP_BATCH];
	struct sockaddr_in6 to[MRC_DP_BATCH];
	struct iovec iov[MRC_DP_BATCH * 3];
	uint32_t segs[MRC_DP_BATCH];
	union {
		char buf[CMSG_SPACE(sizeof(uint16_t)) + CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} ctl[MRC_DP_BATCH];
	int gso = dp->gso[plane];
	uint32_t nm = 0, ni = 0;
	memset(m, 0, sizeof(m[0]) * cnt);
	for (uint32_t k = 0; k < cnt; nm++) {
		const struct mrc_dp_out *o = &pkts[idx[k]];
		to[nm] = (struct sockaddr_in6){ .sin6_family = AF_INET6,
			.sin6_port = htons(o->dport ? o->dport : dp->port),
			.sin6_addr = o->dst };
		struct msghdr *h = &m[nm].msg_hdr;
		h->msg_name = &to[nm];
		h->msg_namelen = sizeof(to[nm]);
		h->msg_control = ctl[nm].buf;
		put_tclass(h, o->dscp);
		if (!h->msg_controllen)
			h->msg_control = NULL;
		if (!gso) {
			h->msg_iov = (struct iovec *)o->iov;
			h->msg_iovlen = o->iovcnt;
			segs[nm] = 1;
			k++;
			continue;
		}
		size_t len = out_len(o), total = 0;
		uint32_t first = ni, n = 0;
		do {
			const struct mrc_dp_out *x = &pkts[idx[k]];
			memcpy(&iov[ni], x->iov, x->iovcnt * sizeof(iov[0]));
			ni += x->iovcnt;
			total += len;
			n++;
			k++;
		} while (k < cnt && n < GSO_MAX_SEGS && total + len <= GSO_MAX_BYTES &&
			 same_dest(o, &pkts[idx[k]]) && out_len(&pkts[idx[k]]) == len);
		h->msg_iov = &iov[first];
		h->msg_iovlen = ni - first;
		segs[nm] = n;
		if (n > 1) {
			uint16_t sz = (uint16_t)len;
			h->msg_control = ctl[nm].buf;
			put_cmsg(h, SOL_UDP, UDP_SEGMENT, &sz, sizeof(sz));
		}
	}
	int sent = sendmmsg(dp->fd[plane], m, nm, 0);
	if (sent < 0 && gso && (errno == EINVAL || errno == EIO || errno == ENOPROTOOPT ||
				errno == EMSGSIZE)) {
		gso_off(dp, plane);
		return send_plane(dp, plane, pkts, idx, cnt);
	}
	if (sent < 0) {
		if (errno == EAGAIN || errno == ENOBUFS) {
			dp->st.tx_eagain += cnt;
			return 0;
		}
		dp->st.tx_errs += cnt;
		return -errno;
	}
	uint32_t pk = 0;
	for (int k = 0; k < sent; k++) {
		dp->st.tx_bytes += m[k].msg_len;
		pk += segs[k];
		if (segs[k] > 1)
			dp->st.tx_gso_segs += segs[k];
	}
	dp->st.tx_pkts += pk;
	MRC_TRACE(MRC_TR_D_TX, plane, m[0].msg_len, (int)pk);
	dp->st.tx_eagain += cnt - pk;
	return (int)pk;
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

/* The traffic class (its ECN bits) and GRO segment size of message k; a
 * coalesced buffer's segments share both (the kernel coalesces only
 * datagrams of one flow whose traffic class matches). */
static void rx_meta(struct msghdr *h, uint8_t *ce, uint32_t *seg)
{
	*ce = 0;
	*seg = 0;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(h); c; c = CMSG_NXTHDR(h, c)) {
		int v;
		if (c->cmsg_len < CMSG_LEN(sizeof(v)))
			continue;
		memcpy(&v, CMSG_DATA(c), sizeof(v));
		if (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_TCLASS)
			*ce = (v & 3) == 3;
		else if (c->cmsg_level == SOL_UDP && c->cmsg_type == UDP_GRO && v > 0)
			*seg = (uint32_t)v;
	}
}

/* Hands up to max datagrams of what the last recvmmsg got, from message
 * r->next at byte r->off on: a GRO buffer one segment at a time (the last
 * may be short), each as if it had come alone. */
static int rx_drain(struct udp_dp *dp, uint32_t plane, struct rxpool *r, struct mrc_dp_in *in,
		    uint32_t max)
{
	uint32_t out = 0;
	while (out < max && r->next < r->got) {
		uint32_t k = r->next;
		struct msghdr *h = &r->msg[k].msg_hdr;
		uint32_t len = r->msg[k].msg_len, seg;
		uint8_t ce;
		if (h->msg_flags & MSG_TRUNC) {
			dp->st.rx_truncated++;
			r->next++;
			continue;
		}
		rx_meta(h, &ce, &seg);
		uint32_t n = seg && seg < len - r->off ? seg : len - r->off;
		if (seg)
			dp->st.rx_gro_segs++;
		if (n > MRC_DP_MAX_DGRAM) {
			/* What a MRC_DP_MAX_DGRAM buffer would have truncated. */
			dp->st.rx_truncated++;
		} else {
			in[out] = (struct mrc_dp_in){ .buf = (uint8_t *)r->iov[k].iov_base + r->off,
				.len = n, .src = r->from[k].sin6_addr,
				.sport = ntohs(r->from[k].sin6_port), .plane = plane, .ecn_ce = ce };
			dp->st.rx_bytes += n;
			out++;
		}
		r->off += n;
		if (r->off >= len || !n) {
			r->off = 0;
			r->next++;
		}
	}
	dp->st.rx_pkts += out;
	return (int)out;
}

/* A GRO buffer can hold more datagrams than the caller's max: the rest is
 * handed up by the next calls before the socket is read again (the
 * buffers stay untouched until then).  recv therefore returns max while
 * it holds datagrams, and fewer only once it holds none, so a caller
 * that reads until a short batch (mrcd's rx_plane) misses nothing. */
static int recv_pool(struct udp_dp *dp, uint32_t plane, int fd, struct rxpool *r,
		     struct mrc_dp_in *in, uint32_t max)
{
	if (r->next < r->got)
		return rx_drain(dp, plane, r, in, max);
	/* One past what came back too: the header a failing datagram
	 * stopped at, whatever the kernel left in it. */
	for (uint32_t k = 0; k <= r->got && k < r->nslots; k++)
		rx_rearm(r, k);
	r->got = r->next = r->off = 0;
	uint32_t vlen = max < r->nslots ? max : r->nslots;
	int got = recvmmsg(fd, r->msg, vlen, MSG_DONTWAIT, NULL);
	if (got < 0)
		return errno == EAGAIN ? 0 : -errno;
	MRC_TRACE(MRC_TR_D_RX, plane, r->msg[0].msg_len, got);
	r->got = (uint32_t)got;
	return rx_drain(dp, plane, r, in, max);
}

/* The plane's urgent socket alone; 0 without one (its errors are the
 * plane socket's to report). */
static int recv_urg(struct udp_dp *dp, uint32_t plane, struct mrc_dp_in *in, uint32_t max)
{
	int u = dp->urx[plane] ? recv_pool(dp, plane, dp->ufd[plane], dp->urx[plane], in, max) : 0;
	if (u <= 0)
		return 0;
	dp->st.rx_urgent += (uint64_t)u;
	for (int i = 0; i < u; i++)
		in[i].urgent = 1;
	return u;
}

/* The urgent socket first, every call (one recvmmsg when it is empty),
 * then the plane's own socket fills the rest of the batch, so a short
 * batch still means both are drained. */
static int udp_recv(struct mrc_dp *base, uint32_t plane, struct mrc_dp_in *in, uint32_t max)
{
	struct udp_dp *dp = (struct udp_dp *)base;
	if (plane >= dp->n)
		return -EINVAL;
	int u = recv_urg(dp, plane, in, max);
	if ((uint32_t)u == max)
		return u;
	int n = recv_pool(dp, plane, dp->fd[plane], dp->rx[plane], in + u, max - (uint32_t)u);
	return n < 0 ? (u ? u : n) : u + n;
}

static int udp_recv_urgent(struct mrc_dp *base, uint32_t plane, struct mrc_dp_in *in, uint32_t max)
{
	struct udp_dp *dp = (struct udp_dp *)base;
	return plane < dp->n ? recv_urg(dp, plane, in, max) : -EINVAL;
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
	.recv_urgent = udp_recv_urgent,
	.get_stats = udp_get_stats,
};
