/* The libfabric provider's test fixture (tests/test_fi_*.c): a loopback
 * mrcd (mrcd_spawn), libfabric pointed at this build's libmrc-fi.so
 * (FI_PROVIDER_PATH = B/lib next to B/tests), and endpoints opened
 * through libfabric exactly as an application does.  Header-only: each
 * test binary includes it once. */
#ifndef MRC_TESTS_SUPPORT_FI_FIX_H
#define MRC_TESTS_SUPPORT_FI_FIX_H

#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include "tests/support/mrcd_spawn.h"
#include "tests/support/skip.h"

#define FIX_WAIT_MS 10000
#define FI_OK(call) do { int _r = (int)(call); \
	if (_r) fail_msg("%s = %d (%s)", #call, _r, fi_strerror(-_r)); } while (0)

static int fix_have;

/* Group setup: the daemon and the environment libfabric reads at its
 * first call. */
static inline int fix_group_setup(void **state)
{
	char exe[PATH_MAX], lib[PATH_MAX + 16];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return -1;
	exe[n] = 0;
	/* B/tests/test_fi_x -> B/lib */
	char *tests = dirname(exe), up[PATH_MAX];
	snprintf(up, sizeof(up), "%s", tests);
	snprintf(lib, sizeof(lib), "%s/lib", dirname(up));
	char so[PATH_MAX + 32];
	snprintf(so, sizeof(so), "%s/libmrc-fi.so", lib);
	setenv("FI_PROVIDER_PATH", lib, 1);
	/* the provider's library, not a copy installed elsewhere */
	if (access(so, R_OK))
		return 0;
	if (mrcd_group_setup(state))
		return -1;
	fix_have = mrcd_group.have;
	if (fix_have)
		setenv("MRC_SOCKET", mrcd_group.d.sock, 1);
	return 0;
}

static inline int fix_group_teardown(void **state)
{
	return mrcd_group_teardown(state);
}

#define FIX_NEED() do { if (!fix_have) MRC_SKIP("build/bin/mrcd or libmrc-fi.so not built"); } while (0)

static inline struct fi_info *fix_hints(uint64_t caps)
{
	struct fi_info *h = fi_allocinfo();
	assert_non_null(h);
	h->caps = caps;
	h->ep_attr->type = FI_EP_RDM;
	h->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	h->fabric_attr->prov_name = strdup("mrc");
	return h;
}

struct fix {
	struct fi_info *info;
	struct fid_fabric *fab;
	struct fid_domain *dom;
	struct fid_av *av;
};

struct fix_ep {
	struct fid_ep *ep;
	struct fid_cq *cq;
	char name[64];
	size_t namelen;
};

static inline void fix_open(struct fix *f, uint64_t caps, enum fi_av_type avt)
{
	memset(f, 0, sizeof(*f));
	struct fi_info *h = fix_hints(caps);
	FI_OK(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &f->info));
	fi_freeinfo(h);
	FI_OK(fi_fabric(f->info->fabric_attr, &f->fab, NULL));
	FI_OK(fi_domain(f->fab, f->info, &f->dom, NULL));
	struct fi_av_attr aa = { .type = avt };
	FI_OK(fi_av_open(f->dom, &aa, &f->av, NULL));
}

static inline void fix_ep_open(struct fix *f, struct fix_ep *e, enum fi_cq_format fmt)
{
	memset(e, 0, sizeof(*e));
	FI_OK(fi_endpoint(f->dom, f->info, &e->ep, NULL));
	struct fi_cq_attr ca = { .format = fmt, .wait_obj = FI_WAIT_FD, .size = 64 };
	FI_OK(fi_cq_open(f->dom, &ca, &e->cq, NULL));
	FI_OK(fi_ep_bind(e->ep, &f->av->fid, 0));
	FI_OK(fi_ep_bind(e->ep, &e->cq->fid, FI_TRANSMIT | FI_RECV));
	FI_OK(fi_enable(e->ep));
	e->namelen = sizeof(e->name);
	FI_OK(fi_getname(&e->ep->fid, e->name, &e->namelen));
}

static inline void fix_ep_close(struct fix_ep *e)
{
	FI_OK(fi_close(&e->ep->fid));
	FI_OK(fi_close(&e->cq->fid));
}

static inline void fix_close(struct fix *f)
{
	FI_OK(fi_close(&f->av->fid));
	FI_OK(fi_close(&f->dom->fid));
	FI_OK(fi_close(&f->fab->fid));
	fi_freeinfo(f->info);
}

static inline fi_addr_t fix_insert(struct fix *f, const struct fix_ep *e)
{
	fi_addr_t a = FI_ADDR_NOTAVAIL;
	assert_int_equal(fi_av_insert(f->av, e->name, 1, &a, 0, NULL), 1);
	return a;
}

/* One completion (tagged format), or an error entry (returns -FI_EAVAIL
 * with *err filled). */
static inline int fix_wait_cq(struct fid_cq *cq, struct fi_cq_tagged_entry *c, fi_addr_t *src,
		       struct fi_cq_err_entry *err)
{
	for (;;) {
		ssize_t r = fi_cq_sreadfrom(cq, c, 1, src, NULL, FIX_WAIT_MS);
		if (r == 1)
			return 0;
		if (r == -FI_EAVAIL) {
			struct fi_cq_err_entry e;
			memset(&e, 0, sizeof(e));
			assert_int_equal(fi_cq_readerr(cq, &e, 0), 1);
			if (err)
				*err = e;
			else
				fail_msg("error completion: %s (olen %zu)", fi_strerror(e.err),
					 e.olen);
			return -FI_EAVAIL;
		}
		if (r == -FI_EAGAIN)
			fail_msg("no completion within %d ms", FIX_WAIT_MS);
		fail_msg("fi_cq_sreadfrom: %zd (%s)", r, fi_strerror((int)-r));
	}
}

#endif
