/* The fabric's data plane: a pool of packets, output-queued ports with a
 * priority queue (control packets and trimmed headers, as NDP and UET
 * switches do) and a data queue with a finite buffer, ECN marking and
 * trimming at configurable thresholds, serialisation at the link rate,
 * propagation delay, and faults applied where a packet crosses a link. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "sim/sim_int.h"

/* 2 MiB of packets: one huge page (sim_alloc_huge). */
#define POOL_CHUNK 16384
#define HUGE_PAGE (2u << 20)

void *sim_alloc_huge(size_t size)
{
	/* A big run's packets and ports span far more 4 KiB pages than the
	 * TLB holds, and each hop's first reads of them lead the profile: ask
	 * for huge pages, which the kernel gives on request in its default
	 * transparent_hugepage=madvise mode. */
	void *m = NULL;
	if (posix_memalign(&m, size >= HUGE_PAGE ? HUGE_PAGE : 64, size))
		return NULL;
	if (size >= HUGE_PAGE)
		(void)madvise(m, size & ~(size_t)(HUGE_PAGE - 1), MADV_HUGEPAGE);
	return m;
}

int sim_pool_init(struct sim_pool *p)
{
	memset(p, 0, sizeof(*p));
	return 0;
}

void sim_pool_free(struct sim_pool *p)
{
	for (uint32_t i = 0; i < p->n_chunks; i++)
		free(p->chunks[i]);
	free(p->chunks);
	memset(p, 0, sizeof(*p));
}

/* Grows by whole chunks, which are never freed before the end: after the
 * first round trips every packet comes from the free list. */
static int pool_grow(struct sim_pool *p)
{
	if (p->n_chunks == p->cap_chunks) {
		uint32_t nc = p->cap_chunks ? 2 * p->cap_chunks : 16;
		struct sim_pkt **c = realloc(p->chunks, nc * sizeof(*c));
		if (!c)
			return -ENOMEM;
		p->chunks = c;
		p->cap_chunks = nc;
	}
	/* Cache-line aligned (malloc's 16-byte offset put every record's
	 * route and hop bytes across two lines; aligned, half fit in one). */
	struct sim_pkt *c = sim_alloc_huge(POOL_CHUNK * sizeof(struct sim_pkt));
	if (!c)
		return -ENOMEM;
	p->chunks[p->n_chunks++] = c;
	for (int i = POOL_CHUNK - 1; i >= 0; i--) {
		c[i].next = p->free;
		p->free = &c[i];
	}
	return 0;
}

struct sim_pkt *sim_pkt_alloc(struct mrc_sim *s)
{
	struct sim_pool *p = &s->pool;
	if (!p->free && pool_grow(p))
		return NULL;
	struct sim_pkt *k = p->free;
	p->free = k->next;
	k->next = NULL;
	/* The next one's head was a miss at its allocation (its route
	 * and header are written at once): fetch both its lines now. */
	if (p->free) {
		__builtin_prefetch(p->free, 1);
		__builtin_prefetch((char *)p->free + 64, 1);
	}
	if (++p->live > p->peak)
		p->peak = p->live;
	p->total++;
	return k;
}

int sim_schedule(struct mrc_sim *s, uint64_t t, uint8_t type, uint64_t arg)
{
	int rc = sim_evq_push(&s->q, t, type, arg);
	if (t < s->sched_min)
		s->sched_min = t;
	if (rc)
		s->oom = 1;
	return rc;
}

int sim_schedule_in(struct mrc_sim *s, uint64_t delay, uint8_t type, uint64_t arg)
{
	int rc = sim_evq_push_in(&s->q, s->now, delay, type, arg);
	if (s->now + delay < s->sched_min)
		s->sched_min = s->now + delay;
	if (rc)
		s->oom = 1;
	return rc;
}

_Static_assert(sizeof(struct sim_port) == 64, "a port record is one cache line");

static void drop(struct mrc_sim *s, uint32_t port, struct sim_pkt *k, uint64_t *why)
{
	(*why)++;
	s->pcold[port].drops++;
	sim_pkt_free(s, k);
}

/* Starts serialising the next packet, priority queue first. */
static void port_start(struct mrc_sim *s, uint32_t port)
{
	struct sim_port *p = &s->ports[port];
	int c = p->qh[0] ? 0 : 1;
	struct sim_pkt *k = p->qh[c];
	if (!k)
		return;
	p->qh[c] = k->next;
	if (!p->qh[c])
		p->qt[c] = NULL;
	k->next = NULL;
	p->qbytes[c] -= k->wire;
	p->cur = k;
	if (p->from_host != SIM_PORT_SW && (k->flags & PF_DATA))
		s->hosts[p->from_host].queued--;
	sim_schedule_in(s, sim_ser_ps(s, k->wire), SE_TXDONE, port);
}

void sim_port_enqueue(struct mrc_sim *s, uint32_t port, struct sim_pkt *k)
{
	struct sim_port *p = &s->ports[port];
	if (p->state == PS_DOWN) {
		drop(s, port, k, &s->drop_down);
		return;
	}
	int c = (k->flags & PF_PRIO) ? 0 : 1;
	if (p->from_host == SIM_PORT_SW) {
		if (c == 1) {
			uint64_t q = p->qbytes[1];
			if (s->cfg.trim && q + k->wire > s->cfg.trim && k->plen) {
				/* Cut the payload the way the fabric's trimmer
				 * does, on the packet's own header bytes. */
				size_t len = mrce_wire_trim(k->hdr, (size_t)k->hdr_len +
							   k->plen + MRC_TRAILER_LEN);
				k->wire = (uint16_t)(k->wire - k->plen - MRC_TRAILER_LEN);
				k->hdr_len = (uint8_t)len;
				k->plen = 0;
				k->flags = (uint8_t)((k->flags & ~(PF_SRC | PF_INL)) | PF_PRIO);
				c = 0;
				s->pcold[port].trims++;
				s->trims++;
			} else if (q + k->wire > s->cfg.buffer) {
				drop(s, port, k, &s->drop_full);
				return;
			} else if (s->cfg.ecn && q >= s->cfg.ecn) {
				k->flags |= PF_ECN;
				s->pcold[port].marks++;
				s->marks++;
			}
		}
		if (c == 0 && (uint64_t)p->qbytes[0] + k->wire > s->cfg.prio_buffer) {
			drop(s, port, k, &s->drop_prio);
			return;
		}
	}
	k->next = NULL;
	if (p->qt[c])
		p->qt[c]->next = k;
	else
		p->qh[c] = k;
	p->qt[c] = k;
	p->qbytes[c] += k->wire;
	if (c == 1 && p->qbytes[1] > p->qmax)
		p->qmax = p->qbytes[1];
	if (!p->cur)
		port_start(s, port);
}

void sim_port_txdone(struct mrc_sim *s, uint32_t port)
{
	struct sim_port *p = &s->ports[port];
	struct sim_pkt *k = p->cur;
	p->cur = NULL;
	if (k) {
		p->tx_bytes += k->wire;
		if (p->state == PS_DOWN)   /* went down mid-frame */
			drop(s, port, k, &s->drop_down);
		else
			sim_schedule_in(s, s->prop_ps, SE_ARRIVE, (uint64_t)(uintptr_t)k);
	}
	port_start(s, port);
	if (p->from_host != SIM_PORT_SW)
		sim_host_nic_free(s, p->from_host);
}

void sim_arrive(struct mrc_sim *s, struct sim_pkt *k)
{
	uint32_t port = k->route[k->hop];
	struct sim_port *p = &s->ports[port];
	if (p->state != PS_OK) {
		if (p->state == PS_DOWN) {
			drop(s, port, k, &s->drop_down);
			return;
		}
		if (p->state == PS_BLACKHOLE) {
			sim_health_dead(s, k);
			drop(s, port, k, &s->drop_blackhole);
			return;
		}
		if (mrc_rng_next(&s->rng) < s->pcold[port].loss_thr) {
			drop(s, port, k, &s->drop_loss);
			return;
		}
	}
	if (++k->hop == k->nhops)
		sim_host_rx(s, k);
	else
		sim_port_enqueue(s, k->route[k->hop], k);
}

void sim_port_flush(struct mrc_sim *s, uint32_t port)
{
	struct sim_port *p = &s->ports[port];
	for (int c = 0; c < 2; c++) {
		struct sim_pkt *k = p->qh[c];
		while (k) {
			struct sim_pkt *nx = k->next;
			if (p->from_host != SIM_PORT_SW && (k->flags & PF_DATA))
				s->hosts[p->from_host].queued--;
			drop(s, port, k, &s->drop_down);
			k = nx;
		}
		p->qh[c] = p->qt[c] = NULL;
		p->qbytes[c] = 0;
	}
}
