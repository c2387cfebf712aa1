/* `up` and `down`.
 *
 * up, in four steps, each one batch (or one batch per namespace, all in
 * parallel): create every namespace; set its sysctls (DAD off before any
 * link exists); create every veth pair directly inside its two namespaces
 * and every switch's ifb; configure each namespace (links, addresses,
 * routes, rate limits).  Any failure tears down what was built.
 *
 * down deletes every namespace named PREFIX-*, whatever state it is in,
 * which takes all links, routes, nftables tables and tc filters with it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "tools/fabric/fabric.h"

static char *const ip_batch[] = { "ip", "-b", "-", NULL };
static char *const tc_batch[] = { "tc", "-b", "-", NULL };

int fab_down(const char *prefix, bool quiet)
{
	char **names;
	size_t n;
	int rc = fab_ns_list(prefix, &names, &n);
	if (rc) {
		fab_err("listing /run/netns: %s", strerror(-rc));
		return rc;
	}
	if (n) {
		struct sbuf b = {0};
		for (size_t i = 0; i < n; i++)
			sb_printf(&b, "netns del %s\n", names[i]);
		rc = b.oom ? -ENOMEM : fab_run(NULL, ip_batch, &b, false, "ip netns del batch");
		sb_free(&b);
	}
	fab_ns_list_free(names, n);
	int rc2 = fab_state_remove(prefix);
	if (!quiet)
		printf("removed %zu namespaces of fabric '%s'\n", n, prefix);
	return rc ? rc : rc2;
}

static int create_namespaces(const struct fab *f)
{
	struct sbuf b = {0};
	char ns[FAB_NS_MAX];
	for (uint32_t i = 0; i < f->t->n_nodes; i++) {
		fab_ns_name(f, i, ns);
		sb_printf(&b, "netns add %s\n", ns);
	}
	int rc = b.oom ? -ENOMEM : fab_run(NULL, ip_batch, &b, false, "ip netns add batch");
	sb_free(&b);
	if (rc)
		return rc;
	/* Sysctls go through /proc/sys/net of the namespace this thread is in:
	 * hop into each one in turn (microseconds each). */
	for (uint32_t i = 0; i < f->t->n_nodes; i++) {
		int saved;
		fab_ns_name(f, i, ns);
		if ((rc = fab_ns_enter(ns, &saved))) {
			fab_err("entering %s: %s", ns, strerror(-rc));
			return rc;
		}
		rc = fab_sysctls(f, i);
		fab_ns_leave(saved);
		if (rc)
			return rc;
	}
	return 0;
}

static int create_links(const struct fab *f)
{
	const struct mrc_topo *t = f->t;
	struct sbuf b = {0};
	char na[FAB_NS_MAX], nb[FAB_NS_MAX];
	for (uint32_t i = 0; i < t->n_links; i++) {
		const struct mrc_link *l = &t->links[i];
		fab_ns_name(f, l->lower, na);
		fab_ns_name(f, l->upper, nb);
		sb_printf(&b, "link add name %s mtu %u netns %s type veth peer name %s mtu %u netns %s\n",
			  t->nodes[l->upper].name, l->mtu, na, t->nodes[l->lower].name, l->mtu, nb);
	}
	for (uint32_t i = 0; i < t->n_nodes; i++)
		if (t->nodes[i].tier != MRC_TIER_HOST) {
			fab_ns_name(f, i, na);
			sb_printf(&b, "link add name " FAB_SR_DEV " netns %s type ifb\n", na);
		}
	int rc = b.oom ? -ENOMEM : fab_run(NULL, ip_batch, &b, false, "ip link add batch");
	sb_free(&b);
	return rc;
}

static int configure(const struct fab *f)
{
	struct fab_jobs *j = fab_jobs_new();
	if (!j)
		return -ENOMEM;
	int rc = 0;
	for (uint32_t i = 0; i < f->t->n_nodes && !rc; i++) {
		struct sbuf ip = {0}, tc = {0};
		char ns[FAB_NS_MAX], what[64];
		fab_ns_name(f, i, ns);
		fab_plan_node(f, i, false, &ip, &tc);
		if (f->verbose)
			printf("# %s: ip -b -\n%s%s%s", ns, ip.p ? ip.p : "",
			       tc.len ? "# tc -b -\n" : "", tc.len ? tc.p : "");
		snprintf(what, sizeof(what), "ip batch in %s", ns);
		rc = ip.oom || tc.oom ? -ENOMEM : fab_job_start(j, ns, ip_batch, &ip, false, what);
		if (!rc && tc.len) {
			snprintf(what, sizeof(what), "tc batch in %s", ns);
			rc = fab_job_start(j, ns, tc_batch, &tc, false, what);
		}
		sb_free(&ip);
		sb_free(&tc);
	}
	int rc2 = fab_jobs_wait(j);
	return rc ? rc : rc2;
}

int fab_up(struct fab *f)
{
	char **names;
	size_t n;
	int rc = fab_ns_list(f->prefix, &names, &n);
	fab_ns_list_free(names, n);
	if (rc)
		return rc;
	if (n) {
		fab_err("fabric '%s' is already up (%zu namespaces named %s-*); run `mrc-fabric -p %s down` first",
			f->prefix, n, f->prefix, f->prefix);
		return -EEXIST;
	}
	double t0 = mrc__mono_s();
	if ((rc = fab_state_save(f))) {
		fab_err("saving state under " FAB_STATE_ROOT ": %s", strerror(-rc));
		return rc;
	}
	if ((rc = create_namespaces(f)) || (rc = create_links(f)) || (rc = configure(f))) {
		fab_err("up failed; removing what was built");
		fab_down(f->prefix, true);
		return rc;
	}
	double dt = mrc__mono_s() - t0;
	if (f->json)
		printf("{\"prefix\":\"%s\",\"namespaces\":%u,\"links\":%u,\"seconds\":%.3f}\n",
		       f->prefix, f->t->n_nodes, f->t->n_links, dt);
	else
		printf("fabric '%s' up: %u namespaces (%u hosts), %u links, %u planes in %.3f s\n",
		       f->prefix, f->t->n_nodes, f->t->n_hosts, f->t->n_links, f->t->planes, dt);
	return 0;
}
