/* Workloads: the flows each scenario entry makes (permutation, MoE-style
 * all-to-all, ring all-reduce, incast, a single flow), their start times,
 * posting them to the engines, and their ideal completion times.
 *
 * Ideal FCT of a flow = its bytes on the wire (payload plus every packet's
 * MRC header, trailer and frame overhead) / the host's capacity (all of its
 * NICs) + the base RTT of the pair's longest path (a full data frame out,
 * an ACK back, store-and-forward at every hop, no queueing). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errf.h"
#include "sim/sim_int.h"

const char *sim_wl_name(uint8_t kind)
{
	static const char *n[] = { "permutation", "alltoall", "ring", "incast", "flow", "step" };
	return kind < 6 ? n[kind] : "?";
}

uint64_t sim_wire_bytes(const struct mrc_sim *s, uint64_t size)
{
	uint64_t mtu = s->cfg.mtu, npk = size ? (size + mtu - 1) / mtu : 1;
	return size + npk * (MRC_DATA_HDR_LEN + (size ? MRC_TRAILER_LEN : 0) +
			     s->cfg.frame_overhead);
}

static uint64_t path_rtt_ps(const struct mrc_sim *s, uint32_t hops, uint64_t size)
{
	uint64_t pl = size < s->cfg.mtu ? size : s->cfg.mtu;
	uint32_t data = (uint32_t)(MRC_DATA_HDR_LEN + pl + (pl ? MRC_TRAILER_LEN : 0) +
				   s->cfg.frame_overhead);
	uint32_t ack = MRC_ACK_HDR_LEN + s->cfg.frame_overhead;
	return hops * (sim_ser_ps(s, data) + s->prop_ps) +
	       hops * (sim_ser_ps(s, ack) + s->prop_ps);
}

static uint64_t ack_way_ps(const struct mrc_sim *s, uint32_t hops)
{
	return hops * (sim_ser_ps(s, MRC_ACK_HDR_LEN + s->cfg.frame_overhead) + s->prop_ps);
}

static uint32_t pair_hops(const struct mrc_sim *s, uint32_t src, uint32_t dst)
{
	uint32_t ports[SIM_MAX_HOPS], best = 0;
	for (uint32_t ev = 0; ev < s->fab.nev && best < s->fab.max_hops; ev++) {
		int n = sim_fabric_route(&s->fab, src, dst, ev, ports);
		if (n > (int)best)
			best = (uint32_t)n;
	}
	return best;
}

uint64_t sim_pair_rtt_ps(const struct mrc_sim *s, uint32_t src, uint32_t dst)
{
	return path_rtt_ps(s, pair_hops(s, src, dst), s->cfg.mtu);
}

static uint64_t xfer_ps(const struct mrc_sim *s, uint64_t wire)
{
	return (wire * s->ser_num + s->host_cap_mbit - 1) / s->host_cap_mbit;
}

/* ---- building ---------------------------------------------------------- */

struct builder {
	struct mrc_sim *s;
	uint32_t cap_flows, cap_conns;
};

static int add_flow(struct builder *b, uint32_t src, uint32_t dst, uint64_t size,
		    uint32_t wl, uint32_t nconn, uint32_t conn0)
{
	struct mrc_sim *s = b->s;
	if (s->n_flows == b->cap_flows) {
		uint32_t nc = b->cap_flows ? 2 * b->cap_flows : 1024;
		struct sim_flow *f = realloc(s->flows, nc * sizeof(*f));
		if (!f)
			return -ENOMEM;
		s->flows = f;
		b->cap_flows = nc;
	}
	if (conn0 == SIM_NONE) {
		if (s->n_conns + nconn > b->cap_conns) {
			uint32_t nc = b->cap_conns ? 2 * b->cap_conns : 1024;
			while (nc < s->n_conns + nconn)
				nc *= 2;
			struct sim_conn *c = realloc(s->conns, nc * sizeof(*c));
			if (!c)
				return -ENOMEM;
			s->conns = c;
			b->cap_conns = nc;
		}
		conn0 = s->n_conns;
		uint64_t part = size / nconn, off = 0;
		for (uint32_t i = 0; i < nconn; i++) {
			uint64_t len = i + 1 == nconn ? size - off : part;
			s->conns[s->n_conns++] = (struct sim_conn){ .flow = s->n_flows,
				.off = off, .len = len };
			off += len;
		}
	}
	s->flows[s->n_flows++] = (struct sim_flow){ .src = src, .dst = dst, .wl = wl,
		.conn0 = conn0, .nconn = nconn, .dep = SIM_NONE, .size = size,
		.start_ps = UINT64_MAX };
	return 0;
}

static void shuffle(struct mrc_rng *r, uint32_t *a, uint32_t n)
{
	for (uint32_t i = n; i > 1; i--) {
		uint32_t j = mrc_rng_below(r, i);
		uint32_t t = a[i - 1];
		a[i - 1] = a[j];
		a[j] = t;
	}
}

static int gen(struct builder *b, uint32_t w, uint32_t *perm, char *err, size_t errlen)
{
	struct mrc_sim *s = b->s;
	const struct mrc_sim_workload *wl = &s->cfg.wl[w];
	uint32_t H = s->fab.n_hosts, q = wl->qps ? wl->qps : 1;
	int rc = 0;
	for (uint32_t i = 0; i < H; i++)
		perm[i] = i;
	switch (wl->kind) {
	case MRC_SIM_WL_PERMUTATION:
		if (H < 2)
			return mrc__errf(err, errlen, "workload[%u]: permutation needs 2 hosts", w);
		shuffle(&s->rng, perm, H);
		/* Fix the fixed points: swapping with the next entry can
		 * never create a new one. */
		for (uint32_t i = 0; i < H; i++)
			if (perm[i] == i) {
				uint32_t j = (i + 1) % H, t = perm[i];
				perm[i] = perm[j];
				perm[j] = t;
			}
		for (uint32_t i = 0; i < H && !rc; i++)
			rc = add_flow(b, i, perm[i], wl->size, w, q, SIM_NONE);
		break;
	case MRC_SIM_WL_ALLTOALL: {
		uint32_t G = wl->group ? wl->group : H;
		if (G < 2 || G > H)
			return mrc__errf(err, errlen, "workload[%u]: alltoall group=%u: must be 2..%u hosts",
				    w, G, H);
		shuffle(&s->rng, perm, H);
		for (uint32_t g0 = 0; g0 + G <= H && !rc; g0 += G)
			for (uint32_t i = 0; i < G && !rc; i++)
				for (uint32_t j = 0; j < G && !rc; j++)
					if (i != j)
						rc = add_flow(b, perm[g0 + i], perm[g0 + j],
							      wl->size, w, q, SIM_NONE);
		break;
	}
	case MRC_SIM_WL_RING: {
		uint32_t G = wl->group ? wl->group : H;
		if (G < 2 || G > H)
			return mrc__errf(err, errlen, "workload[%u]: ring group=%u: must be 2..%u hosts",
				    w, G, H);
		uint64_t chunk = wl->size / G;
		if (!chunk)
			return mrc__errf(err, errlen, "workload[%u]: ring size=%llu is smaller than the group (%u)",
				    w, (unsigned long long)wl->size, G);
		shuffle(&s->rng, perm, H);
		uint32_t steps = 2 * (G - 1);
		for (uint32_t g0 = 0; g0 + G <= H && !rc; g0 += G) {
			/* Flow (i, k) = host i's step k, one QP pair per ring
			 * edge; flow (i, k) is posted once (i-1, k-1) arrives. */
			uint32_t base = s->n_flows;
			for (uint32_t i = 0; i < G && !rc; i++) {
				uint32_t src = perm[g0 + i], dst = perm[g0 + (i + 1) % G];
				uint32_t first = s->n_flows;
				rc = add_flow(b, src, dst, chunk, w, 1, SIM_NONE);
				for (uint32_t k = 1; k < steps && !rc; k++)
					rc = add_flow(b, src, dst, chunk, w, 1, s->flows[first].conn0);
			}
			for (uint32_t i = 0; i < G && !rc; i++)
				for (uint32_t k = 0; k + 1 < steps; k++) {
					uint32_t nxt = (i + 1) % G;
					s->flows[base + i * steps + k].dep = base + nxt * steps + k + 1;
					s->flows[base + nxt * steps + k + 1].triggered = 1;
				}
		}
		break;
	}
	case MRC_SIM_WL_INCAST: {
		uint32_t dst = wl->dst;
		if (dst >= H)
			return mrc__errf(err, errlen, "workload[%u]: incast dst=h%u: the fabric has %u hosts",
				    w, dst, H);
		if (wl->senders < 1 || wl->senders > H - 1)
			return mrc__errf(err, errlen, "workload[%u]: incast senders=%u: must be 1..%u",
				    w, wl->senders, H - 1);
		perm[dst] = perm[H - 1];
		shuffle(&s->rng, perm, H - 1);
		for (uint32_t i = 0; i < wl->senders && !rc; i++)
			rc = add_flow(b, perm[i], dst, wl->size, w, q, SIM_NONE);
		break;
	}
	case MRC_SIM_WL_FLOW:
		if (wl->src >= H || wl->dst >= H || wl->src == wl->dst)
			return mrc__errf(err, errlen, "workload[%u]: flow h%u -> h%u: need two different hosts below h%u",
				    w, wl->src, wl->dst, H);
		rc = add_flow(b, wl->src, wl->dst, wl->size, w, q, SIM_NONE);
		break;
	case MRC_SIM_WL_STEP:
		return sim_step_gen(s, w, &b->cap_flows, &b->cap_conns, err, errlen);
	default:
		return mrc__errf(err, errlen, "workload[%u]: unknown kind %u", w, wl->kind);
	}
	if (rc == -ENOMEM)
		return mrc__errf(err, errlen, "workload[%u]: out of memory", w), -ENOMEM;
	return rc;
}

int sim_workload_build(struct mrc_sim *s, char *err, size_t errlen)
{
	struct builder b = { .s = s };
	uint32_t H = s->fab.n_hosts;
	uint32_t *perm = malloc(H * sizeof(*perm));
	if (!perm)
		return mrc__errf(err, errlen, "workload: out of memory"), -ENOMEM;
	int rc = 0;
	for (uint32_t w = 0; w < s->cfg.n_wl && !rc; w++) {
		uint32_t f0 = s->n_flows;
		rc = gen(&b, w, perm, err, errlen);
		if (rc)
			break;
		const struct mrc_sim_workload *wl = &s->cfg.wl[w];
		struct sim_job *j = &s->jobs[w];
		j->flow0 = f0;
		j->nflows = s->n_flows - f0;
		j->start_ps = UINT64_MAX;
		if (wl->kind == MRC_SIM_WL_STEP) {
			/* Flows start as the hosts' programs reach them (step.c,
			 * which also set their ideals); the job's ideal is the
			 * compute alone. */
			j->start_ps = wl->start_ns * SIM_PS_PER_NS;
			j->ideal_ps = sim_step_ideal_ps(s);
			continue;
		}
		for (uint32_t i = f0; i < s->n_flows; i++) {
			struct sim_flow *fl = &s->flows[i];
			if (!fl->triggered) {
				uint64_t jit = wl->jitter_ns ?
					(mrc_rng_next(&s->rng) % wl->jitter_ns) : 0;
				fl->start_ps = (wl->start_ns + jit) * SIM_PS_PER_NS;
				if (fl->start_ps < j->start_ps)
					j->start_ps = fl->start_ps;
			}
			fl->rtt_ps = path_rtt_ps(s, pair_hops(s, fl->src, fl->dst), fl->size);
			fl->ideal_ps = xfer_ps(s, sim_wire_bytes(s, fl->size)) + fl->rtt_ps;
			fl->loff = ((uint64_t)i * 64) % 4096;
		}
		/* The job's ideal: what the busiest host must move. */
		uint64_t rtt = 0;
		uint32_t hops = 0;
		for (uint32_t i = f0; i < s->n_flows; i++) {
			if (s->flows[i].rtt_ps > rtt)
				rtt = s->flows[i].rtt_ps;
			uint32_t hp = pair_hops(s, s->flows[i].src, s->flows[i].dst);
			if (hp > hops)
				hops = hp;
			if (hops == s->fab.max_hops)
				break;
		}
		uint64_t wire = sim_wire_bytes(s, wl->size), G = wl->group ? wl->group : H;
		switch (wl->kind) {
		case MRC_SIM_WL_ALLTOALL:
			j->ideal_ps = xfer_ps(s, (G - 1) * wire) + rtt;
			break;
		case MRC_SIM_WL_INCAST:
			j->ideal_ps = xfer_ps(s, (uint64_t)j->nflows * wire) + rtt;
			break;
		case MRC_SIM_WL_RING: {
			/* 2(G-1) steps, each a chunk's transfer plus the one-way
			 * delay before the next host may forward it, then the
			 * last ACK's way back. */
			uint64_t chunk = wl->size / G;
			uint64_t round = path_rtt_ps(s, hops, chunk);
			uint64_t back = ack_way_ps(s, hops);
			j->ideal_ps = 2 * (G - 1) * (xfer_ps(s, sim_wire_bytes(s, chunk)) +
						     round - back) + back;
			break;
		}
		default: {
			uint64_t worst = 0;
			for (uint32_t i = f0; i < s->n_flows; i++) {
				const struct sim_flow *fl = &s->flows[i];
				uint64_t e = fl->start_ps - j->start_ps + fl->ideal_ps;
				if (e > worst)
					worst = e;
			}
			j->ideal_ps = worst;
		}
		}
	}
	free(perm);
	if (rc)
		return rc;
	if (!s->n_flows && !s->step)   /* a step may be compute alone */
		return mrc__errf(err, errlen, "workload: the scenario makes no flows");
	/* The ring flows of one edge share a QP pair: attribute it to the
	 * first. */
	uint64_t max_len = 0, total = 0;
	for (uint32_t c = 0; c < s->n_conns; c++)
		if (s->conns[c].len > max_len)
			max_len = s->conns[c].len;
	for (uint32_t i = 0; i < s->n_flows; i++) {
		if (s->flows[i].size > max_len)
			max_len = s->flows[i].size;
		total += s->flows[i].size;
	}
	if (max_len > SIM_SRC_MAX - 4096)   /* sim_pkt's 32-bit payload offset */
		return mrc__errf(err, errlen, "workload: a %llu-byte message; at most %llu in mrcsim",
			    (unsigned long long)max_len,
			    (unsigned long long)SIM_SRC_MAX - 4096);
	s->src_len = max_len + 4096;
	s->sink_len = max_len ? max_len : 1;
	s->src_buf = malloc(s->src_len);
	s->sink_buf = calloc(1, s->sink_len);
	if (!s->src_buf || !s->sink_buf)
		return mrc__errf(err, errlen, "workload: out of memory for %llu-byte buffers",
			    (unsigned long long)s->src_len), -ENOMEM;
	uint64_t x = s->cfg.seed ^ 0x5eed;
	for (uint64_t i = 0; i < s->src_len; i += 8) {
		uint64_t v = mrc_splitmix64(&x);
		memcpy(s->src_buf + i, &v, s->src_len - i < 8 ? s->src_len - i : 8);
	}
	/* Verify mode: every flow lands in its own buffer, compared at the
	 * end (ring steps share an edge's QP and land in the sink). */
	if (total <= s->cfg.verify_limit) {
		for (uint32_t i = 0; i < s->n_flows; i++) {
			struct sim_flow *fl = &s->flows[i];
			if (s->cfg.wl[fl->wl].kind == MRC_SIM_WL_RING ||
			    s->cfg.wl[fl->wl].kind == MRC_SIM_WL_STEP || !fl->size)
				continue;
			fl->rbuf = calloc(1, fl->size);
			if (!fl->rbuf)
				return mrc__errf(err, errlen, "workload: out of memory"), -ENOMEM;
		}
		s->verified = 1;
	}
	return 0;
}

void sim_flow_start(struct mrc_sim *s, uint32_t f)
{
	struct sim_flow *fl = &s->flows[f];
	struct sim_host *x = &s->hosts[fl->src];
	uint64_t now_ns = s->now / SIM_PS_PER_NS;
	fl->posted = 1;
	fl->start_ps = s->now;
	if (s->now < s->first_start_ps)
		s->first_start_ps = s->now;
	uint32_t conns = s->cfg.wl[fl->wl].kind == MRC_SIM_WL_RING ? 1 : fl->nconn;
	for (uint32_t i = 0; i < conns; i++) {
		const struct sim_conn *c = &s->conns[fl->conn0 + i];
		uint64_t len = conns == 1 ? fl->size : c->len, off = conns == 1 ? 0 : c->off;
		struct mrc_sqe wr = { .wr_id = f, .op = MRC_SQE_WRITE_IMM,
			.lkey = x->src_key, .loff = fl->loff + off, .len = len,
			.rkey = fl->rkey, .roff = off, .imm = f };
		int rc = mrce_qp_post(x->eng, now_ns, c->sqpn, &wr);
		if (rc) {
			/* Counted as a failed part so the run still ends. */
			sim_flow_part_done(s, f, rc);
			sim_flow_part_recv(s, f);
		}
	}
	sim_host_service(s, fl->src);
}

void sim_flow_part_done(struct mrc_sim *s, uint32_t f, int32_t status)
{
	if (f >= s->n_flows)
		return;
	struct sim_flow *fl = &s->flows[f];
	if (status && !fl->status)
		fl->status = status;
	if (++fl->parts_done != fl->nconn)
		return;
	fl->end_ps = s->now;
	if (s->cfg.stalls) {
		sim_stall_end(s, fl->src);
		s->stalls.send_ps += fl->end_ps - fl->start_ps;
	}
	if (s->now > s->last_end_ps)
		s->last_end_ps = s->now;
	if (fl->status)
		s->flows_failed++;
	else
		s->flows_done++;
	if (sim_step_owns(s, f))
		sim_step_sent(s, f);
}

void sim_flow_part_recv(struct mrc_sim *s, uint32_t f)
{
	if (f >= s->n_flows)
		return;
	struct sim_flow *fl = &s->flows[f];
	if (++fl->parts_recv != fl->nconn)
		return;
	fl->recv_ps = s->now;
	if (sim_step_owns(s, f))
		sim_step_recv(s, f);
	else if (fl->dep != SIM_NONE)
		sim_flow_start(s, fl->dep);
}
