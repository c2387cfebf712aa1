/* Memory registration (docs/libfabric.md "Design"): only MRs for remote
 * write reach mrcd, registered in both clients; memory mrcd cannot map
 * as it is moves into a memfd. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "fi/mrcfi.h"

static int mr_close(struct fid *fid)
{
	struct mrcfi_mr *m = container_of(fid, struct mrcfi_mr, mr.fid);
	for (int s = 0; s < 2; s++)
		if (m->m[s]) {
			int r = mrc_dereg_mr(m->m[s]);
			if (r)
				return r;   /* -EBUSY: writes in flight */
			m->m[s] = NULL;
		}
	free(m);
	return 0;
}

static int mr_control(struct fid *fid, int command, void *arg)
{
	return -FI_ENOSYS;
}

static struct fi_ops mr_fi_ops = {
	.size = sizeof(struct fi_ops), .close = mr_close, .bind = mrcfi_no_bind,
	.control = mr_control, .ops_open = mrcfi_no_ops_open, .tostr = mrcfi_no_tostr,
	.ops_set = mrcfi_no_ops_set,
};

/* The anonymous private mapping (/proc/self/maps) holding [lo, hi), as
 * [*vs, *ve), when it is at most max bytes; else 0. */
static int anon_vma(uintptr_t lo, uintptr_t hi, uint64_t max, uintptr_t *vs, uintptr_t *ve)
{
	FILE *f = fopen("/proc/self/maps", "re");
	if (!f)
		return 0;
	char line[512];
	int ok = 0;
	while (!ok && fgets(line, sizeof(line), f)) {
		unsigned long s, e, ino;
		char perm[8];
		if (sscanf(line, "%lx-%lx %7s %*s %*s %lu", &s, &e, perm, &ino) != 4)
			continue;
		if (s <= lo && hi <= e && perm[3] == 'p' && ino == 0 && !strchr(line, '[') &&
		    e - s <= max) {
			*vs = s;
			*ve = e;
			ok = 1;
		}
	}
	fclose(f);
	return ok;
}

/* Registers [buf, buf+len) with mrcd in one client: memory mrcd can map
 * as it is (a memfd mapping), else, when FI_MRC_MR_MOVE allows (the
 * default), pages moved into a memfd first (docs/client.md "Application
 * memory"), then the exact range.  By default the range's own pages move;
 * a later, larger range over the same buffer moves again, the earlier
 * moved pages with the rest, while no registration holds them (libmrc
 * answers -EBUSY if one does).  With FI_MRC_MR_MOVE_MAX the whole
 * anonymous mapping moves when it is at most that size. */
static int reg_side(struct mrcfi_domain *d, struct mrc_ctx *ctx, const void *buf, size_t len,
		    struct mrc_mr **out)
{
	uint32_t acc = MRC_MR_ALL;
	int r = mrc_reg_mem(ctx, (void *)buf, len, acc, 0, out);
	if (r != -EOPNOTSUPP || !d->mr_move)
		return r;
	long pg = sysconf(_SC_PAGESIZE);
	uintptr_t lo = (uintptr_t)buf & ~(uintptr_t)(pg - 1);
	uintptr_t hi = ((uintptr_t)buf + len + (uintptr_t)pg - 1) & ~(uintptr_t)(pg - 1);
	uintptr_t vs, ve;
	if (anon_vma(lo, hi, d->mr_move_max, &vs, &ve)) {
		lo = vs;
		hi = ve;
	}
	struct mrc_mr *tmp;
	r = mrc_reg_mem(ctx, (void *)lo, hi - lo, acc, MRC_REG_MOVE, &tmp);
	if (r)
		return r;
	(void)mrc_dereg_mr(tmp);
	return mrc_reg_mem(ctx, (void *)buf, len, acc, 0, out);
}

int mrcfi_mr_reg(struct fid *fid, const void *buf, size_t len, uint64_t access, uint64_t offset,
		 uint64_t requested_key, uint64_t flags, struct fid_mr **mr, void *context)
{
	if (fid->fclass != FI_CLASS_DOMAIN)
		return -FI_EINVAL;
	struct mrcfi_domain *d = container_of(fid, struct mrcfi_domain, d.fid);
	if (flags & ~(uint64_t)(FI_RMA_EVENT))
		return -FI_EINVAL;
	if (flags & FI_RMA_EVENT)
		return -FI_ENOSYS;
	/* Read access is accepted: no peer can read (RMA read is refused
	 * where it is asked, fi_read and getinfo), and fabtests'
	 * fi_mr_test and fi_rdm_atomic register every combination. */
	struct mrcfi_mr *m = calloc(1, sizeof(*m));
	if (!m)
		return -FI_ENOMEM;
	m->d = d;
	m->buf = buf;
	m->len = len;
	m->access = access;
	m->mr.fid.fclass = FI_CLASS_MR;
	m->mr.fid.context = context;
	m->mr.fid.ops = &mr_fi_ops;
	m->mr.mem_desc = m;
	if ((access & FI_REMOTE_WRITE) && len) {
		for (int s = 0; s < 2; s++) {
			int r = reg_side(d, d->side[s].ctx, buf, len, &m->m[s]);
			if (r) {
				MRCFI_WARN(FI_LOG_MR, "fi_mr_reg of %p+%zu: %s (%s)\n", buf, len,
					   mrc_strerror(r), mrc_last_error(d->side[s].ctx));
				(void)mr_close(&m->mr.fid);
				return r == -EOPNOTSUPP ? -FI_EOPNOTSUPP : r;
			}
		}
		/* Peers that connected to us write through side 0, those
		 * we connected to through side 1: the key names both. */
		m->mr.key = (uint64_t)mrc_mr_key(m->m[0]) << 32 | mrc_mr_key(m->m[1]);
	} else {
		/* Local use only (sends and receives copy through bounce
		 * buffers): nothing for mrcd; a key no peer can use. */
		pthread_mutex_lock(&d->lock);
		m->mr.key = ++d->local_key;
		pthread_mutex_unlock(&d->lock);
	}
	*mr = &m->mr;
	if (d->eq) {
		struct fi_eq_entry e = { .fid = &m->mr.fid, .context = context };
		(void)mrcfi_eq_post(d->eq, FI_MR_COMPLETE, &e, sizeof(e), 0);
	}
	(void)offset;
	(void)requested_key;
	return 0;
}

int mrcfi_mr_regv(struct fid *fid, const struct iovec *iov, size_t count, uint64_t access,
		  uint64_t offset, uint64_t requested_key, uint64_t flags, struct fid_mr **mr,
		  void *context)
{
	if (count != 1)
		return -FI_EINVAL;   /* mr_iov_limit 1 */
	return mrcfi_mr_reg(fid, iov[0].iov_base, iov[0].iov_len, access, offset, requested_key,
			    flags, mr, context);
}

int mrcfi_mr_regattr(struct fid *fid, const struct fi_mr_attr *attr, uint64_t flags,
		     struct fid_mr **mr)
{
	if (!attr || attr->iov_count != 1)
		return -FI_EINVAL;
	if (attr->iface != FI_HMEM_SYSTEM)
		return -FI_ENOSYS;
	return mrcfi_mr_reg(fid, attr->mr_iov[0].iov_base, attr->mr_iov[0].iov_len, attr->access,
			    attr->offset, attr->requested_key, flags, mr, attr->context);
}
