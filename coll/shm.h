/* Shared-memory rings between ranks of one host (coll/shm.c, docs/coll.md
 * "Shared memory between ranks of a host").  One ring per directed pair:
 * the producer creates it, the consumer maps it and unlinks the name.
 * Chunk k goes to slot k % slots; the producer publishes a chunk by
 * storing its length and then advancing tail (release), the consumer
 * takes it after reading tail (acquire) and frees the slot by advancing
 * head (release): the put-then-signal and credits of the QP path, with
 * head as the credits.  Either side may raise the abort word.
 *
 * The peer is untrusted: every value read from the mapping (tail, head,
 * a length, the abort word) is checked before use, and a bad one ends
 * the ring with -EPROTO; the geometry is never re-read after mapping. */
#ifndef MRC_COLL_SHM_H
#define MRC_COLL_SHM_H

#include <stdalign.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define MRC__SHM_MAGIC 0x6d726373u     /* "mrcs" */
#define MRC__SHM_MAXSLOTS 64           /* = MRC__COLL_MAXWIN */
#define MRC__SHM_HDR 4096              /* the slots start here */

/* The ring's header, at the start of the mapping (shared). */
struct mrc__coll_ring_hdr {
	uint32_t magic, slots, slot_bytes, pad;
	alignas(64) _Atomic uint64_t tail;   /* producer: chunks published */
	alignas(64) _Atomic uint64_t head;   /* consumer: chunks taken */
	alignas(64) _Atomic int32_t abort;   /* either side: nonzero = aborted */
	alignas(64) _Atomic uint32_t len[MRC__SHM_MAXSLOTS];   /* bytes of each slot's chunk */
};
_Static_assert(sizeof(struct mrc__coll_ring_hdr) <= MRC__SHM_HDR, "header fits its page");

/* One side's view (private). */
struct mrc__coll_ring_ring {
	struct mrc__coll_ring_hdr *h;
	uint8_t *data;
	size_t map_len;
	uint32_t slots, slot_bytes;
	uint64_t pos;      /* producer: chunks published; consumer: chunks taken */
	uint64_t seen;     /* producer: head last read; consumer: tail last read */
	int err;           /* sticky: -EPROTO or -ECONNABORTED */
	int linked;        /* we created the name and it may still exist */
	char name[80];
};

/* The ring's name: uid, the communicator's service id and nonce, and
 * the ranks (from -> to). */
void mrc__coll_ring_name(char *buf, size_t n, uint32_t sid, uint64_t nonce, uint32_t from, uint32_t to);
/* Producer: creates name (O_EXCL, 0600) with slots x slot_bytes (slots
 * 1..MRC__SHM_MAXSLOTS, slot_bytes a nonzero multiple of 64). */
int mrc__coll_ring_create(struct mrc__coll_ring_ring *r, const char *name, uint32_t slots,
		    uint32_t slot_bytes);
/* Consumer: maps name, checks owner, mode, size and header against the
 * geometry expected, then unlinks the name (both sides have mapped it). */
int mrc__coll_ring_open(struct mrc__coll_ring_ring *r, const char *name, uint32_t slots, uint32_t slot_bytes);
/* Unmaps (and unlinks a name created and never opened).  Idempotent. */
void mrc__coll_ring_close(struct mrc__coll_ring_ring *r);

/* Producer: 1 when the next slot is free, 0 when every slot is out (no
 * credit), or -EPROTO / -ECONNABORTED. */
int mrc__coll_ring_room(struct mrc__coll_ring_ring *r);
/* Producer: the next slot (slot_bytes long); fill it, then push. */
uint8_t *mrc__coll_ring_slot(struct mrc__coll_ring_ring *r);
/* Producer: publishes len bytes of the next slot (after room() said 1). */
int mrc__coll_ring_push(struct mrc__coll_ring_ring *r, uint32_t len);
/* Consumer: 1 and the oldest chunk (valid until pop), 0 when none, or
 * -EPROTO / -ECONNABORTED. */
int mrc__coll_ring_peek(struct mrc__coll_ring_ring *r, const uint8_t **data, uint32_t *len);
/* Consumer: frees the oldest chunk's slot (the producer's credit). */
void mrc__coll_ring_pop(struct mrc__coll_ring_ring *r);
/* Either side: raises the ring's abort word (seen by both). */
void mrc__coll_ring_abort(struct mrc__coll_ring_ring *r);
/* Either side: -ECONNABORTED when the abort word is up, else 0. */
int mrc__coll_ring_aborted(struct mrc__coll_ring_ring *r);

#endif
