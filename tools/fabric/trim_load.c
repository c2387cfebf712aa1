/* Loads the embedded trimmer with libbpf and attaches it at a port's
 * egress (clsact) inside a fabric namespace.  The tc filter keeps the
 * program alive after this process exits; restore removes the hook. */
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>

#include <bpf/libbpf.h>

#include "tools/fabric/fabric.h"

extern const char mrc_trim_bpf_obj[], mrc_trim_bpf_obj_end[];

static int quiet_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	/* libbpf's debug chatter hides the one line that matters. */
	return level == LIBBPF_WARN ? vfprintf(stderr, fmt, ap) : 0;
}

static int hook_for(const char *dev, struct bpf_tc_hook *h)
{
	int ifindex = (int)if_nametoindex(dev);
	if (!ifindex)
		return -ENODEV;
	memset(h, 0, sizeof(*h));
	h->sz = sizeof(*h);
	h->ifindex = ifindex;
	h->attach_point = BPF_TC_EGRESS;
	return 0;
}

int fab_trim_attach(const char *ns, const char *dev, uint32_t permyriad)
{
	libbpf_set_print(quiet_print);
	struct bpf_object *obj = bpf_object__open_mem(mrc_trim_bpf_obj,
		(size_t)(mrc_trim_bpf_obj_end - mrc_trim_bpf_obj), NULL);
	if (!obj)
		return -errno ? -errno : -EINVAL;
	int rc = -ENOENT;
	struct bpf_map *m;
	bpf_object__for_each_map(m, obj) {
		size_t sz;
		const void *init;
		/* .rodata holds trim_permyriad only (4 bytes). */
		if (strstr(bpf_map__name(m), ".rodata") &&
		    (init = bpf_map__initial_value(m, &sz)) && sz == sizeof(permyriad))
			rc = bpf_map__set_initial_value(m, &permyriad, sizeof(permyriad));
	}
	if (!rc)
		rc = bpf_object__load(obj);
	struct bpf_program *prog = rc ? NULL : bpf_object__find_program_by_name(obj, "mrc_trim");
	if (!rc && !prog)
		rc = -ENOENT;
	int saved = -1;
	if (!rc)
		rc = fab_ns_enter(ns, &saved);
	if (!rc) {
		struct bpf_tc_hook h;
		rc = hook_for(dev, &h);
		if (!rc) {
			rc = bpf_tc_hook_create(&h);
			if (rc == -EEXIST)
				rc = 0;
		}
		if (!rc) {
			/* Handle/priority 1: a new trim replaces the old one. */
			LIBBPF_OPTS(bpf_tc_opts, o, .handle = 1, .priority = 1,
				    .prog_fd = bpf_program__fd(prog), .flags = BPF_TC_F_REPLACE);
			rc = bpf_tc_attach(&h, &o);
		}
		fab_ns_leave(saved);
	}
	bpf_object__close(obj);
	if (rc)
		fab_err("trimmer on %s in %s: %s", dev, ns, strerror(-rc));
	return rc;
}

int fab_trim_detach(const char *ns, const char *dev)
{
	/* Most ports have no hook: the kernel's "no qdisc" is the normal case. */
	libbpf_set_print(NULL);
	int saved, rc = fab_ns_enter(ns, &saved);
	if (rc)
		return rc;
	struct bpf_tc_hook h;
	rc = hook_for(dev, &h);
	if (!rc) {
		/* Destroying EGRESS alone only flushes its filters; taking the
		 * whole clsact qdisc away leaves the port as `up` made it. */
		h.attach_point = BPF_TC_INGRESS | BPF_TC_EGRESS;
		rc = bpf_tc_hook_destroy(&h);
		if (rc == -ENOENT || rc == -EINVAL)
			rc = 0;
	}
	fab_ns_leave(saved);
	return rc;
}
