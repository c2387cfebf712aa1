/* Driving a NCCL net plugin (drive.h). */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "common/prng.h"
#include "tools/nccl-harness/drive.h"

int64_t ndrv_now_us(void)
{
	return (int64_t)(mrc__mono_ns() / 1000u);
}

int ndrv_load(struct ndrv *d, const char *name, char *err, size_t errlen)
{
	memset(d, 0, sizeof(*d));
	if (strchr(name, '/'))
		snprintf(d->path, sizeof(d->path), "%s", name);
	else
		snprintf(d->path, sizeof(d->path), "libnccl-net-%s.so", name);
	d->dl = dlopen(d->path, RTLD_NOW | RTLD_LOCAL);
	if (!d->dl && !strchr(name, '/')) {
		snprintf(d->path, sizeof(d->path), "%s", name);
		d->dl = dlopen(d->path, RTLD_NOW | RTLD_LOCAL);
	}
	if (!d->dl) {
		snprintf(err, errlen, "dlopen %s: %s", d->path, dlerror());
		return -ENOENT;
	}
	d->net = dlsym(d->dl, "ncclNetPlugin_v11");
	d->v10 = dlsym(d->dl, "ncclNetPlugin_v10");
	d->v9 = dlsym(d->dl, "ncclNetPlugin_v9");
	d->v8 = dlsym(d->dl, "ncclNetPlugin_v8");
	if (!d->net) {
		snprintf(err, errlen, "%s: no ncclNetPlugin_v11", d->path);
		dlclose(d->dl);
		d->dl = NULL;
		return -ENOENT;
	}
	return 0;
}

void ndrv_unload(struct ndrv *d)
{
	if (d->dl)
		dlclose(d->dl);
	d->dl = NULL;
}

/* ---- one round ---------------------------------------------------------- */
struct msg {
	int tag;
	size_t ssize, rsize;
	uint64_t pat;
};
struct plan {
	int g;
	struct msg m[16];
	int order[16];                  /* send order */
};

static void make_plan(struct plan *p, uint64_t seed, uint64_t round, const struct ndrv_link *l,
		      size_t maxsize, int maxrecvs)
{
	struct mrc_rng r;
	mrc_rng_seed(&r, seed ^ (round * 0x9e3779b97f4a7c15ull) ^ ((uint64_t)l->src << 40) ^
			 ((uint64_t)l->dst << 20) ^ (uint64_t)l->k);
	p->g = 1 + (int)(mrc_rng_next(&r) % (uint64_t)maxrecvs);
	int tbase = (int)(mrc_rng_next(&r) % 1000);
	for (int i = 0; i < p->g; i++) {
		struct msg *m = &p->m[i];
		m->tag = tbase + i * 3;
		uint64_t x = mrc_rng_next(&r);
		m->ssize = x % 8 == 0 ? 0 : (size_t)(mrc_rng_next(&r) % (maxsize + 1));
		m->rsize = m->ssize + (x % 3 == 0 ? 0 : (size_t)(mrc_rng_next(&r) % 4096));
		if (m->rsize > maxsize)
			m->rsize = maxsize;
		if (m->ssize > m->rsize)
			m->ssize = m->rsize;
		m->pat = mrc_rng_next(&r);
		p->order[i] = i;
	}
	for (int i = p->g - 1; i > 0; i--) {
		int j = (int)(mrc_rng_next(&r) % (uint64_t)(i + 1));
		int t = p->order[i];
		p->order[i] = p->order[j];
		p->order[j] = t;
	}
}

static void fill(uint8_t *b, size_t len, uint64_t seed)
{
	uint64_t x = seed;
	for (size_t i = 0; i < len; i += 8) {
		uint64_t z = mrc_splitmix64(&x);
		memcpy(b + i, &z, len - i < 8 ? len - i : 8);
	}
}

struct op {
	struct ndrv_link *l;
	int send;                       /* 1: a send of message idx; 0: the grouped recv */
	int idx;
	struct plan plan;
	void *buf[16], *mh[16];
	void *req;
	int posted, done;
};

#define FAIL(...) do { snprintf(err, errlen, __VA_ARGS__); goto out; } while (0)

int ndrv_round(const ncclNet_v11_t *net, struct ndrv_link *sends, int ns,
	       struct ndrv_link *recvs, int nr, uint64_t seed, uint64_t round, size_t maxsize,
	       int maxrecvs, int timeout_ms, struct ndrv_stats *st, char *err, size_t errlen)
{
	return ndrv_round_typed(net, sends, ns, recvs, nr, seed, round, maxsize, maxrecvs,
				timeout_ms, NCCL_PTR_HOST, st, err, errlen);
}

int ndrv_round_typed(const ncclNet_v11_t *net, struct ndrv_link *sends, int ns,
		     struct ndrv_link *recvs, int nr, uint64_t seed, uint64_t round,
		     size_t maxsize, int maxrecvs, int timeout_ms, int ptr_type,
		     struct ndrv_stats *st, char *err, size_t errlen)
{
	if (maxrecvs > 8)
		maxrecvs = 8;
	int nops = nr + ns * 8, n = 0, rc = -1;
	struct op *ops = calloc((size_t)nops, sizeof(*ops));
	if (!ops) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	/* Receives first in the array: a proxy posts its receives and sends
	 * in any order, the plugin must cope (sends wait for their CTS). */
	for (int i = 0; i < nr; i++) {
		struct op *o = &ops[n++];
		o->l = &recvs[i];
		make_plan(&o->plan, seed, round, o->l, maxsize, maxrecvs);
		for (int j = 0; j < o->plan.g; j++) {
			size_t sz = o->plan.m[j].rsize;
			o->buf[j] = malloc(sz + 64);
			memset(o->buf[j], 0xee, sz + 64);
			if (net->regMr(o->l->comm, o->buf[j], sz + 64, ptr_type, &o->mh[j]))
				FAIL("regMr (type %d) failed", ptr_type);
		}
	}
	for (int i = 0; i < ns; i++) {
		struct plan p;
		make_plan(&p, seed, round, &sends[i], maxsize, maxrecvs);
		for (int j = 0; j < p.g; j++) {
			struct op *o = &ops[n++];
			o->l = &sends[i];
			o->send = 1;
			o->plan = p;
			o->idx = p.order[j];
			size_t sz = p.m[o->idx].ssize;
			o->buf[0] = malloc(sz + 1);
			fill(o->buf[0], sz, p.m[o->idx].pat);
			if (net->regMr(o->l->comm, o->buf[0], sz + 1, ptr_type, &o->mh[0]))
				FAIL("regMr (type %d) failed", ptr_type);
		}
	}
	int64_t deadline = ndrv_now_us() + (int64_t)timeout_ms * 1000;
	int left = n;
	while (left) {
		if (ndrv_now_us() > deadline)
			FAIL("round %llu: %d of %d operations not done after %d ms",
			     (unsigned long long)round, left, n, timeout_ms);
		for (int i = 0; i < n; i++) {
			struct op *o = &ops[i];
			if (o->done)
				continue;
			/* Sends of one link in their shuffled order: the next
			 * one only once the previous is posted. */
			if (!o->posted && o->send && i > 0 && ops[i - 1].send &&
			    ops[i - 1].l == o->l && !ops[i - 1].posted)
				continue;
			if (!o->posted) {
				ncclResult_t r;
				if (o->send) {
					struct msg *m = &o->plan.m[o->idx];
					r = net->isend(o->l->comm, o->buf[0], m->ssize, m->tag, o->mh[0],
						       NULL, &o->req);
				} else {
					void *data[16];
					size_t sizes[16];
					int tags[16];
					for (int j = 0; j < o->plan.g; j++) {
						data[j] = o->buf[j];
						sizes[j] = o->plan.m[j].rsize;
						tags[j] = o->plan.m[j].tag;
					}
					r = net->irecv(o->l->comm, o->plan.g, data, sizes, tags, o->mh,
						       NULL, &o->req);
				}
				if (r != ncclSuccess)
					FAIL("%s returned %d", o->send ? "isend" : "irecv", r);
				if (!o->req) {
					if (o->send)
						st->isend_null++;
					else
						st->irecv_null++;
					continue;
				}
				o->posted = 1;
			}
			int done = 0, sizes[16] = { 0 };
			ncclResult_t r = net->test(o->req, &done, sizes);
			if (r != ncclSuccess)
				FAIL("test returned %d (%s, link %d->%d/%d)", r, o->send ? "send" : "recv",
				     o->l->src, o->l->dst, o->l->k);
			if (!done)
				continue;
			o->done = 1;
			left--;
			if (o->send) {
				struct msg *m = &o->plan.m[o->idx];
				if ((size_t)sizes[0] != m->ssize)
					FAIL("send test size %d, sent %zu", sizes[0], m->ssize);
				continue;
			}
			if (o->plan.g > 1)
				st->grouped++;
			for (int j = 0; j < o->plan.g; j++) {
				struct msg *m = &o->plan.m[j];
				if ((size_t)sizes[j] != m->ssize)
					FAIL("link %d->%d/%d tag %d: test size %d, sent %zu", o->l->src,
					     o->l->dst, o->l->k, m->tag, sizes[j], m->ssize);
				uint8_t *want = malloc(m->ssize + 1);
				fill(want, m->ssize, m->pat);
				int bad = memcmp(want, o->buf[j], m->ssize) != 0;
				free(want);
				for (size_t b = m->ssize; b < m->rsize + 64 && !bad; b++)
					bad = ((uint8_t *)o->buf[j])[b] != 0xee;
				if (bad)
					FAIL("link %d->%d/%d tag %d: data differs (%zu bytes)", o->l->src,
					     o->l->dst, o->l->k, m->tag, m->ssize);
				st->msgs++;
				st->bytes += m->ssize;
				st->larger_recvs += m->rsize > m->ssize;
				st->zero_msgs += m->ssize == 0;
			}
		}
	}
	rc = 0;
out:
	for (int i = 0; i < n; i++)
		for (int j = 0; j < 16; j++) {
			/* After a failure the plugin may still write into
			 * posted receives: leak those rather than free them. */
			if (ops[i].posted && !ops[i].done)
				continue;
			if (ops[i].mh[j])
				net->deregMr(ops[i].l->comm, ops[i].mh[j]);
			free(ops[i].buf[j]);
		}
	free(ops);
	return rc;
}
