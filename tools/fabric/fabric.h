/* mrc-fabric internals: an emulated fabric in network namespaces.
 *
 * Every node (host or switch) is a namespace named PREFIX-NODE; every link
 * a veth pair created directly inside the two namespaces, its end in node X
 * named after the node at the other end.  Nothing lives in the caller's
 * namespace, so deleting the namespaces whose names start with "PREFIX-"
 * removes everything (also after a crash).  The topology and the fault
 * ledger are kept in /run/mrc-fabric/PREFIX/. docs/fabric.md has the rest.
 */
#ifndef MRC_TOOLS_FABRIC_H
#define MRC_TOOLS_FABRIC_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "srv6/nl.h"
#include "srv6/usid.h"
#include "topology/topo.h"

#define FAB_STATE_ROOT "/run/mrc-fabric"
#define FAB_PREFIX_MAX 16
#define FAB_NS_MAX (FAB_PREFIX_MAX + 1 + MRC_TOPO_NAME_MAX + 1)
#define FAB_SR_DEV "sr0"          /* ifb device the SID routes hang on */
#define FAB_NFT_TABLE "mrcfab"    /* netdev table of a namespace's faults */

struct fab {
	const char *prefix;
	bool json;
	bool verbose;
	bool ecmp;                /* plain IPv6 ECMP routes for baselines */
	int urgent_dscp;          /* DSCP of the priority band on rate-limited
	                             links (up --urgent-dscp; mrcd.conf's
	                             dscp_urgent, 46 by default); -1: none */
	struct mrc_topo *t;
	struct mrc_usid_block blk;
};

/* ---- growable text buffer (ip/tc/nft batches) ------------------------- */
struct sbuf {
	char *p;
	size_t len, cap;
	bool oom;
};
void sb_printf(struct sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sb_free(struct sbuf *b);

/* ---- messages ---------------------------------------------------------- */
void fab_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- namespaces and child processes (ns.c) ---------------------------- */
void fab_ns_name(const struct fab *f, uint32_t node, char out[FAB_NS_MAX]);
/* Names of the existing namespaces of this prefix (caller frees each and
 * the array). */
int fab_ns_list(const char *prefix, char ***names, size_t *n);
void fab_ns_list_free(char **names, size_t n);
/* Moves this thread into namespace `name`; fab_ns_leave returns. */
int fab_ns_enter(const char *name, int *saved);
void fab_ns_leave(int saved);

/* Children run in parallel: start them all, then wait for all. */
struct fab_jobs;
struct fab_jobs *fab_jobs_new(void);
/* Runs argv inside namespace ns (NULL: here) with `input` as its stdin;
 * quiet: its stderr goes to /dev/null (for -force batches whose errors are
 * expected). */
int fab_job_start(struct fab_jobs *j, const char *ns, char *const argv[],
		  const struct sbuf *input, bool quiet, const char *what);
/* Waits for every job; returns 0 if all exited 0, else -EIO after naming
 * each failed job on stderr.  Frees j. */
int fab_jobs_wait(struct fab_jobs *j);
/* One job, waited for. */
int fab_run(const char *ns, char *const argv[], const struct sbuf *input,
	    bool quiet, const char *what);

/* ---- addresses and per-node configuration (plan.c) -------------------- */
/* The SID prefix of a uSID as text ("fcbb:bb00:1003::/48"). */
void fab_sid_prefix(const struct fab *f, uint16_t usid, char *buf, size_t len);
/* The uSID destination address of a path. */
int fab_path_addr(const struct fab *f, const struct mrc_path *p, char *buf, size_t len);
/* End of link l inside node: whether node is the link's lower end. */
bool fab_link_is_lower(const struct mrc_topo *t, uint32_t link, uint32_t node);
uint32_t fab_link_peer(const struct mrc_topo *t, uint32_t link, uint32_t node);
/* The ip batch that configures node (restore: "replace" routes, links up,
 * no address changes).  tc: rate limits (may stay empty). */
void fab_plan_node(const struct fab *f, uint32_t node, bool restore,
		   struct sbuf *ip, struct sbuf *tc);
/* Namespace-wide sysctls, applied inside the node's namespace before its
 * links exist. */
int fab_sysctls(const struct fab *f, uint32_t node);

/* ---- state (state.c) --------------------------------------------------- */
int fab_prefix_check(const char *prefix);
void fab_state_dir(const char *prefix, char *buf, size_t len);
int fab_state_save(const struct fab *f);
/* Loads the topology and options of a running fabric into f. */
int fab_state_load(struct fab *f);
int fab_state_remove(const char *prefix);
int fab_ledger_add(const struct fab *f, const char *line);
/* Lines of the fault ledger, NULL-terminated (free with fab_ledger_free). */
char **fab_ledger_read(const struct fab *f);
void fab_ledger_free(char **lines);
int fab_ledger_clear(const struct fab *f);

/* ---- commands ---------------------------------------------------------- */
int fab_up(struct fab *f);
int fab_down(const char *prefix, bool quiet);
int fab_fault(struct fab *f, const char *kind, const char *target, const char *arg,
	      bool silent);
int fab_restore(struct fab *f);
int fab_show(const struct fab *f);
int fab_path(const struct fab *f, int argc, char **argv);
/* The path options of `path` and `probe`: --plane P (--spine S |
 * --direct) | --ev E.  fab_sel_opt takes one getopt result: 1 if it was
 * one of them, 0 if not, -EINVAL (said) for a bad number; fab_sel_ev
 * resolves them to an EV, -1 when none was given. */
struct fab_sel {
	long plane, spine, ev;
	bool direct;
};
#define FAB_SEL_INIT { -1, -1, -1, false }
#define FAB_SEL_OPTIONS                                                                  \
	{ "plane", required_argument, NULL, 'P' }, { "spine", required_argument, NULL, 'S' }, \
	{ "direct", no_argument, NULL, 'D' }, { "ev", required_argument, NULL, 'E' }
int fab_sel_opt(struct fab_sel *s, int c, const char *arg);
int fab_sel_ev(const struct fab *f, const struct fab_sel *s, long *ev);
/* A whole decimal number in lo..hi for option NAME, or -EINVAL (said). */
int fab_num(const char *name, const char *arg, long lo, long hi, long *out);
/* A host by name or index (mrc_topo_host_lookup), or -ENOENT (said). */
int fab_host_arg(const struct fab *f, const char *name, uint32_t *h);
int fab_counters(const struct fab *f, int argc, char **argv);
int fab_probe(const struct fab *f, int argc, char **argv);

/* ---- the tc BPF trimmer (trim_load.c) --------------------------------- */
/* Attaches the trimmer at egress of dev in namespace ns, trimming
 * permyriad/10000 of the eligible packets. */
int fab_trim_attach(const char *ns, const char *dev, uint32_t permyriad);
/* Removes the clsact hook (and so the trimmer) of dev; no hook is fine. */
int fab_trim_detach(const char *ns, const char *dev);

#endif
