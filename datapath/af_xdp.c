/* The af_xdp datapath (datapath.h, docs/datapaths.md): per plane one
 * AF_XDP socket on a queue of the plane NIC (libxdp's xsk API) with its
 * own UMEM, and an XDP program that steers mrc's UDP port to it and
 * everything else to the kernel (af_xdp_prog.c).  Frames are built in
 * place in UMEM frames (frame.c, shared with dpdk) and addressed to the
 * plane's one neighbour, its leaf (nexthop.c).  Zero-copy where the driver allows,
 * copy mode elsewhere (veth); multi-buffer (XDP_USE_SG) carries jumbo
 * frames in 4 KiB frames. */
#include "common/clock.h"
#include "datapath/datapath.h"

#ifdef MRC_HAVE_AF_XDP
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <xdp/xsk.h>

#include "datapath/af_xdp.h"

#ifndef XDP_USE_SG
#define XDP_USE_SG (1 << 4)     /* linux/if_xdp.h, kernel >= 6.6 */
#endif
#ifndef XDP_PKT_CONTD
#define XDP_PKT_CONTD (1 << 0)
#endif

#define FRAME XSK_UMEM__DEFAULT_FRAME_SIZE   /* 4096: a page, what copy mode needs */
#define NRX 4096                              /* frames for receive (fill ring): 2 per jumbo packet */
#define NTX 2048                              /* frames for transmit */
#define HELD_MAX 256                          /* rx descriptors looked at per recv */
#define RXBUF (MRC__FRAME_HDR_LEN + MRC_DP_MAX_DGRAM)
#define ROOM_WAIT_NS 200000                   /* bound on waiting for a tx slot */
#define NH_REFRESH_NS 1000000000ull           /* next hop re-read from the kernel */

struct xplane {
	int ifindex, sg, zc, native, down;
	struct xsk_umem *umem;
	struct xsk_socket *xsk;
	struct xsk_ring_prod fq, tx;
	struct xsk_ring_cons cq, rx;
	uint8_t *area;
	struct mrc__dp_xdp_prog *prog;
	struct mrc__dp_frame_hdr a;
	char ifname[16];
	uint64_t nh_at;
	uint32_t ntxfree, nheld;
	uint64_t txfree[NTX];
	uint64_t held[HELD_MAX];      /* rx frames lent to the caller until next recv */
	uint8_t rxbuf[MRC_DP_BATCH][RXBUF];   /* multi-buffer packets, gathered */
};

struct xdp_dp {
	struct mrc_dp base;
	uint32_t n;
	struct xplane *pl[MRC_DP_MAX_PLANES];
	struct mrc_dp_stats st;
};

struct args {
	char xdp_mode[8], bind[12];
	uint32_t queue;
};

/* datapath_args: comma-separated xdp_mode=native|skb, bind=zerocopy|copy,
 * queue=N (docs/datapaths.md). */
static int parse_args(const char *s, struct args *a, char *why, size_t whylen)
{
	memset(a, 0, sizeof(*a));
	char buf[256];
	if (!s)
		return 0;
	snprintf(buf, sizeof(buf), "%s", s);
	char *save = NULL;
	for (char *kv = strtok_r(buf, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
		char *v = strchr(kv, '=');
		int ok = v != NULL;
		if (ok) {
			*v++ = 0;
			if (!strcmp(kv, "xdp_mode") && (!strcmp(v, "native") || !strcmp(v, "skb")))
				snprintf(a->xdp_mode, sizeof(a->xdp_mode), "%s", v);
			else if (!strcmp(kv, "bind") && (!strcmp(v, "zerocopy") || !strcmp(v, "copy")))
				snprintf(a->bind, sizeof(a->bind), "%s", v);
			else if (!strcmp(kv, "queue") && *v && strspn(v, "0123456789") == strlen(v) &&
				 strlen(v) < 4)
				a->queue = (uint32_t)atoi(v);
			else
				ok = 0;
		}
		if (!ok) {
			if (why)
				snprintf(why, whylen, "datapath_args: '%s' is not one of "
					 "xdp_mode=native|skb, bind=zerocopy|copy, queue=N", kv);
			return -EINVAL;
		}
	}
	return 0;
}

/* Creates the UMEM and socket, zero-copy with multi-buffer first, then
 * the fallbacks the args allow; each try needs a fresh UMEM (a failed
 * bind leaves libxdp's first-socket state behind). */
static int make_socket(struct xplane *x, const char *ifname, const struct args *a)
{
	static const uint16_t tries[] = { XDP_ZEROCOPY | XDP_USE_SG, XDP_ZEROCOPY,
					  XDP_COPY | XDP_USE_SG, XDP_COPY };
	const struct xsk_umem_config uc = { .fill_size = NRX, .comp_size = NTX,
		.frame_size = FRAME, .frame_headroom = 0 };
	int rc = -EOPNOTSUPP;
	for (size_t i = 0; i < sizeof(tries) / sizeof(tries[0]); i++) {
		int zc = (tries[i] & XDP_ZEROCOPY) != 0;
		if ((zc && !strcmp(a->bind, "copy")) || (!zc && !strcmp(a->bind, "zerocopy")) ||
		    (zc && !strcmp(a->xdp_mode, "skb")))
			continue;
		rc = xsk_umem__create(&x->umem, x->area, (uint64_t)(NRX + NTX) * FRAME, &x->fq,
				      &x->cq, &uc);
		if (rc)
			return rc;
		const struct xsk_socket_config sc = { .rx_size = NRX, .tx_size = NTX,
			.libxdp_flags = XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD, .bind_flags = tries[i] };
		rc = xsk_socket__create(&x->xsk, ifname, a->queue, x->umem, &x->rx, &x->tx, &sc);
		if (!rc) {
			x->zc = zc;
			x->sg = (tries[i] & XDP_USE_SG) != 0;
			return 0;
		}
		xsk_umem__delete(x->umem);
		x->umem = NULL;
	}
	return rc;
}

static void close_plane(struct xplane *x)
{
	if (!x)
		return;
	mrc__dp_xdp_prog_detach(x->prog);
	if (x->xsk)
		xsk_socket__delete(x->xsk);
	if (x->umem)
		xsk_umem__delete(x->umem);
	if (x->area)
		munmap(x->area, (size_t)(NRX + NTX) * FRAME);
	free(x);
}

static int open_plane(struct xplane **out, const struct mrc_dp_plane *p, uint16_t port,
		      const struct args *a, char *why, size_t whylen)
{
	if (!p->ifname[0]) {
		if (why)
			snprintf(why, whylen, "af_xdp needs a plane NIC: it has no loopback "
				 "mode (use udp on a single host)");
		return -EOPNOTSUPP;
	}
	struct xplane *x = calloc(1, sizeof(*x));
	if (!x)
		return -ENOMEM;
	const char *what = "";
	int rc = 0;
	x->ifindex = (int)if_nametoindex(p->ifname);
	if (!x->ifindex)
		rc = -ENODEV, what = "no such interface";
	if (!rc && (rc = mrc__dp_xdp_nic_mac(p->ifname, x->a.smac)))
		what = "its MAC address";
	/* A second at most: neighbour discovery on one link. */
	char nh[160] = "";
	snprintf(x->ifname, sizeof(x->ifname), "%s", p->ifname);
	if (!rc && (rc = mrc__dp_nexthop_mac(p->ifname, 1000, x->a.dmac, nh, sizeof(nh))))
		what = nh;
	x->a.src = p->local;
	x->a.sport = port;
	x->nh_at = mrc__mono_ns();
	if (!rc) {
		x->area = mmap(NULL, (size_t)(NRX + NTX) * FRAME, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
		if (x->area == MAP_FAILED)
			x->area = NULL, rc = -errno, what = "UMEM";
	}
	if (!rc && (rc = make_socket(x, p->ifname, a)))
		what = "AF_XDP socket (kernel without AF_XDP, or queue out of range)";
	char pwhy[160] = "";
	if (!rc && (rc = mrc__dp_xdp_prog_attach(&x->prog, x->ifindex, port, a->queue,
					      xsk_socket__fd(x->xsk), a->xdp_mode, &x->native,
					      pwhy, sizeof(pwhy))))
		what = pwhy;
	if (rc) {
		if (why)
			snprintf(why, whylen, "af_xdp on %s: %s: %s", p->ifname, what, strerror(-rc));
		close_plane(x);
		return rc;
	}
	uint32_t idx = 0;
	if (xsk_ring_prod__reserve(&x->fq, NRX, &idx) != NRX) {
		close_plane(x);
		return -EIO;
	}
	for (uint32_t i = 0; i < NRX; i++)
		*xsk_ring_prod__fill_addr(&x->fq, idx + i) = (uint64_t)i * FRAME;
	xsk_ring_prod__submit(&x->fq, NRX);
	for (uint32_t i = 0; i < NTX; i++)
		x->txfree[x->ntxfree++] = (uint64_t)(NRX + i) * FRAME;
	*out = x;
	return 0;
}

static void xdp_close(struct mrc_dp *base)
{
	struct xdp_dp *dp = (struct xdp_dp *)base;
	for (uint32_t i = 0; i < dp->n; i++)
		close_plane(dp->pl[i]);
	free(dp);
}

static int xdp_open(struct mrc_dp **out, const struct mrc_dp_cfg *cfg, char *why, size_t whylen)
{
	struct args a;
	int rc = parse_args(cfg->args, &a, why, whylen);
	if (rc)
		return rc;
	struct xdp_dp *dp = calloc(1, sizeof(*dp));
	if (!dp)
		return -ENOMEM;
	dp->base.ops = &mrc__dp_af_xdp_ops;
	for (uint32_t i = 0; i < cfg->nplanes; i++) {
		rc = open_plane(&dp->pl[i], &cfg->planes[i], cfg->port, &a, why, whylen);
		if (rc) {
			xdp_close(&dp->base);
			return rc;
		}
		dp->n = i + 1;
	}
	*out = &dp->base;
	return 0;
}

static int xdp_fd(const struct mrc_dp *base, uint32_t plane)
{
	const struct xdp_dp *dp = (const struct xdp_dp *)base;
	return plane < dp->n ? xsk_socket__fd(dp->pl[plane]->xsk) : -EINVAL;
}

/* Transmitted frames back to the free list. */
static void reap(struct xplane *x)
{
	uint32_t idx = 0, m = xsk_ring_cons__peek(&x->cq, NTX, &idx);
	for (uint32_t j = 0; j < m && x->ntxfree < NTX; j++)
		x->txfree[x->ntxfree++] = *xsk_ring_cons__comp_addr(&x->cq, idx + j) & ~(uint64_t)(FRAME - 1);
	xsk_ring_cons__release(&x->cq, m);
}

/* Tells the kernel the tx ring has work.  In copy mode each sendto
 * transmits up to 32 descriptors and says EAGAIN while more remain, so it
 * is repeated (bounded: the ring's size over 32); zero-copy returns at
 * once and the NIC sends in the background. */
static void kick(struct xplane *x)
{
	x->down = 0;
	for (int k = 0; k < NTX / 32; k++)
		if (sendto(xsk_socket__fd(x->xsk), NULL, 0, MSG_DONTWAIT, NULL, 0) >= 0)
			break;
		else if (errno != EAGAIN) {
			x->down = errno == ENETDOWN || errno == ENXIO;
			break;
		}
}

/* Room for a packet of nf frames: free frames and tx descriptors,
 * kicking and reaping for at most ROOM_WAIT_NS (not at all while the link
 * is down: nothing will drain). */
static int room(struct xplane *x, uint32_t nf)
{
	uint64_t deadline = 0;
	for (;;) {
		reap(x);
		if (x->ntxfree >= nf && xsk_prod_nb_free(&x->tx, nf) >= nf)
			return 1;
		uint64_t t = mrc__mono_ns();
		if (x->down && deadline)
			return 0;
		if (!deadline)
			deadline = t + ROOM_WAIT_NS;
		else if (t > deadline)
			return 0;
		kick(x);
	}
}

/* Copies the header and the pieces into nf frames and queues them. */
static void put_frames(struct xplane *x, const uint8_t *hdr, const struct mrc_dp_out *o,
		       size_t flen, uint32_t nf)
{
	uint32_t idx = 0;
	xsk_ring_prod__reserve(&x->tx, nf, &idx);
	struct iovec src[4] = { { (void *)hdr, MRC__FRAME_HDR_LEN } };
	for (uint32_t i = 0; i < o->iovcnt; i++)
		src[i + 1] = o->iov[i];
	uint32_t s = 0;
	size_t soff = 0;
	for (uint32_t f = 0; f < nf; f++) {
		uint64_t addr = x->txfree[--x->ntxfree];
		uint8_t *dst = x->area + addr;
		size_t len = flen - (size_t)f * FRAME < FRAME ? flen - (size_t)f * FRAME : FRAME;
		for (size_t done = 0; done < len;) {
			size_t c = src[s].iov_len - soff;
			if (c > len - done)
				c = len - done;
			memcpy(dst + done, (const uint8_t *)src[s].iov_base + soff, c);
			done += c;
			soff += c;
			if (soff == src[s].iov_len)
				s++, soff = 0;
		}
		struct xdp_desc *d = xsk_ring_prod__tx_desc(&x->tx, idx + f);
		d->addr = addr;
		d->len = (uint32_t)len;
		d->options = f + 1 < nf ? XDP_PKT_CONTD : 0;
	}
	xsk_ring_prod__submit(&x->tx, nf);
}

static int xdp_send(struct mrc_dp *base, const struct mrc_dp_out *pkts, uint32_t n)
{
	struct xdp_dp *dp = (struct xdp_dp *)base;
	uint32_t pending = 0;   /* planes with queued frames, a bit each */
	uint64_t now = mrc__mono_ns();
	int total = 0;
	for (uint32_t i = 0; i < n; i++) {
		const struct mrc_dp_out *o = &pkts[i];
		if (o->plane >= dp->n || o->iovcnt > 3) {
			dp->st.tx_errs++;
			continue;
		}
		struct xplane *x = dp->pl[o->plane];
		size_t plen = 0;
		for (uint32_t k = 0; k < o->iovcnt; k++)
			plen += o->iov[k].iov_len;
		size_t flen = MRC__FRAME_HDR_LEN + plen;
		uint32_t nf = (uint32_t)((flen + FRAME - 1) / FRAME);
		uint8_t hdr[MRC__FRAME_HDR_LEN];
		if (plen > MRC_DP_MAX_DGRAM || (nf > 1 && !x->sg)) {
			dp->st.tx_errs++;
			continue;
		}
		/* The leaf may change (a replaced switch): re-read the kernel's
		 * neighbour table now and then (no wait); keep the old MAC on
		 * failure. */
		if (now - x->nh_at > NH_REFRESH_NS) {
			uint8_t mac[6];
			char nh[160];
			x->nh_at = now;
			if (!mrc__dp_nexthop_mac(x->ifname, 0, mac, nh, sizeof(nh)))
				memcpy(x->a.dmac, mac, 6);
		}
		mrc__dp_frame_hdr_write(hdr, &x->a, &o->dst, o->dport ? o->dport : x->a.sport, plen,
				     o->dscp);
		if (!room(x, nf)) {
			dp->st.tx_eagain++;
			continue;
		}
		put_frames(x, hdr, o, flen, nf);
		pending |= 1u << o->plane;
		dp->st.tx_pkts++;
		dp->st.tx_bytes += plen;
		total++;
	}
	for (uint32_t pl = 0; pl < dp->n; pl++)
		if (pending & (1u << pl))
			kick(dp->pl[pl]);
	return total ? total : (n ? -EAGAIN : 0);
}

/* Frames lent out by the previous recv go back to the fill ring.  The
 * ring holds every rx frame, so there is always room. */
static void unlend(struct xplane *x)
{
	uint32_t idx = 0;
	if (!x->nheld || xsk_ring_prod__reserve(&x->fq, x->nheld, &idx) != x->nheld)
		return;
	for (uint32_t i = 0; i < x->nheld; i++)
		*xsk_ring_prod__fill_addr(&x->fq, idx + i) = x->held[i];
	xsk_ring_prod__submit(&x->fq, x->nheld);
	x->nheld = 0;
}

static int xdp_recv(struct mrc_dp *base, uint32_t plane, struct mrc_dp_in *in, uint32_t max)
{
	struct xdp_dp *dp = (struct xdp_dp *)base;
	if (plane >= dp->n)
		return -EINVAL;
	struct xplane *x = dp->pl[plane];
	unlend(x);
	if (max > MRC_DP_BATCH)
		max = MRC_DP_BATCH;
	uint32_t idx = 0, nd = xsk_ring_cons__peek(&x->rx, HELD_MAX - x->nheld, &idx), used = 0;
	int out = 0;
	while (used < nd && (uint32_t)out < max) {
		/* A multi-buffer packet is one descriptor per frame, all but the
		 * last marked CONTD; the kernel publishes them together. */
		uint32_t last = used;
		while (last < nd && (xsk_ring_cons__rx_desc(&x->rx, idx + last)->options & XDP_PKT_CONTD))
			last++;
		if (last == nd)
			break;
		const struct xdp_desc *d0 = xsk_ring_cons__rx_desc(&x->rx, idx + used);
		const uint8_t *f = x->area + xsk_umem__add_offset_to_addr(d0->addr);
		size_t flen = d0->len;
		int whole = 1;
		if (last > used) {
			flen = 0;
			for (uint32_t k = used; k <= last; k++) {
				const struct xdp_desc *d = xsk_ring_cons__rx_desc(&x->rx, idx + k);
				if (flen + d->len > RXBUF) {
					whole = 0;
					break;
				}
				memcpy(x->rxbuf[out] + flen, x->area + xsk_umem__add_offset_to_addr(d->addr),
				       d->len);
				flen += d->len;
			}
			f = x->rxbuf[out];
		}
		for (uint32_t k = used; k <= last; k++)
			x->held[x->nheld++] = xsk_umem__extract_addr(
				xsk_ring_cons__rx_desc(&x->rx, idx + k)->addr) & ~(uint64_t)(FRAME - 1);
		used = last + 1;
		struct mrc__dp_frame_rx p;
		/* Too long, malformed or not ours (the XDP program lets only
		 * mrc's port through): the datagram did not arrive whole. */
		if (!whole || mrc__dp_frame_parse(f, flen, &p) || p.dport != x->a.sport) {
			dp->st.rx_truncated++;
			continue;
		}
		in[out] = (struct mrc_dp_in){ .buf = (uint8_t *)p.payload, .len = p.len,
			.src = p.src, .sport = p.sport, .plane = plane, .ecn_ce = p.ecn == 3 };
		dp->st.rx_bytes += p.len;
		out++;
	}
	/* peek moved libxdp's cached consumer past all nd descriptors, but
	 * only `used` were taken: give the rest back, or they would be
	 * skipped (packets lost, their frames never refilled, the rx ring
	 * shrinking for good): the af_xdp loss under load. */
	xsk_ring_cons__cancel(&x->rx, nd - used);
	xsk_ring_cons__release(&x->rx, used);
	dp->st.rx_pkts += (uint64_t)out;
	return out;
}

/* Plus the kernel's drops at the sockets' rx rings (XDP_STATISTICS):
 * rx_dropped (no fill frame, among others) and rx_ring_full (the rx
 * ring not drained in time). */
static void xdp_get_stats(const struct mrc_dp *base, struct mrc_dp_stats *st)
{
	const struct xdp_dp *dp = (const struct xdp_dp *)base;
	*st = dp->st;
	for (uint32_t i = 0; i < dp->n; i++) {
		struct xdp_statistics xs;
		socklen_t len = sizeof(xs);
		memset(&xs, 0, sizeof(xs));
		if (!getsockopt(xsk_socket__fd(dp->pl[i]->xsk), SOL_XDP, XDP_STATISTICS, &xs, &len))
			st->rx_dropped += xs.rx_dropped + xs.rx_ring_full;
	}
}

const struct mrc_dp_ops mrc__dp_af_xdp_ops = {
	.name = "af_xdp",
	.open = xdp_open,
	.close = xdp_close,
	.fd = xdp_fd,
	.send = xdp_send,
	.recv = xdp_recv,
	.get_stats = xdp_get_stats,
};
#else
MRC__DP_UNBUILT(mrc__dp_af_xdp_ops, "af_xdp",
		"build with libxdp-dev, libbpf-dev and clang installed (scripts/deps.sh)");
#endif
