/* Fabric-link health (issue 34 items 1-2): path outcomes in, suspect and
 * located links out.  Sans-IO and pure: the caller (mrcd's core, mrcsim)
 * feeds it observations of paths, each a (src host, dst host, EV) the
 * topology turns into links, with the caller's clock; it keeps no socket,
 * timer or thread.  docs/health.md is the full description.
 *
 * An observation says a path failed (its EV was retired for loss or an
 * RTO, or a probe of it went unanswered) or worked (a probe answered, data
 * acknowledged).  Congestion (ECN, trims) is counted per link for the
 * operator and never convicts: a congested path still delivers.
 *
 * Localisation (mrc_health_eval): a link is exonerated when a path through
 * it was seen working no earlier than the first failure through it; the
 * rest of a failed path's links are its candidates.  A greedy cover (the
 * tomography of "SCORE", Kompella et al. 2005) then takes the candidate
 * link that explains the most failed paths, as long as no other candidate
 * of those paths explains as many (a tie is ambiguous: both stay suspect);
 * a link that explains at least min_paths failed paths, at every eval
 * for confirm_ns (congestion's failures clear by then), is LOCATED, and
 * LOCATED with failed paths from at least k_hosts distinct hosts is
 * DENIED, the state other hosts act on.
 *
 * Sharing: a host's own observations (src == itself) are what it exports;
 * what it merges from another host is accepted only for paths whose
 * source is that host (its own paths), so a liar can only lie about paths
 * it owns, and k_hosts of them are needed to deny a link no honest host's
 * working path crosses.  Observations expire after ttl_ns.
 *
 * Functions return 0 or a negative errno. */
#ifndef MRC_HEALTH_HEALTH_H
#define MRC_HEALTH_HEALTH_H

#include <stddef.h>
#include <stdint.h>

#include "topology/topo.h"

#ifdef __cplusplus
extern "C" {
#endif

struct mrc_health_cfg {
	uint32_t max_obs;       /* observations kept (0: 16384) */
	uint32_t min_paths;     /* failed paths a LOCATED link explains (0: 2) */
	uint32_t k_hosts;       /* distinct hosts for DENIED (0: 2) */
	uint64_t ttl_ns;        /* an observation's life (0: 1 s) */
	uint64_t slack_ns;      /* a working path this much older than a
	                           failure still exonerates (0: 20 ms): both
	                           are read once per tick, failures as of the
	                           tick, working paths as of their last ACK */
	uint64_t confirm_ns;    /* a link is LOCATED (or DENIED) only once it
	                           has been the located explanation at every
	                           eval for this long (0: at once); until then
	                           it stays SUSPECT.  Congestion's failures
	                           are cleared by the link's working paths
	                           within it; a dead link's are not */
};

enum mrc_health_state {
	MRC_HEALTH_OK = 0,
	MRC_HEALTH_SUSPECT,     /* a candidate of a failed path */
	MRC_HEALTH_LOCATED,     /* the one explanation of >= min_paths */
	MRC_HEALTH_DENIED,      /* located, on >= k_hosts hosts' evidence */
};

struct mrc_health_link {
	uint8_t state;          /* enum mrc_health_state */
	uint32_t fail_paths;    /* failed paths it is a candidate of */
	uint32_t fail_hosts;    /* distinct hosts among them */
	uint32_t good_paths;    /* working paths through it */
	uint64_t cong;          /* congestion signals on paths through it */
	uint64_t changed_ns;    /* when state last changed (0: never) */
	uint64_t good_ns;       /* its newest working path (0: none) */
	uint64_t fail_ns;       /* its oldest failure counted (0: none) */
	uint64_t loc_ns;        /* since when it has been the located
	                           explanation at every eval (0: it is not) */
};

/* One observation as it travels between hosts. */
struct mrc_health_obs {
	uint32_t src, dst;      /* host indexes */
	uint16_t ev;
	uint8_t ok;             /* 1 worked, 0 failed */
	uint64_t ts_ns;         /* when (the observer's clock, see merge) */
};

struct mrc_health;

/* t must outlive h.  self is this host's index. */
int mrc_health_new(const struct mrc_topo *t, uint32_t self,
		   const struct mrc_health_cfg *cfg, struct mrc_health **out);
void mrc_health_free(struct mrc_health *h);

/* A local outcome of the path self -> peer on ev.  -EINVAL for a path the
 * topology does not have; when the table is full, a failure replaces the
 * oldest working observation, a working one is refused (-ENOSPC). */
int mrc_health_path_fail(struct mrc_health *h, uint32_t peer, uint32_t ev,
			 uint64_t now);
int mrc_health_path_ok(struct mrc_health *h, uint32_t peer, uint32_t ev,
		       uint64_t now);
/* Still retired (a failure) as of now, since the engine retired it at
 * `since`: as path_fail, but dropped while that retirement is pardoned
 * (path_spurious). */
int mrc_health_path_retired(struct mrc_health *h, uint32_t peer, uint32_t ev,
			    uint64_t since, uint64_t now);
/* The engine found the loss that retired self -> peer on ev spurious (a
 * late ACK): it works as of now, and so do this host's other paths to
 * peer retired at the same instant (the same loss decision), which stay
 * so while the engine keeps them retired from that instant. */
int mrc_health_path_spurious(struct mrc_health *h, uint32_t peer, uint32_t ev,
			     uint64_t now);
/* ECN echo or trim on self -> peer on ev: counted, never convicts. */
int mrc_health_path_congested(struct mrc_health *h, uint32_t peer,
			      uint32_t ev, uint64_t n);

/* Another host's observations.  Only those with src == from are taken
 * (a host speaks for its own paths); each age_ns is how old it was when
 * sent, so clocks need not agree: it is stored as now - age.  Returns how
 * many were taken. */
int mrc_health_merge(struct mrc_health *h, uint32_t from,
		     const struct mrc_health_obs *obs, const uint64_t *age_ns,
		     size_t n, uint64_t now);
/* 1 when this host holds a failure of src -> dst on ev (its own or
 * merged, not expired at the last eval or since); else 0. */
int mrc_health_knows_failed(const struct mrc_health *h, uint32_t src, uint32_t dst,
			    uint32_t ev);
/* This host's own fresh observations, at most max; *n set: first its
 * failures and its paths working since a failure (the news a peer that
 * heard the failure needs), then the others, each part newest first.
 * What a host shares: never another host's. */
int mrc_health_export(const struct mrc_health *h, uint64_t now,
		      struct mrc_health_obs *out, size_t max, size_t *n);

/* 1 when one of this host's own paths works again after a failure, as
 * of a time after t (news a peer that heard the failure needs); else 0. */
int mrc_health_recovered_since(const struct mrc_health *h, uint64_t t);

/* Expires old observations and recomputes every link's state.  Returns
 * the number of links whose state changed. */
int mrc_health_eval(struct mrc_health *h, uint64_t now);

/* A link's state as of the last eval; -EINVAL for no such link. */
int mrc_health_link_get(const struct mrc_health *h, uint32_t link,
			struct mrc_health_link *out);
/* Links in state >= min (enum mrc_health_state), ascending ids; *n counts
 * all, storage stops at max. */
int mrc_health_links(const struct mrc_health *h, uint8_t min, uint32_t *ids,
		     size_t max, size_t *n);
/* The failed paths through link (newest first, at most max; *n set): the
 * evidence against it, as of the last eval. */
int mrc_health_link_evidence(const struct mrc_health *h, uint32_t link,
			     struct mrc_health_obs *out, size_t max, size_t *n);
/* 1 when self -> peer on ev crosses a DENIED link, unless this host's own
 * observation of that very path overrides it: its failure (the engine has
 * the path ASSUMED_BAD and probes it) or its success since the link was
 * denied (local probes override shared evidence); else 0. */
int mrc_health_path_denied(const struct mrc_health *h, uint32_t peer,
			   uint32_t ev);

const char *mrc_health_state_name(unsigned state);

#ifdef __cplusplus
}
#endif

#endif
