/* Fabric-link health: observations of paths, localisation of failed
 * links (health.h, docs/health.md). */
#include "health/health.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define NLINKS (MRC_PATH_MAX_SWITCHES + 1)
#define NO_IDX UINT32_MAX

struct obs {
	struct mrc_health_obs o;
	uint8_t n_links;
	uint32_t links[NLINKS];
	uint8_t covered;        /* eval's greedy cover: explained */
	uint8_t news;           /* a failure, or working since one: exported
	                           first (peers must hear a retraction) */
	uint8_t pardon;         /* own: the retirement at `since` was found
	                           spurious; its re-reports are ignored */
	uint64_t since;         /* own failure: the engine's retirement time */
};

struct link_st {
	/* rebuilt by every eval */
	uint32_t good_paths, fail_paths, fail_hosts, hits, lastrep;
	uint64_t good_max, fail_min;
	uint8_t touched, next;
	/* kept */
	uint8_t state, flagged, chosen;
	uint64_t cong, changed;
	uint64_t loc_since;     /* 1 + when located at every eval since (0: not) */
};

struct mrc_health {
	const struct mrc_topo *t;
	uint32_t self;
	struct mrc_health_cfg cfg;
	struct obs *obs;
	uint32_t n_obs;
	uint32_t *hash;         /* open addressing, obs index or NO_IDX */
	uint32_t hash_mask;
	struct link_st *ls;
	uint32_t *touched;      /* links touched by this eval */
	uint32_t n_touched;
	uint32_t *flagged;      /* links not OK after the last eval */
	uint32_t n_flagged;
	uint32_t *order;        /* failed obs by src */
};

static uint32_t key_hash(uint32_t src, uint32_t dst, uint32_t ev)
{
	uint64_t k = ((uint64_t)src << 32 | dst) * 0x9e3779b97f4a7c15ull ^ ev * 0xbf58476d1ce4e5b9ull;
	return (uint32_t)(k >> 32 ^ k);
}

static uint32_t *slot_of(const struct mrc_health *h, uint32_t src, uint32_t dst,
			 uint32_t ev)
{
	uint32_t i = key_hash(src, dst, ev) & h->hash_mask;
	for (;; i = (i + 1) & h->hash_mask) {
		uint32_t *s = &h->hash[i];
		if (*s == NO_IDX)
			return s;
		const struct mrc_health_obs *o = &h->obs[*s].o;
		if (o->src == src && o->dst == dst && o->ev == ev)
			return s;
	}
}

static void rehash(struct mrc_health *h)
{
	memset(h->hash, 0xff, ((size_t)h->hash_mask + 1) * sizeof(*h->hash));
	for (uint32_t i = 0; i < h->n_obs; i++) {
		const struct mrc_health_obs *o = &h->obs[i].o;
		*slot_of(h, o->src, o->dst, o->ev) = i;
	}
}

int mrc_health_new(const struct mrc_topo *t, uint32_t self,
		   const struct mrc_health_cfg *cfg, struct mrc_health **out)
{
	if (!t || !out || self >= t->n_hosts)
		return -EINVAL;
	struct mrc_health *h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	h->t = t;
	h->self = self;
	if (cfg)
		h->cfg = *cfg;
	if (!h->cfg.max_obs)
		h->cfg.max_obs = 16384;
	if (!h->cfg.min_paths)
		h->cfg.min_paths = 2;
	if (!h->cfg.k_hosts)
		h->cfg.k_hosts = 2;
	if (!h->cfg.ttl_ns)
		h->cfg.ttl_ns = 1000000000ull;
	if (!h->cfg.slack_ns)
		h->cfg.slack_ns = 20000000ull;
	uint32_t cap = 2;
	while (cap < 2 * h->cfg.max_obs)
		cap *= 2;
	h->hash_mask = cap - 1;
	h->obs = calloc(h->cfg.max_obs, sizeof(*h->obs));
	h->order = calloc(h->cfg.max_obs, sizeof(*h->order));
	h->hash = malloc((size_t)cap * sizeof(*h->hash));
	h->ls = calloc(t->n_links, sizeof(*h->ls));
	h->touched = calloc(t->n_links, sizeof(*h->touched));
	h->flagged = calloc(t->n_links, sizeof(*h->flagged));
	if (!h->obs || !h->order || !h->hash || !h->ls || !h->touched || !h->flagged) {
		mrc_health_free(h);
		return -ENOMEM;
	}
	rehash(h);
	*out = h;
	return 0;
}

void mrc_health_free(struct mrc_health *h)
{
	if (!h)
		return;
	free(h->obs);
	free(h->order);
	free(h->hash);
	free(h->ls);
	free(h->touched);
	free(h->flagged);
	free(h);
}

/* The table is full: a failure takes the oldest working observation's
 * place (working ones are plentiful, failures are the evidence); -ENOSPC
 * when there is none, or for a working one. */
static int evict(struct mrc_health *h, const struct mrc_health_obs *o)
{
	uint32_t old = NO_IDX;
	for (uint32_t i = 0; !o->ok && i < h->n_obs; i++)
		if (h->obs[i].o.ok && (old == NO_IDX || h->obs[i].o.ts_ns < h->obs[old].o.ts_ns))
			old = i;
	if (old == NO_IDX)
		return -ENOSPC;
	h->obs[old] = h->obs[--h->n_obs];
	rehash(h);
	return 0;
}

/* Records (or refreshes) one observation; the newer one of a path wins.
 * since: a failure's retirement time (0 unknown); a pardoned one's
 * re-reports (same since) are dropped. */
static int put(struct mrc_health *h, const struct mrc_health_obs *o, uint64_t since)
{
	struct mrc_path p;
	if (mrc_topo_path(h->t, o->src, o->dst, o->ev, &p))
		return -EINVAL;
	uint32_t *s = slot_of(h, o->src, o->dst, o->ev);
	struct obs *e;
	bool fresh = *s == NO_IDX;
	if (!fresh) {
		e = &h->obs[*s];
		if (e->o.ts_ns > o->ts_ns || (!o->ok && e->pardon && since && e->since == since))
			return 0;
	} else {
		if (h->n_obs >= h->cfg.max_obs) {
			int rc = evict(h, o);
			if (rc)
				return rc;
			s = slot_of(h, o->src, o->dst, o->ev);
		}
		*s = h->n_obs;
		e = &h->obs[h->n_obs++];
	}
	/* Working after a failure stays news (the retraction) until it
	 * expires or fails again. */
	e->news = !o->ok || (!fresh && (e->news || !e->o.ok));
	e->pardon = 0;
	e->since = o->ok ? 0 : since;
	e->o = *o;
	/* Only links between switches are candidates: an incast into a host
	 * fails every path over its own link and nothing clears it (healthy
	 * host links were convicted); a dead host link is its own link
	 * monitor's to see, and its peers' per-path retirement's. */
	e->n_links = 0;
	for (unsigned i = 0; i < p.n_links; i++)
		if (h->t->nodes[h->t->links[p.links[i]].lower].tier != MRC_TIER_HOST)
			e->links[e->n_links++] = p.links[i];
	return 1;
}

static int put_own(struct mrc_health *h, uint32_t peer, uint32_t ev, uint8_t ok,
		   uint64_t since, uint64_t now)
{
	int rc = put(h, &(struct mrc_health_obs){ .src = h->self, .dst = peer,
		.ev = (uint16_t)ev, .ok = ok, .ts_ns = now }, since);
	return rc < 0 ? rc : 0;
}

int mrc_health_path_fail(struct mrc_health *h, uint32_t peer, uint32_t ev,
			 uint64_t now)
{
	return put_own(h, peer, ev, 0, 0, now);
}

int mrc_health_path_retired(struct mrc_health *h, uint32_t peer, uint32_t ev,
			    uint64_t since, uint64_t now)
{
	return put_own(h, peer, ev, 0, since, now);
}

int mrc_health_path_ok(struct mrc_health *h, uint32_t peer, uint32_t ev,
		       uint64_t now)
{
	return put_own(h, peer, ev, 1, 0, now);
}

int mrc_health_path_spurious(struct mrc_health *h, uint32_t peer, uint32_t ev,
			     uint64_t now)
{
	uint32_t i = ev <= UINT16_MAX ? *slot_of(h, h->self, peer, ev) : NO_IDX;
	uint64_t t0 = i != NO_IDX && !h->obs[i].o.ok ? h->obs[i].since : 0;
	int rc = put_own(h, peer, ev, 1, 0, now);
	/* The loss decision that retired it was wrong; the paths to this
	 * peer it retired at the same instant were that decision too (one
	 * packet's tries, one pass of loss detection), and the engine gives
	 * back only one of them (the rest wait for probes, 2 ms). */
	for (uint32_t k = 0; !rc && t0 && k < h->n_obs; k++) {
		struct obs *e = &h->obs[k];
		if (e->o.src != h->self || e->o.dst != peer || e->o.ok || e->since != t0 ||
		    e->o.ts_ns > now)
			continue;
		e->o.ok = 1;
		e->o.ts_ns = now;
		e->news = e->pardon = 1;
	}
	return rc;
}

int mrc_health_path_congested(struct mrc_health *h, uint32_t peer,
			      uint32_t ev, uint64_t n)
{
	struct mrc_path p;
	if (ev > UINT16_MAX || mrc_topo_path(h->t, h->self, peer, ev, &p))
		return -EINVAL;
	for (unsigned i = 0; i < p.n_links; i++)
		h->ls[p.links[i]].cong += n;
	return 0;
}

int mrc_health_merge(struct mrc_health *h, uint32_t from,
		     const struct mrc_health_obs *obs, const uint64_t *age_ns,
		     size_t n, uint64_t now)
{
	if (from >= h->t->n_hosts || from == h->self || (n && (!obs || !age_ns)))
		return -EINVAL;
	int taken = 0;
	for (size_t i = 0; i < n; i++) {
		if (obs[i].src != from || age_ns[i] >= h->cfg.ttl_ns || age_ns[i] > now)
			continue;
		struct mrc_health_obs o = obs[i];
		o.ok = o.ok ? 1 : 0;
		o.ts_ns = now - age_ns[i];
		if (put(h, &o, 0) > 0)
			taken++;
	}
	return taken;
}

/* Appends self's fresh observations with news == want to out, newest
 * first, until *n reaches max. */
static void export_pass(const struct mrc_health *h, uint64_t now, uint8_t want,
			struct mrc_health_obs *out, size_t max, size_t *n)
{
	/* Newest first by selection: max is small (one datagram's worth). */
	uint64_t below = UINT64_MAX;
	while (*n < max) {
		const struct obs *best = NULL;
		for (uint32_t i = 0; i < h->n_obs; i++) {
			const struct obs *e = &h->obs[i];
			if (e->o.src != h->self || e->news != want || e->o.ts_ns >= below ||
			    e->o.ts_ns + h->cfg.ttl_ns <= now)
				continue;
			if (!best || e->o.ts_ns > best->o.ts_ns)
				best = e;
		}
		if (!best)
			break;
		/* Equal times: take every one of them in this round. */
		for (uint32_t i = 0; i < h->n_obs && *n < max; i++)
			if (h->obs[i].o.src == h->self && h->obs[i].news == want &&
			    h->obs[i].o.ts_ns == best->o.ts_ns)
				out[(*n)++] = h->obs[i].o;
		below = best->o.ts_ns;
	}
}

int mrc_health_export(const struct mrc_health *h, uint64_t now,
		      struct mrc_health_obs *out, size_t max, size_t *n)
{
	*n = 0;
	/* Failures and paths working again first: a host with hundreds of
	 * paths acked since would otherwise never send the retraction of a
	 * failure it told, and its peers held it for the TTL. */
	export_pass(h, now, 1, out, max, n);
	export_pass(h, now, 0, out, max, n);
	return 0;
}

int mrc_health_knows_failed(const struct mrc_health *h, uint32_t src, uint32_t dst,
			    uint32_t ev)
{
	uint32_t i = ev <= UINT16_MAX ? *slot_of(h, src, dst, ev) : NO_IDX;
	return i != NO_IDX && !h->obs[i].o.ok;
}

int mrc_health_recovered_since(const struct mrc_health *h, uint64_t t)
{
	for (uint32_t i = 0; i < h->n_obs; i++) {
		const struct obs *e = &h->obs[i];
		if (e->o.src == h->self && e->o.ok && e->news && e->o.ts_ns > t)
			return 1;
	}
	return 0;
}

/* ---- eval ---------------------------------------------------------------- */

static void expire(struct mrc_health *h, uint64_t now)
{
	uint32_t w = 0;
	for (uint32_t i = 0; i < h->n_obs; i++)
		if (h->obs[i].o.ts_ns + h->cfg.ttl_ns > now)
			h->obs[w++] = h->obs[i];
	if (w != h->n_obs) {
		h->n_obs = w;
		rehash(h);
	}
}

static void touch(struct mrc_health *h, uint32_t l)
{
	struct link_st *s = &h->ls[l];
	if (s->touched)
		return;
	s->touched = 1;
	s->loc_since = s->flagged ? s->loc_since : 0;   /* OK at the last eval */
	s->good_paths = s->fail_paths = s->fail_hosts = s->hits = 0;
	s->lastrep = NO_IDX;
	s->good_max = 0;
	s->fail_min = UINT64_MAX;
	s->next = MRC_HEALTH_OK;
	h->touched[h->n_touched++] = l;
}

static bool exonerated(const struct link_st *s)
{
	return s->good_paths && s->good_max >= s->fail_min;
}

static int by_src(const void *a, const void *b, void *arg)
{
	const struct obs *o = arg;
	uint32_t x = o[*(const uint32_t *)a].o.src, y = o[*(const uint32_t *)b].o.src;
	return (x > y) - (x < y);
}

/* Pass 1: what crossed each link; returns the failed observations, sorted
 * by source (for distinct hosts). */
static uint32_t gather(struct mrc_health *h)
{
	uint32_t nf = 0;
	for (uint32_t i = 0; i < h->n_obs; i++) {
		struct obs *e = &h->obs[i];
		e->covered = 0;
		for (unsigned j = 0; j < e->n_links; j++) {
			touch(h, e->links[j]);
			struct link_st *s = &h->ls[e->links[j]];
			if (e->o.ok) {
				s->good_paths++;
				/* Within slack_ns of a failure is the same moment: a
				 * path still retired is re-reported failing at each
				 * tick, one that works as of its last ACK, a little
				 * before the tick. */
				if (e->o.ts_ns + h->cfg.slack_ns > s->good_max)
					s->good_max = e->o.ts_ns + h->cfg.slack_ns;
			} else if (e->o.ts_ns < s->fail_min) {
				s->fail_min = e->o.ts_ns;
			}
		}
		if (!e->o.ok)
			h->order[nf++] = i;
	}
	qsort_r(h->order, nf, sizeof(*h->order), by_src, h->obs);
	for (uint32_t k = 0; k < nf; k++) {
		const struct obs *e = &h->obs[h->order[k]];
		for (unsigned j = 0; j < e->n_links; j++) {
			struct link_st *s = &h->ls[e->links[j]];
			if (exonerated(s))
				continue;
			s->hits++;
			s->fail_paths++;
			s->next = MRC_HEALTH_SUSPECT;
			if (s->lastrep != e->o.src) {
				s->lastrep = e->o.src;
				s->fail_hosts++;
			}
		}
	}
	return nf;
}

static bool is_cand(const struct mrc_health *h, const struct obs *e, uint32_t l)
{
	for (unsigned j = 0; j < e->n_links; j++)
		if (e->links[j] == l)
			return !exonerated(&h->ls[l]);
	return false;
}

/* Marks the uncovered failed paths whose candidates include l as
 * explained; returns the distinct hosts among them. */
static uint32_t cover(struct mrc_health *h, uint32_t nf, uint32_t l)
{
	uint32_t hosts = 0, last = NO_IDX;
	for (uint32_t k = 0; k < nf; k++) {
		struct obs *e = &h->obs[h->order[k]];
		if (e->covered || !is_cand(h, e, l))
			continue;
		e->covered = 1;
		if (e->o.src != last) {
			last = e->o.src;
			hosts++;
		}
		for (unsigned j = 0; j < e->n_links; j++)
			if (!exonerated(&h->ls[e->links[j]]))
				h->ls[e->links[j]].hits--;
	}
	return hosts;
}

/* Another candidate explains as many of l's paths as l does. */
static bool tied(const struct mrc_health *h, uint32_t nf, uint32_t l)
{
	uint32_t hits = h->ls[l].hits;
	for (uint32_t k = 0; k < nf; k++) {
		const struct obs *e = &h->obs[h->order[k]];
		if (e->covered || !is_cand(h, e, l))
			continue;
		for (unsigned j = 0; j < e->n_links; j++) {
			uint32_t m = e->links[j];
			if (m != l && !exonerated(&h->ls[m]) && h->ls[m].hits == hits)
				return true;
		}
	}
	return false;
}

/* Pass 2: the greedy cover. */
static void locate(struct mrc_health *h, uint32_t nf, uint64_t now)
{
	for (;;) {
		uint32_t best = NO_IDX;
		for (uint32_t i = 0; i < h->n_touched; i++) {
			uint32_t l = h->touched[i];
			if (h->ls[l].hits && (best == NO_IDX || h->ls[l].hits > h->ls[best].hits))
				best = h->touched[i];
		}
		if (best == NO_IDX)
			return;
		struct link_st *s = &h->ls[best];
		bool amb = tied(h, nf, best);
		uint32_t hits = s->hits;
		uint32_t hosts = cover(h, nf, best);
		if (amb || hits < h->cfg.min_paths)
			continue;
		/* At every eval for confirm_ns: congestion's failures clear. */
		s->chosen = 1;
		if (!s->loc_since)
			s->loc_since = now + 1;   /* 0 is "not located" */
		if (now + 1 - s->loc_since < h->cfg.confirm_ns)
			continue;
		s->next = hosts >= h->cfg.k_hosts ? MRC_HEALTH_DENIED : MRC_HEALTH_LOCATED;
	}
}

static int apply(struct mrc_health *h, uint32_t l, uint8_t next, uint64_t now)
{
	struct link_st *s = &h->ls[l];
	if (s->state == next)
		return 0;
	s->state = next;
	s->changed = now;
	return 1;
}

int mrc_health_eval(struct mrc_health *h, uint64_t now)
{
	expire(h, now);
	h->n_touched = 0;
	uint32_t nf = gather(h);
	locate(h, nf, now);
	int changed = 0;
	/* Links flagged before and not touched now are OK again. */
	for (uint32_t i = 0; i < h->n_flagged; i++) {
		uint32_t l = h->flagged[i];
		h->ls[l].flagged = 0;
		if (!h->ls[l].touched)
			changed += apply(h, l, MRC_HEALTH_OK, now);
	}
	h->n_flagged = 0;
	for (uint32_t i = 0; i < h->n_touched; i++) {
		uint32_t l = h->touched[i];
		struct link_st *s = &h->ls[l];
		s->touched = 0;
		s->loc_since = s->chosen ? s->loc_since : 0;   /* a run broken */
		s->chosen = 0;
		changed += apply(h, l, s->next, now);
		if (s->state != MRC_HEALTH_OK && !s->flagged) {
			s->flagged = 1;
			h->flagged[h->n_flagged++] = l;
		}
	}
	return changed;
}

int mrc_health_link_get(const struct mrc_health *h, uint32_t link,
			struct mrc_health_link *out)
{
	if (link >= h->t->n_links)
		return -EINVAL;
	const struct link_st *s = &h->ls[link];
	*out = (struct mrc_health_link){ .state = s->state, .cong = s->cong,
		.changed_ns = s->changed };
	if (s->state != MRC_HEALTH_OK) {
		out->fail_paths = s->fail_paths;
		out->fail_hosts = s->fail_hosts;
		out->good_paths = s->good_paths;
		out->good_ns = s->good_max ? s->good_max - h->cfg.slack_ns : 0;
		out->fail_ns = s->fail_min != UINT64_MAX ? s->fail_min : 0;
	}
	out->loc_ns = s->loc_since ? s->loc_since - 1 : 0;
	return 0;
}

int mrc_health_link_evidence(const struct mrc_health *h, uint32_t link,
			     struct mrc_health_obs *out, size_t max, size_t *n)
{
	*n = 0;
	if (link >= h->t->n_links)
		return -EINVAL;
	for (uint32_t i = 0; i < h->n_obs; i++) {
		const struct obs *e = &h->obs[i];
		if (e->o.ok || !is_cand(h, e, link))
			continue;
		/* Insertion, newest first: max is small (a record's worth). */
		size_t k = *n < max ? (*n)++ : max;
		for (; k && out[k - 1].ts_ns < e->o.ts_ns; k--)
			if (k < max)
				out[k] = out[k - 1];
		if (k < max)
			out[k] = e->o;
	}
	return 0;
}

int mrc_health_links(const struct mrc_health *h, uint8_t min, uint32_t *ids,
		     size_t max, size_t *n)
{
	*n = 0;
	for (uint32_t l = 0; l < h->t->n_links; l++) {
		if (h->ls[l].state < min || h->ls[l].state == MRC_HEALTH_OK)
			continue;
		if (*n < max)
			ids[*n] = l;
		(*n)++;
	}
	return *n > max ? -ENOSPC : 0;
}

int mrc_health_path_denied(const struct mrc_health *h, uint32_t peer,
			   uint32_t ev)
{
	struct mrc_path p;
	if (mrc_topo_path(h->t, h->self, peer, ev, &p))
		return 0;
	uint32_t s = *slot_of(h, h->self, peer, ev);
	const struct mrc_health_obs *own = s != NO_IDX ? &h->obs[s].o : NULL;
	/* Its own failure: the engine has it ASSUMED_BAD and probes it. */
	if (own && !own->ok)
		return 0;
	for (unsigned i = 0; i < p.n_links; i++) {
		const struct link_st *l = &h->ls[p.links[i]];
		/* Seen working here since the link was denied: local wins. */
		if (l->state == MRC_HEALTH_DENIED && !(own && own->ts_ns > l->changed))
			return 1;
	}
	return 0;
}
