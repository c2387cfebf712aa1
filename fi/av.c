/* Address vectors (docs/libfabric.md "Addresses"): FI_AV_TABLE and
 * FI_AV_MAP over mrc names (host index, service id). */
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "fi/mrcfi.h"

/* ---- address vector -------------------------------------------------- */
#define MAP_ADDR(n) ((fi_addr_t)(n)->host << 32 | (n)->sid)

int mrcfi_av_get(struct mrcfi_av *av, fi_addr_t a, struct mrcfi_name *out)
{
	if (a == FI_ADDR_NOTAVAIL || a == FI_ADDR_UNSPEC)
		return -FI_EINVAL;
	if (av->type == FI_AV_MAP) {
		out->host = (uint32_t)(a >> 32);
		out->sid = (uint32_t)a;
		return 0;
	}
	if (a >= av->n || !av->used[a])
		return -FI_EINVAL;
	*out = av->names[a];
	return 0;
}

fi_addr_t mrcfi_av_rev(struct mrcfi_av *av, const struct mrcfi_name *n)
{
	if (!av)
		return FI_ADDR_NOTAVAIL;
	if (av->type == FI_AV_MAP)
		return MAP_ADDR(n);
	for (size_t i = 0; i < av->n; i++)
		if (av->used[i] && av->names[i].host == n->host && av->names[i].sid == n->sid)
			return i;
	return FI_ADDR_NOTAVAIL;
}

static int av_insert(struct fid_av *fav, const void *addr, size_t count, fi_addr_t *fi_addr,
		     uint64_t flags, void *context)
{
	struct mrcfi_av *av = container_of(fav, struct mrcfi_av, av);
	if (flags & ~(uint64_t)(FI_MORE | FI_SYNC_ERR))
		return -FI_EINVAL;
	if (count && !addr)
		return -FI_EINVAL;
	pthread_mutex_lock(&av->d->lock);
	int done = 0;
	for (size_t i = 0; i < count; i++) {
		struct mrcfi_name n;
		memcpy(&n, (const char *)addr + i * sizeof(n), sizeof(n));
		fi_addr_t a;
		if (av->type == FI_AV_MAP) {
			a = MAP_ADDR(&n);
		} else {
			if (av->n == av->cap) {
				size_t cap = av->cap ? av->cap * 2 : 64;
				void *nn = realloc(av->names, cap * sizeof(*av->names));
				if (nn)
					av->names = nn;
				void *nu = realloc(av->used, cap);
				if (nu)
					av->used = nu;
				if (!nn || !nu) {
					if (fi_addr)
						fi_addr[i] = FI_ADDR_NOTAVAIL;
					continue;
				}
				av->cap = cap;
			}
			a = av->n++;
			av->names[a] = n;
			av->used[a] = 1;
		}
		if (fi_addr)
			fi_addr[i] = a;
		done++;
	}
	pthread_mutex_unlock(&av->d->lock);
	if (av->eq) {
		/* bound to an EQ: the insert completes by an event */
		struct fi_eq_entry e = { .fid = &av->av.fid, .context = context,
					 .data = (uint64_t)done };
		(void)mrcfi_eq_post(av->eq, FI_AV_COMPLETE, &e, sizeof(e), 0);
		return 0;
	}
	return done;
}

/* node: the mrcd host index, service: the service id (decimal or 0x). */
static int av_insertsvc(struct fid_av *fav, const char *node, const char *service,
			fi_addr_t *fi_addr, uint64_t flags, void *context)
{
	if (!node || !service)
		return -FI_EINVAL;
	char *e1, *e2;
	unsigned long h = strtoul(node, &e1, 0), s = strtoul(service, &e2, 0);
	if (*e1 || *e2 || h > UINT32_MAX || s > UINT32_MAX)
		return -FI_EINVAL;
	struct mrcfi_name n = { (uint32_t)h, (uint32_t)s };
	return av_insert(fav, &n, 1, fi_addr, flags, context);
}

static int av_insertsym(struct fid_av *av, const char *node, size_t nodecnt, const char *service,
			size_t svccnt, fi_addr_t *fi_addr, uint64_t flags, void *context)
{
	return -FI_ENOSYS;
}

static int av_remove(struct fid_av *fav, fi_addr_t *fi_addr, size_t count, uint64_t flags)
{
	struct mrcfi_av *av = container_of(fav, struct mrcfi_av, av);
	if (flags)
		return -FI_EINVAL;
	int r = 0;
	pthread_mutex_lock(&av->d->lock);
	for (size_t i = 0; i < count; i++) {
		if (av->type == FI_AV_MAP)
			continue;   /* the address is the name: nothing held */
		if (fi_addr[i] >= av->n || !av->used[fi_addr[i]])
			r = -FI_EINVAL;
		else
			av->used[fi_addr[i]] = 0;
	}
	pthread_mutex_unlock(&av->d->lock);
	return r;
}

static int av_lookup(struct fid_av *fav, fi_addr_t fi_addr, void *addr, size_t *addrlen)
{
	struct mrcfi_av *av = container_of(fav, struct mrcfi_av, av);
	struct mrcfi_name n;
	pthread_mutex_lock(&av->d->lock);
	int r = mrcfi_av_get(av, fi_addr, &n);
	pthread_mutex_unlock(&av->d->lock);
	if (r)
		return r;
	memcpy(addr, &n, *addrlen < sizeof(n) ? *addrlen : sizeof(n));
	*addrlen = sizeof(n);
	return 0;
}

static const char *av_straddr(struct fid_av *av, const void *addr, char *buf, size_t *len)
{
	struct mrcfi_name n;
	memcpy(&n, addr, sizeof(n));
	char tmp[64];
	int k = snprintf(tmp, sizeof(tmp), "mrc://%u:%u", n.host, n.sid);
	if (buf && *len)
		snprintf(buf, *len, "%s", tmp);
	*len = (size_t)k + 1;
	return buf;
}

static int no_av_set(struct fid_av *av, struct fi_av_set_attr *attr, struct fid_av_set **s,
		     void *context)
{
	return -FI_ENOSYS;
}

static int av_close(struct fid *fid)
{
	struct mrcfi_av *av = container_of(fid, struct mrcfi_av, av.fid);
	if (av->refs)
		return -FI_EBUSY;
	free(av->names);
	free(av->used);
	free(av);
	return 0;
}

static int av_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct mrcfi_av *av = container_of(fid, struct mrcfi_av, av.fid);
	if (bfid->fclass != FI_CLASS_EQ || flags)
		return -FI_EINVAL;
	av->eq = container_of(bfid, struct mrcfi_eq, eq.fid);
	return 0;
}

static struct fi_ops av_fi_ops = {
	.size = sizeof(struct fi_ops), .close = av_close, .bind = av_bind,
	.control = mrcfi_no_control, .ops_open = mrcfi_no_ops_open, .tostr = mrcfi_no_tostr,
	.ops_set = mrcfi_no_ops_set,
};

static struct fi_ops_av av_ops = {
	.size = sizeof(struct fi_ops_av), .insert = av_insert, .insertsvc = av_insertsvc,
	.insertsym = av_insertsym, .remove = av_remove, .lookup = av_lookup,
	.straddr = av_straddr, .av_set = no_av_set,
};

int mrcfi_av_open(struct fid_domain *dom, struct fi_av_attr *attr, struct fid_av **out, void *ctx)
{
	struct mrcfi_domain *d = container_of(dom, struct mrcfi_domain, d);
	if (!attr)
		return -FI_EINVAL;
	if (attr->type != FI_AV_UNSPEC && attr->type != FI_AV_MAP && attr->type != FI_AV_TABLE)
		return -FI_EINVAL;
	if (attr->name || attr->rx_ctx_bits || (attr->flags & ~(uint64_t)(FI_EVENT)))
		return -FI_ENOSYS;   /* no shared or named AVs, no scalable eps */
	struct mrcfi_av *av = calloc(1, sizeof(*av));
	if (!av)
		return -FI_ENOMEM;
	av->d = d;
	av->type = attr->type == FI_AV_UNSPEC ? FI_AV_TABLE : attr->type;
	attr->type = av->type;
	av->av.fid.fclass = FI_CLASS_AV;
	av->av.fid.context = ctx;
	av->av.fid.ops = &av_fi_ops;
	av->av.ops = &av_ops;
	*out = &av->av;
	return 0;
}
