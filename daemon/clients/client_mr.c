/* mrcd: clients' memory regions: lookups, registration (mapping the
 * client's file, populated while the loop is idle) and deregistration
 * (clients_int.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/clients/clients.h"
#include "daemon/clients/clients_int.h"
#include "datapath/datapath.h"
#include "mrc/mrc.h"

/* ---- lookups ---------------------------------------------------------- */

const struct mrc__mr_view *mrcd_client_mr(void *client, uint32_t key)
{
	struct mrcd_client *c = client;
	if (!key)
		return NULL;
	if (c->mrs[c->last_mr].key == key)
		return &c->mrs[c->last_mr].view;
	for (uint32_t i = 0; i < c->max_mrs; i++)
		if (c->mrs[i].key == key) {
			c->last_mr = i;
			return &c->mrs[i].view;
		}
	return NULL;
}

static struct mrcd_cmr *find_mr(struct mrcd_client *c, uint32_t key)
{
	const struct mrc__mr_view *v = mrcd_client_mr(c, key);
	return v ? &c->mrs[c->last_mr] : NULL;
}

/* ---- memory ----------------------------------------------------------- */

/* A client's region rights (libmrc's MRC_MR_*) are the engine's access
 * bits, so they pass to the engine unchanged, as op codes do. */
_Static_assert(MRC_MR_LOCAL_READ == MRCE_ACCESS_LOCAL_READ &&
	       MRC_MR_REMOTE_WRITE == MRCE_ACCESS_REMOTE_WRITE &&
	       MRC_MR_REMOTE_ATOMIC == MRCE_ACCESS_REMOTE_ATOMIC &&
	       MRC_MR_LOCAL_WRITE == MRCE_ACCESS_LOCAL_WRITE, "region rights are the engine's");

/* Registration maps a region's pages into the daemon, as ibv_reg_mr pins
 * them, so that the data path does not take a page fault on its first
 * touch of each page: ~1 us on bare metal, 17 us on the VMs of the bench
 * (bench/results/daemon-thp.md), where faults were most of the
 * daemons' CPU.  Done in chunks while the loop has nothing else to do
 * (lowest priority idle watcher), so a large region never stalls other
 * clients, and only over a range of the file with no holes: mapping in a
 * hole would allocate memory the client never committed (mrc_alloc_mr
 * allocates its file; a client's own sparse file is left to fault). */
#define POP_CHUNK ((size_t)64 << 20)

static ev_idle pop_idle;   /* maps registered regions in */

static void on_populate(struct ev_loop *loop, ev_idle *w, int revents)
{
	(void)revents;
	for (struct mrcd_client *c = mrcd__clients(); c; c = c->next) {
		for (uint32_t i = 0; c->npop && i < c->max_mrs; i++) {
			struct mrcd_cmr *mr = &c->mrs[i];
			if (!mr->key || !mr->pop)
				continue;
			size_t n = mr->map_len - mr->pop_off;
			if (n > POP_CHUNK)
				n = POP_CHUNK;
			/* A failure (a kernel before 5.14: EINVAL) only costs the
			 * faults this would have saved. */
			if (madvise((char *)mr->map + mr->pop_off, n, MADV_POPULATE_WRITE) < 0)
				n = mr->map_len - mr->pop_off;
			mr->pop_off += n;
			if (mr->pop_off == mr->map_len) {
				mr->pop = 0;
				c->npop--;
			}
			return;
		}
	}
	ev_idle_stop(loop, w);
}

static void populate_later(struct mrcd_client *c, struct mrcd_cmr *mr, int fd, off_t at)
{
	off_t hole = lseek(fd, at, SEEK_HOLE);
	if (hole < 0 || (uint64_t)hole < (uint64_t)at + mr->map_len)
		return;
	/* In huge pages if the client's are (lib/mr.c). */
	(void)madvise(mr->map, mr->map_len, MADV_HUGEPAGE);
	mr->pop = 1;
	mr->pop_off = 0;
	c->npop++;
	if (!ev_is_active(&pop_idle))
		ev_idle_start(mrcd_loop(c->d), &pop_idle);
}

int mrcd__do_reg_mr(struct mrcd_client *c, const struct mrc_cli_msg *m, int fd)
{
	struct mrc_cli_reg_mr q;
	memcpy(&q, m->body, sizeof(q));
	if (c->nmr == c->max_mrs)
		return fail(c, m, -EDQUOT, "region limit reached (%u per client; config client_max_mrs)",
			    c->max_mrs);
	if (q.len > c->max_mem - c->mem)
		return fail(c, m, -EDQUOT, "memory limit: %llu of %llu MiB registered, %llu more asked "
			    "(config client_max_mem_mb)", (unsigned long long)(c->mem >> 20),
			    (unsigned long long)(c->max_mem >> 20), (unsigned long long)q.len);
	if (c->uq->mrs >= mrcd__uid_limits()->uid_mrs)
		return fail(c, m, mrcd__uid_refuse(c->uq, -EDQUOT),
			    "region limit of uid %u reached (%u over all its clients; config uid_max_mrs)",
			    (unsigned)c->uid, mrcd__uid_limits()->uid_mrs);
	if (q.len > mrcd__uid_limits()->uid_mem - c->uq->mem)
		return fail(c, m, mrcd__uid_refuse(c->uq, -EDQUOT),
			    "memory limit of uid %u: %llu of %llu MiB registered by all its clients, %llu more asked "
			    "(config uid_max_mem_mb)", (unsigned)c->uid,
			    (unsigned long long)(c->uq->mem >> 20), (unsigned long long)(mrcd__uid_limits()->uid_mem >> 20),
			    (unsigned long long)q.len);
	/* A shrinkable file could be truncated under our mapping, and the
	 * next access would kill the daemon with SIGBUS. */
	int seals = fcntl(fd, F_GET_SEALS);
	if (seals < 0 || !(seals & F_SEAL_SHRINK))
		return fail(c, m, -EINVAL, "the region must be a memfd sealed with F_SEAL_SHRINK");
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return fail(c, m, -EINVAL, "not a memory file");
	if ((uint64_t)st.st_size < q.fd_off + q.len)
		return fail(c, m, -ERANGE, "offset + length beyond the file's %lld bytes",
			    (long long)st.st_size);
	/* Mapped in the file's own page size: a hugetlbfs memfd (st_blksize
	 * its huge page size) maps only at huge-page offsets and lengths. */
	uint64_t pg = (uint64_t)sysconf(_SC_PAGESIZE);
	if ((uint64_t)st.st_blksize > pg && !((uint64_t)st.st_blksize & ((uint64_t)st.st_blksize - 1)))
		pg = (uint64_t)st.st_blksize;
	uint64_t a = q.fd_off & ~(pg - 1);
	uint64_t end = (q.fd_off + q.len + pg - 1) & ~(pg - 1);
	if (end > (uint64_t)st.st_size)
		end = q.fd_off + q.len;     /* a partial last page of a tmpfs file */
	size_t map_len = (size_t)(end - a);
	/* Writable only when the rights let the engine write into it: a
	 * client may register a file it holds read-only as a source, and no
	 * more (the file's open mode is the permission that mmap checks). */
	int wr = !!(q.access & (MRC_MR_REMOTE_WRITE | MRC_MR_REMOTE_ATOMIC | MRC_MR_LOCAL_WRITE));
	void *map = mmap(NULL, map_len, PROT_READ | (wr ? PROT_WRITE : 0), MAP_SHARED, fd, (off_t)a);
	if (map == MAP_FAILED)
		return fail(c, m, -errno, "mmap of the region failed%s", errno == EACCES ?
			    ": the descriptor's open mode does not allow the rights asked" : "");
	uint32_t key;
	int r = mrce_mr_add(mrcd_engine(c->d), c->id, (char *)map + (q.fd_off - a), q.len,
			   q.access & MRC_MR_ALL, &key);
	if (r) {
		munmap(map, map_len);
		return fail(c, m, r, "the engine refused the region (daemon-wide limit?)");
	}
	/* Where the datapath can send from the region in place (verbs:
	 * ibv_reg_mr), it does; elsewhere, or when it cannot (out of regions
	 * or NIC memory), payloads are copied as always, so a failure only
	 * costs speed. */
	int dr = mrc_dp_mem_reg(mrcd_datapath(c->d), (char *)map + (q.fd_off - a), q.len, -1, 0);
	if (dr < 0 && dr != -EOPNOTSUPP)
		mrcd_log(MRCD_LOG_INFO, "client %u region %u: not registered with the datapath (%s): "
			 "its payloads are copied", c->id, key, strerror(-dr));
	uint32_t i = 0;
	while (c->mrs[i].key)
		i++;
	c->mrs[i] = (struct mrcd_cmr){ .view = { .len = q.len, .access = q.access }, .key = key,
				       .map = map, .map_len = map_len, .dp_reg = dr >= 0 ? dr + 1 : 0 };
	if (wr)    /* a read-only mapping cannot take MADV_POPULATE_WRITE */
		populate_later(c, &c->mrs[i], fd, (off_t)a);
	c->nmr++;
	c->mem += q.len;
	c->uq->mrs++;
	c->uq->mem += q.len;
	struct mrc_cli_reg_mr_rep rep = { .key = key };
	return ok(c, m, &rep, sizeof(rep));
}

int mrcd__mr_drop(struct mrcd_client *c, struct mrcd_cmr *mr)
{
	int r = mrce_mr_remove(mrcd_engine(c->d), mr->key);
	if (r)
		return r;
	/* Before the unmap: it waits for the sends still reading it, and
	 * in-process datagrams pointing into it take their own copy. */
	mrc_dp_mem_unreg(mrcd_datapath(c->d), mr->dp_reg - 1);
	mrcd_local_unmap(c->d, mr->map, mr->map_len);
	munmap(mr->map, mr->map_len);
	if (mr->pop)
		c->npop--;
	c->mem -= mr->view.len;
	c->nmr--;
	c->uq->mem -= mr->view.len;
	c->uq->mrs--;
	memset(mr, 0, sizeof(*mr));
	return 0;
}

int mrcd__do_dereg_mr(struct mrcd_client *c, const struct mrc_cli_msg *m)
{
	struct mrc_cli_key q;
	memcpy(&q, m->body, sizeof(q));
	struct mrcd_cmr *mr = find_mr(c, q.key);
	if (!mr)
		return fail(c, m, -ENOKEY, "no region with key %u", q.key);
	/* Work posted before this request may still sit in the rings (the
	 * socket and the rings are not ordered): read it first, so that a
	 * region that posted work references is -EBUSY as documented, not
	 * deregistered under it (which was safe, the work then failing with
	 * a bad key, but not what the client asked for). */
	int picked = 0;
	for (struct mrcd_cqp *qp = c->qps; qp; qp = qp->next) {
		int n;
		while ((n = mrcd_cqp_poll(qp, POLL_BUDGET)) > 0) {
			picked += n;
			mrcd_cqp_activate(qp);
			if (n < POLL_BUDGET)
				break;
		}
	}
	if (picked)
		mrcd_kick(c->d);
	int r = mrcd__mr_drop(c, mr);
	if (r)
		return fail(c, m, r, "region %u is still used by queued work", q.key);
	return ok(c, m, NULL, 0);
}

void mrcd__populate_init(void)
{
	ev_idle_init(&pop_idle, on_populate);
	ev_set_priority(&pop_idle, EV_MINPRI);
}

void mrcd__populate_stop(struct mrcd *d)
{
	ev_idle_stop(mrcd_loop(d), &pop_idle);
}
