/* Every conviction counted (issue 34, docs/health.md "Convictions"): each
 * time a link becomes LOCATED or DENIED, counted, and a bounded record of
 * it kept (the link, when, the evidence: failed paths through it) that
 * outlives the link's healing.  A poll of the links' states misses brief
 * convictions (one denied on 7 hosts for ~2 s between polls of the
 * emulated fabric); these counts do not.  Sans-IO: the caller calls
 * mrc_health_record_note after each mrc_health_eval.
 *
 * Functions return 0 or a negative errno. */
#ifndef MRC_HEALTH_RECORD_H
#define MRC_HEALTH_RECORD_H

#include <stdint.h>

#include "health/health.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MRC_HEALTH_REC_MAX 32           /* records kept, newest */
#define MRC_HEALTH_REC_EVIDENCE 8       /* failed paths kept per record */

/* One conviction: from the eval that located (or denied) the link to the
 * one that found it below LOCATED again. */
struct mrc_health_rec {
	uint64_t seq;           /* 0, 1, ... in order of conviction */
	uint32_t link;
	uint8_t state;          /* the highest it reached: LOCATED or DENIED */
	uint64_t located_ns;    /* when it became LOCATED or DENIED */
	uint64_t denied_ns;     /* when DENIED (0: not) */
	uint64_t cleared_ns;    /* when below LOCATED again (0: not yet) */
	/* as of the conviction (its latest step up): */
	uint32_t fail_paths, fail_hosts, good_paths;
	uint64_t good_ns;       /* its newest working path (0: none) */
	uint32_t n_evidence;    /* failed paths through it kept (the newest,
	                           at most MRC_HEALTH_REC_EVIDENCE) */
	struct mrc_health_obs evidence[MRC_HEALTH_REC_EVIDENCE];
};

struct mrc_health_record;

/* For links of t (which must outlive r). */
int mrc_health_record_new(const struct mrc_topo *t, struct mrc_health_record **out);
void mrc_health_record_free(struct mrc_health_record *r);

/* After mrc_health_eval(h, now): counts every link that became LOCATED
 * (from OK or SUSPECT, or straight to DENIED) and every one that became
 * DENIED, opens a record for each conviction, steps it up on a denial and
 * closes it when the link falls below LOCATED.  Returns the convictions
 * counted now (located + denied). */
int mrc_health_record_note(struct mrc_health_record *r, const struct mrc_health *h,
			   uint64_t now);

/* Counts since r was made. */
uint64_t mrc_health_record_located(const struct mrc_health_record *r);
uint64_t mrc_health_record_denied(const struct mrc_health_record *r);

/* The i-th record kept, oldest first; -ENOENT past the last. */
int mrc_health_record_get(const struct mrc_health_record *r, uint32_t i,
			  struct mrc_health_rec *out);

#ifdef __cplusplus
}
#endif

#endif
