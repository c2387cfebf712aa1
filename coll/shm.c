/* Shared-memory rings between ranks of one host (coll/shm.h). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "coll/coll_int.h"
#include "coll/shm.h"

void mrc__coll_ring_name(char *buf, size_t n, uint32_t sid, uint64_t nonce, uint32_t from, uint32_t to)
{
	snprintf(buf, n, "/mrc-coll-%u-%u-%016" PRIx64 "-%u-%u", (unsigned)geteuid(), sid, nonce,
		 from, to);
}

static int geometry_ok(uint32_t slots, uint32_t slot_bytes)
{
	return slots >= 1 && slots <= MRC__SHM_MAXSLOTS && slot_bytes && !(slot_bytes & 63);
}

static int map(struct mrc__coll_ring_ring *r, int fd, uint32_t slots, uint32_t slot_bytes)
{
	size_t len = MRC__SHM_HDR + (size_t)slots * slot_bytes;
	void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED)
		return -errno;
	r->h = m;
	r->data = (uint8_t *)m + MRC__SHM_HDR;
	r->map_len = len;
	r->slots = slots;
	r->slot_bytes = slot_bytes;
	return 0;
}

int mrc__coll_ring_create(struct mrc__coll_ring_ring *r, const char *name, uint32_t slots,
		    uint32_t slot_bytes)
{
	*r = (struct mrc__coll_ring_ring){ 0 };
	if (!geometry_ok(slots, slot_bytes) || strlen(name) >= sizeof(r->name))
		return -EINVAL;
	/* O_EXCL: a name someone else made first is never used (their
	 * mapping, their size); the communicator's init fails instead. */
	int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	strcpy(r->name, name);
	r->linked = 1;
	int e = 0;
	if (fchmod(fd, 0600) || ftruncate(fd, MRC__SHM_HDR + (off_t)slots * slot_bytes))
		e = -errno;
	if (!e)
		e = map(r, fd, slots, slot_bytes);
	close(fd);
	if (e) {
		mrc__coll_ring_close(r);
		return e;
	}
	r->h->slots = slots;
	r->h->slot_bytes = slot_bytes;
	atomic_store_explicit(&r->h->tail, 0, memory_order_relaxed);
	atomic_store_explicit(&r->h->head, 0, memory_order_relaxed);
	atomic_store_explicit(&r->h->abort, 0, memory_order_relaxed);
	/* The magic last: the consumer maps after the bootstrap's messages,
	 * which order this store before its load. */
	r->h->magic = MRC__SHM_MAGIC;
	return 0;
}

int mrc__coll_ring_open(struct mrc__coll_ring_ring *r, const char *name, uint32_t slots, uint32_t slot_bytes)
{
	*r = (struct mrc__coll_ring_ring){ 0 };
	if (!geometry_ok(slots, slot_bytes) || strlen(name) >= sizeof(r->name))
		return -EINVAL;
	int fd = shm_open(name, O_RDWR | O_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	struct stat st;
	int e = fstat(fd, &st) ? -errno : 0;
	/* Ours, private, and exactly the size agreed: a file of another user
	 * or of another size is not our peer's ring. */
	if (!e && (st.st_uid != geteuid() || !S_ISREG(st.st_mode) || (st.st_mode & 07777) != 0600))
		e = -EPERM;
	if (!e && st.st_size != (off_t)(MRC__SHM_HDR + (off_t)slots * slot_bytes))
		e = -EPROTO;
	if (!e)
		e = map(r, fd, slots, slot_bytes);
	close(fd);
	if (!e && (r->h->magic != MRC__SHM_MAGIC || r->h->slots != slots ||
		   r->h->slot_bytes != slot_bytes))
		e = -EPROTO;
	if (e) {
		mrc__coll_ring_close(r);
		return e;
	}
	/* Both sides have it mapped: the name can go. */
	shm_unlink(name);
	return 0;
}

void mrc__coll_ring_close(struct mrc__coll_ring_ring *r)
{
	if (r->h)
		munmap(r->h, r->map_len);
	if (r->linked)
		shm_unlink(r->name);   /* never opened by the consumer; ENOENT otherwise */
	*r = (struct mrc__coll_ring_ring){ 0 };
}

int mrc__coll_ring_aborted(struct mrc__coll_ring_ring *r)
{
	return atomic_load_explicit(&r->h->abort, memory_order_acquire) ? -ECONNABORTED : 0;
}

void mrc__coll_ring_abort(struct mrc__coll_ring_ring *r)
{
	if (r->h)
		atomic_store_explicit(&r->h->abort, 1, memory_order_release);
}

static int fail(struct mrc__coll_ring_ring *r, int e)
{
	if (!r->err)
		r->err = e;
	return r->err;
}

int mrc__coll_ring_room(struct mrc__coll_ring_ring *r)
{
	if (r->err)
		return r->err;
	if (mrc__coll_ring_aborted(r))
		return fail(r, -ECONNABORTED);
	uint64_t head = atomic_load_explicit(&r->h->head, memory_order_acquire);
	/* head only moves forward and never past what we published. */
	if (head < r->seen || head > r->pos)
		return fail(r, -EPROTO);
	r->seen = head;
	return r->pos - head < r->slots;
}

uint8_t *mrc__coll_ring_slot(struct mrc__coll_ring_ring *r)
{
	return r->data + (size_t)(r->pos % r->slots) * r->slot_bytes;
}

int mrc__coll_ring_push(struct mrc__coll_ring_ring *r, uint32_t len)
{
	if (r->err)
		return r->err;
	if (len > r->slot_bytes || r->pos - r->seen >= r->slots)
		return -EINVAL;   /* a caller's bug, not the peer's */
	atomic_store_explicit(&r->h->len[r->pos % r->slots], len, memory_order_relaxed);
	r->pos++;
	atomic_store_explicit(&r->h->tail, r->pos, memory_order_release);
	return 0;
}

int mrc__coll_ring_peek(struct mrc__coll_ring_ring *r, const uint8_t **data, uint32_t *len)
{
	if (r->err)
		return r->err;
	if (mrc__coll_ring_aborted(r))
		return fail(r, -ECONNABORTED);
	uint64_t tail = atomic_load_explicit(&r->h->tail, memory_order_acquire);
	/* tail only moves forward and at most a ring ahead of what we took. */
	if (tail < r->seen || tail - r->pos > r->slots)
		return fail(r, -EPROTO);
	r->seen = tail;
	if (tail == r->pos)
		return 0;
	/* Read once: the peer may change the word after the check. */
	uint32_t l = atomic_load_explicit(&r->h->len[r->pos % r->slots], memory_order_relaxed);
	if (l > r->slot_bytes)
		return fail(r, -EPROTO);
	*data = r->data + (size_t)(r->pos % r->slots) * r->slot_bytes;
	*len = l;
	return 1;
}

void mrc__coll_ring_pop(struct mrc__coll_ring_ring *r)
{
	r->pos++;
	atomic_store_explicit(&r->h->head, r->pos, memory_order_release);
}

/* ---- the rings of a communicator: one to and one from each rank of our
 * host (coll_int.h) ---------------------------------------------------- */

int mrc__coll_shm_create(struct mrc_coll *c, const uint32_t *hosts, const uint8_t *shm)
{
	for (uint32_t j = 0; j < c->n; j++) {
		struct mrc__coll_peer *p = &c->p[j];
		if (j == c->me || !c->shm_on || !shm[j] || hosts[j] != hosts[c->me])
			continue;
		char name[80];
		mrc__coll_ring_name(name, sizeof(name), c->sid, c->nonce, c->me, j);
		int r = mrc__coll_ring_create(&p->stx, name, c->window, c->chunk);
		if (r)
			return r;
		p->shm = 1;
		c->nshm++;
	}
	return 0;
}

int mrc__coll_shm_open(struct mrc_coll *c)
{
	for (uint32_t j = 0; j < c->n; j++) {
		struct mrc__coll_peer *p = &c->p[j];
		if (!p->shm)
			continue;
		char name[80];
		mrc__coll_ring_name(name, sizeof(name), c->sid, c->nonce, j, c->me);
		int r = mrc__coll_ring_open(&p->srx, name, c->window, c->chunk);
		if (r)
			return r;
	}
	return 0;
}
