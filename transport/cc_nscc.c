/* Congestion control: a window driven by queueing delay and ECN, in the
 * spirit of UET's NSCC (four quadrants of delay x ECN), plus the fixed
 * window used by tests and the simulator's ideal runs. */
#include <string.h>

#include "transport/cc.h"


struct nscc {
	struct mrce_cc_params p;
	uint64_t cwnd;             /* bytes */
	uint64_t last_dec;         /* time of the last decrease */
};

_Static_assert(sizeof(struct nscc) <= MRCE_CC_STATE_MAX, "cc state too big");

static void clamp(struct nscc *s)
{
	if (s->cwnd < s->p.min_cwnd)
		s->cwnd = s->p.min_cwnd;
	if (s->cwnd > s->p.max_cwnd)
		s->cwnd = s->p.max_cwnd;
}

static void nscc_init(void *st, const struct mrce_cc_params *p)
{
	struct nscc *s = st;
	memset(s, 0, sizeof(*s));
	s->p = *p;
	/* Start at half the window (128 packets by default, above one
	 * NIC's BDP on a datacenter path) rather than all of it: many QPs
	 * starting at once to one host would otherwise overrun its receive
	 * queue before any signal comes back.  Growth below target is fast.
	 * A QP spraying over several planes has a NIC per plane at each end,
	 * so its BDP is that many times larger while the window stays capped
	 * by the SACK bitmap: 8 x 100 Gbit/s and a 5.4 us RTT are 128
	 * packets, all of half the window, and every QP stalled until its
	 * first ACK: 4% of a 2 MiB flow's time (mrcsim, docs/sim.md).  Three
	 * quarters there; a full window overran incasts more for no gain. */
	s->cwnd = p->planes > 1 ? p->max_cwnd / 4 * 3 : p->max_cwnd / 2;
}

/* Decrease at most once per base RTT so one burst of marks counts once. */
static int may_decrease(struct nscc *s, uint64_t now, uint64_t base)
{
	if (s->last_dec && now - s->last_dec < (base ? base : 1))
		return 0;
	s->last_dec = now;
	return 1;
}

static void nscc_on_ack(void *st, const struct mrce_cc_sample *x)
{
	struct nscc *s = st;
	uint64_t base = x->base_rtt_ns;
	if (!x->rtt_ns || !base) {
		s->cwnd += x->acked_bytes ? (uint64_t)s->p.mtu * x->acked_bytes / s->cwnd : 0;
		clamp(s);
		return;
	}
	/* Target: base RTT plus two base RTTs of queue (>= 20 us).  Sprayed
	 * traffic always queues a little on some hops (the ECN threshold is
	 * about 10 us of queue per hop, a fat tree path has five): a tighter
	 * target (base/2, 5 us) kept most QPs in the slow additive regime and
	 * cut them on every mark, which made the permutation's tail (mrcsim,
	 * fat tree k=16: slowest 1.70 -> 1.37 x ideal with the spray change
	 * in evs.c; docs/sim.md). */
	uint64_t target = base + (2 * base > 20000 ? 2 * base : 20000);
	uint64_t rtt = x->rtt_ns;
	if (x->ecn && rtt > target) {
		/* Our own queue: shrink in proportion to the excess delay. */
		/* Once per RTT of this sample, not per base RTT: a cut shows
		 * only one (queued) RTT later. */
		if (may_decrease(s, x->now, rtt)) {
			uint64_t excess = rtt - target;
			uint64_t cut = s->cwnd * (excess > rtt / 2 ? rtt / 2 : excess) / rtt;
			s->cwnd -= cut;
		}
	} else if (!x->ecn && rtt < target) {
		/* Room: grow in proportion to how far below target we are. */
		s->cwnd += (uint64_t)x->acked_bytes * (target - rtt) / target +
			   (uint64_t)s->p.mtu * x->acked_bytes / s->cwnd;
	} else if (!x->ecn && rtt > 4 * target) {
		/* No ECN on this fabric yet a large queue: back off gently,
		 * once per RTT of this sample as above.  Once per base RTT
		 * took 1/8 many times in one round trip of tens of ms (much
		 * of it a busy host's late ACKs: the MPI all-to-all on the
		 * emulated fabric) and cut QPs down to one packet. */
		if (may_decrease(s, x->now, rtt))
			s->cwnd -= s->cwnd / 8;
	} else if (!x->ecn) {
		s->cwnd += (uint64_t)s->p.mtu * x->acked_bytes / s->cwnd;
	}
	/* ECN with a short queue: someone else's queue; hold. */
	clamp(s);
}

static void nscc_on_trim(void *st, uint64_t now)
{
	struct nscc *s = st;
	if (may_decrease(s, now, 0))
		s->cwnd -= s->cwnd / 8;
	clamp(s);
}

static void nscc_on_loss(void *st, uint64_t now)
{
	/* Loss here mostly means a failed path, which the path logic handles;
	 * treat it as a mild congestion signal only. */
	nscc_on_trim(st, now);
}

static uint32_t nscc_cwnd(const void *st)
{
	return (uint32_t)((const struct nscc *)st)->cwnd;
}

const struct mrce_cc_ops mrce_cc_nscc = {
	.name = "nscc", .init = nscc_init, .on_ack = nscc_on_ack,
	.on_trim = nscc_on_trim, .on_loss = nscc_on_loss, .cwnd = nscc_cwnd,
};

static void fixed_init(void *st, const struct mrce_cc_params *p)
{
	*(uint32_t *)st = p->max_cwnd;
}
static void fixed_ack(void *st, const struct mrce_cc_sample *x) { (void)st; (void)x; }
static void fixed_sig(void *st, uint64_t now) { (void)st; (void)now; }
static uint32_t fixed_cwnd(const void *st) { return *(const uint32_t *)st; }

const struct mrce_cc_ops mrce_cc_fixed = {
	.name = "fixed", .init = fixed_init, .on_ack = fixed_ack,
	.on_trim = fixed_sig, .on_loss = fixed_sig, .cwnd = fixed_cwnd,
};
