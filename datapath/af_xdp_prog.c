/* The af_xdp datapath's XDP program (af_xdp.bpf.c, compiled by
 * datapath.mk and embedded here so mrcd needs no file at run time):
 * loads it with libbpf for one NIC and mrc's port, points its XSKMAP at
 * the plane's AF_XDP socket and attaches it; detach removes it only if it
 * is still ours.  libbpf rather than libxdp's multiprog dispatcher: one
 * program per NIC is all mrc needs, without the dispatcher's bpffs pins
 * and program chain. */
#include <errno.h>
#include <linux/if_link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "datapath/af_xdp.h"

__asm__(".section .rodata\n"
	".balign 8\n"
	".global mrc__dp_af_xdp_bpf_obj\n"
	"mrc__dp_af_xdp_bpf_obj:\n"
	".incbin \"" MRC_AF_XDP_BPF_OBJ "\"\n"
	".global mrc__dp_af_xdp_bpf_obj_end\n"
	"mrc__dp_af_xdp_bpf_obj_end:\n"
	".previous\n");
extern const char mrc__dp_af_xdp_bpf_obj[], mrc__dp_af_xdp_bpf_obj_end[];

struct mrc__dp_xdp_prog {
	struct bpf_object *obj;
	int ifindex, prog_fd;
	uint32_t flags;
};

static int quiet_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	/* libbpf's debug chatter hides the one line that matters. */
	return level == LIBBPF_WARN ? vfprintf(stderr, fmt, ap) : 0;
}

static int load(struct mrc__dp_xdp_prog *p, uint16_t port, uint32_t queue, int xsk_fd,
		const char **what)
{
	p->obj = bpf_object__open_mem(mrc__dp_af_xdp_bpf_obj,
		(size_t)(mrc__dp_af_xdp_bpf_obj_end - mrc__dp_af_xdp_bpf_obj), NULL);
	if (!p->obj) {
		*what = "open the embedded object";
		return errno ? -errno : -EINVAL;
	}
	int rc = -ENOENT;
	struct bpf_map *m, *xsks = bpf_object__find_map_by_name(p->obj, "mrc_xsks");
	bpf_object__for_each_map(m, p->obj) {
		size_t sz;
		/* .rodata holds mrc_port only. */
		if (strstr(bpf_map__name(m), ".rodata") && bpf_map__initial_value(m, &sz) &&
		    sz == sizeof(port))
			rc = bpf_map__set_initial_value(m, &port, sizeof(port));
	}
	*what = "set the port";
	if (!rc && !xsks)
		rc = -ENOENT;
	if (!rc) {
		*what = "load";
		rc = bpf_object__load(p->obj);
	}
	if (!rc) {
		*what = "XSKMAP update";
		int fd = bpf_map__fd(xsks);
		rc = bpf_map_update_elem(fd, &queue, &xsk_fd, 0) ? -errno : 0;
	}
	struct bpf_program *prog = rc ? NULL : bpf_object__find_program_by_name(p->obj, "mrc_xdp");
	if (!rc && !prog)
		rc = -ENOENT;
	if (!rc)
		p->prog_fd = bpf_program__fd(prog);
	return rc;
}

int mrc__dp_xdp_prog_attach(struct mrc__dp_xdp_prog **out, int ifindex, uint16_t port,
			 uint32_t queue, int xsk_fd, const char *mode, int *native,
			 char *why, size_t whylen)
{
	libbpf_set_print(quiet_print);
	struct mrc__dp_xdp_prog *p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->ifindex = ifindex;
	const char *what = "";
	int rc = load(p, port, queue, xsk_fd, &what);
	/* Native first: the driver runs it before any skb exists.  Generic
	 * (skb) mode works on every device, a veth without native support
	 * included. */
	int try_native = !mode || !mode[0] || !strcmp(mode, "native");
	int try_skb = !mode || !mode[0] || !strcmp(mode, "skb");
	if (!rc && !try_native && !try_skb) {
		what = "xdp_mode must be native or skb";
		rc = -EINVAL;
	}
	if (!rc) {
		what = "attach";
		rc = -EOPNOTSUPP;
		if (try_native && !(rc = bpf_xdp_attach(ifindex, p->prog_fd, XDP_FLAGS_DRV_MODE, NULL)))
			p->flags = XDP_FLAGS_DRV_MODE;
		else if (try_skb && !(rc = bpf_xdp_attach(ifindex, p->prog_fd, XDP_FLAGS_SKB_MODE, NULL)))
			p->flags = XDP_FLAGS_SKB_MODE;
	}
	if (rc) {
		if (why)
			snprintf(why, whylen, "XDP program: %s: %s", what, strerror(-rc));
		bpf_object__close(p->obj);
		free(p);
		return rc;
	}
	*native = p->flags == XDP_FLAGS_DRV_MODE;
	*out = p;
	return 0;
}

void mrc__dp_xdp_prog_detach(struct mrc__dp_xdp_prog *p)
{
	if (!p)
		return;
	LIBBPF_OPTS(bpf_xdp_attach_opts, o, .old_prog_fd = p->prog_fd);
	(void)bpf_xdp_detach(p->ifindex, p->flags | XDP_FLAGS_REPLACE, &o);
	bpf_object__close(p->obj);
	free(p);
}
