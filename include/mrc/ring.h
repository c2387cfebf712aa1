/* mrc ring ABI, version 2: the shared-memory contract between a client
 * (libmrc, or a GPU kernel) and mrcd.
 *
 * Every QP has a submission ring (SQ: client produces, daemon consumes) and
 * a completion ring (CQ: daemon produces, client consumes), both inside one
 * memfd that the daemon creates, seals (no shrink, no grow) and passes to
 * the client (docs/client.md).  A ring is:
 *
 *     struct mrc_ring_hdr   (3 cache lines, at the ring's offset)
 *     entries x descriptor  (at hdr.desc_off from the header)
 *
 * Rules:
 *  - entries is a power of two; descriptors have a fixed size (64 bytes for
 *    struct mrc_sqe, 32 for struct mrc_cqe) and contain no pointers: local
 *    memory is named by (lkey, offset) into a registered region, remote
 *    memory by (rkey, offset).
 *  - One producer and one consumer per ring.  Indices are free-running
 *    64-bit counters; slot = index & (entries - 1).
 *  - Publication: the producer fills every field of the slot, then stores
 *    the slot's seq word with release semantics: seq = (uint32_t)(index+1).
 *    The consumer of index i waits for an acquire load of slot(i).seq to
 *    equal (uint32_t)(i+1); that value is never left in the slot by any
 *    earlier lap, so no separate phase bit is needed (the daemon
 *    pre-fills each slot's seq with the previous lap's value: "Index
 *    base" below).
 *  - Space: the consumer publishes how far it has consumed in hdr.tail
 *    (release); the producer may write index i only while
 *    i - tail < entries (acquire load of tail).  hdr.head is the
 *    producer's own next index, kept in shared memory so that several
 *    producer contexts (e.g. a host thread and a kernel) can resume it; the
 *    consumer never trusts it.
 *  - head, tail and the doorbell word live on separate cache lines.
 *
 * Doorbell (SQ and CQ alike).  The consumer busy-polls while it has work;
 * when idle it sleeps on an eventfd.  It tells the producer which by the
 * hdr.sleeping word, so the producer makes no syscall per post while the
 * consumer is awake:
 *
 *     consumer going to sleep          producer after publishing seq
 *     store(sleeping, 1)               (seq store, release)
 *     full fence (seq_cst)             full fence (seq_cst)
 *     load slot(tail).seq: ready?      load(sleeping)
 *       yes: sleeping = 0, keep going    1: exchange(sleeping, 0) == 1 ?
 *       no:  block on the eventfd             write(eventfd, 1)
 *
 * The eventfds are the client's, one per direction whatever its QP count
 * (client protocol 4): an SQ producer that finds sleeping == 1 first sets
 * the QP's pending byte in the notify page (below: pending[notify_slot],
 * fence, summary) so the daemon knows which ring to look at, then writes
 * the client's SQ eventfd; the daemon writes the client's CQ eventfd and
 * every waiter re-checks its own CQ.
 *
 * This is Dekker's pattern: each side stores its own word, fences, then
 * loads the other's.  The two fences order each store before each load, so
 * at least one side sees the other: either the consumer sees the new
 * descriptor and does not sleep, or the producer sees sleeping == 1 and
 * rings.  Without the fences (a release store followed by a plain load may
 * be reordered by the CPU's store buffer on x86 too) both could miss and
 * the consumer would sleep on a posted descriptor.  The exchange makes one
 * producer ring once per sleep; a spurious wake-up is harmless.  Rings
 * whose header has MRC_RING_F_POLLED set have no doorbell: their producer
 * wakes the daemon through the notify page instead ("Polled rings").
 *
 * CUDA producers (the ring lives in host-pinned memory mapped into the
 * device with cudaHostRegister(..., cudaHostRegisterMapped) or allocated
 * by the client and registered the same way; use the device pointer from
 * cudaHostGetDevicePointer):
 *  1. One producer per ring: either one thread owns the SQ, or a warp
 *     claims slots with one lane doing atomicAdd on a device-local copy of
 *     head and shuffling the base index to the others; slots must still be
 *     published in index order (the daemon consumes strictly in order, so
 *     a hole stalls the ring until it is filled).
 *  2. Check space: load hdr->tail through a volatile pointer (PCIe reads
 *     of host memory are coherent with the CPU's stores) and wait while
 *     index - tail >= entries.
 *  3. Write the descriptor fields (everything except seq) with volatile or
 *     relaxed stores (cuda::atomic_ref<..., thread_scope_system> relaxed,
 *     or plain volatile); they may be written in any order.
 *  4. __threadfence_system(): makes the descriptor visible to the host
 *     before anything that follows.
 *  5. Store seq = (uint32_t)(index + 1) with a volatile 32-bit store
 *     (or cuda::atomic_ref<uint32_t, thread_scope_system>::store(release)).
 *     The store must be one aligned 32-bit store, never split.
 *  6. Advance the device's copy of head; optionally store hdr->head.
 *  7. Do not ring the doorbell: a kernel cannot write an eventfd.  Either
 *     create the QP with MRC_RING_F_POLLED (the daemon polls that SQ while
 *     work flows and is woken through the notify page once it has parked
 *     it: "Polled rings" below), or
 *     have a host proxy thread watch hdr->head or a flag and run the
 *     producer doorbell sequence above on the kernel's behalf.
 * Completions are read the same way in reverse: volatile load of seq until
 * it equals index + 1, __threadfence_system(), read the fields, then store
 * tail = index + 1 (volatile) once the slot's contents are no longer needed.
 * include/mrc/gpu.h implements all of this (and the polled-ring wake-up
 * below) once, for kernels and host threads alike.
 *
 * Polled rings (version 2).  A ring with MRC_RING_F_POLLED has no eventfd
 * doorbell (a kernel cannot write one) and is not polled forever either:
 * the daemon polls it busily while work flows, and when it has been idle
 * a while it stores sleeping = 1 and stops looking at it.  The producer
 * then wakes it through the client's notify page (struct mrc_notify, one
 * per client, shared by all its polled rings), with plain stores only (no
 * read-modify-write: system-scope atomics over PCIe are not portable):
 *
 *     daemon parking a ring             producer after publishing seq
 *     store(sleeping, 1)                (seq store, release)
 *     full fence                        full fence
 *     load slot(tail).seq: ready?       load(sleeping)
 *       yes: sleeping = 0, keep it        1: store(pending[notify_slot], 1)
 *       no:  parked                          full fence
 *                                            store(summary, 1)
 *     daemon, every poll interval (busy while any ring is active, backing
 *     off to cfg gpu_poll_max_us when all are parked):
 *     load(summary) == 1?  store(summary, 0); full fence;
 *       each pending[i] == 1: store(pending[i], 0); full fence;
 *                             sleeping = 0; poll ring i again
 *
 * The first pair is the doorbell's Dekker pattern (either the daemon sees
 * the descriptor or the producer sees sleeping == 1).  The second pair is
 * the same pattern on pending/summary: the producer's fence orders its
 * pending store before its summary store, the daemon's fence orders its
 * summary clear before its pending loads, so a daemon that clears a
 * summary = 1 it did not read still finds the pending byte.  A producer
 * that sees sleeping == 1 stores the flags every time until the daemon
 * clears sleeping (harmless repeats); only the daemon clears anything.
 * The daemon scans the pending bytes of a client only when its summary
 * is set, so idle rings cost nothing per poll.
 *
 * Index base (version 2).  Indices need not start at 0: hdr.base is the
 * first index of both rings (CREATE_QP's index_base, used to test
 * wraparound).  The daemon pre-fills every slot's seq with the value the
 * slot would hold after the previous lap (index - entries + 1), so a slot
 * of the first lap never matches by accident.  Every comparison of
 * indices is by unsigned difference (i - tail < entries), never by <.
 *
 * The daemon treats everything in the rings as untrusted: it reads each
 * descriptor once into private memory before validating it, keeps its own
 * copy of entries/mask/indices, and a malformed descriptor produces an
 * error completion (docs/client.md), never a fault.
 */
#ifndef MRC_RING_H
#define MRC_RING_H

#include <stdint.h>
#include <string.h>

#if !defined(__CUDACC__) && !defined(__cplusplus) /* C11 atomics: C only */
#include <stdatomic.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define MRC_RING_MAGIC   0x5243524du   /* "MRCR" little-endian */
#define MRC_RING_VERSION 2u
#define MRC_RING_CACHELINE 64u

/* hdr.kind */
#define MRC_RING_SQ 1u
#define MRC_RING_CQ 2u

/* hdr.flags (set by the daemon at creation) */
#define MRC_RING_F_POLLED   0x1u  /* consumer always polls: no doorbell */
/* hdr.status bits (set by the producer, read by the consumer) */
#define MRC_RING_S_OVERFLOW 0x1u  /* CQ: completions were lost (client did
                                     not poll); the QP is in error */

#define MRC_RING_MIN_ENTRIES 8u
#define MRC_RING_MAX_ENTRIES 65536u

struct mrc_ring_hdr {
	/* line 0: written once by the daemon at creation */
	uint32_t magic;            /* MRC_RING_MAGIC */
	uint32_t version;          /* MRC_RING_VERSION */
	uint32_t kind;             /* MRC_RING_SQ / MRC_RING_CQ */
	uint32_t entries;          /* power of two */
	uint32_t desc_size;        /* sizeof one descriptor */
	uint32_t flags;            /* MRC_RING_F_* */
	uint32_t qpn;              /* the QP this ring belongs to */
	uint32_t notify_slot;      /* SQ: its byte in mrc_notify.pending */
	uint64_t desc_off;         /* descriptors, from the header's start */
	uint64_t base;             /* first index of the ring (index_base) */
	uint8_t pad0[MRC_RING_CACHELINE - 48];
	/* line 1: producer */
	uint64_t head;             /* producer's next index (advisory) */
	uint32_t status;           /* MRC_RING_S_* */
	uint8_t pad1[MRC_RING_CACHELINE - 12];
	/* line 2: consumer */
	uint64_t tail;             /* consumer's next index: slots below are free */
	uint32_t sleeping;         /* 1: consumer is (about to be) asleep */
	uint8_t pad2[MRC_RING_CACHELINE - 12];
};

/* The client's notify page (memfd, shared by all of its rings: one
 * pending byte per QP; see "Polled rings" above).  Created by the daemon
 * at the client's HELLO and passed in its reply (client protocol 4). */
#define MRC_NOTIFY_MAGIC 0x544e524du  /* "MRNT" little-endian */
struct mrc_notify {
	/* line 0: written once by the daemon */
	uint32_t magic;            /* MRC_NOTIFY_MAGIC */
	uint32_t version;          /* MRC_RING_VERSION */
	uint32_t slots;            /* bytes in pending[] */
	uint32_t rsvd;
	/* The power-floor hint (docs/power.md "Power floor"), in what was
	 * line 0's padding (older daemons leave it 0, older clients ignore
	 * it): the daemon stores 1 when one of the client's QPs gets send
	 * work after none had any, 0 when the last completes (after config
	 * power_floor_hold_us); floor_raises counts the raises, so a reader
	 * that polls slowly still sees a phase it missed.  Only the daemon
	 * writes them and it never reads them back: a client that scribbles
	 * here fools only itself. */
	uint32_t power_floor;
	uint32_t floor_raises;
	uint8_t pad0[MRC_RING_CACHELINE - 24];
	/* line 1: producers store 1, the daemon stores 0 */
	uint32_t summary;
	uint8_t pad1[MRC_RING_CACHELINE - 4];
	/* line 2 on: one byte per polled ring, same rule */
	uint8_t pending[];
};

/* Submission descriptor opcodes (ring values; stable ABI).  These are the
 * one definition of mrc's op codes: the daemon's engine and the wire
 * format take theirs from here, so an op is never translated between the
 * ring, the engine and the wire. */
enum mrc_sqe_op {
	MRC_SQE_WRITE = 1,
	MRC_SQE_WRITE_IMM = 2,
	MRC_SQE_SEND = 3,
	MRC_SQE_SEND_IMM = 4,
	MRC_SQE_ATOMIC_ADD = 5,  /* remote u64 at (rkey, roff) += add */
	MRC_SQE_RECV = 6,        /* post a receive buffer (lkey, loff, len) */
	MRC_SQE_OP_MAX = 6,
};

/* sqe.flags.  FENCE (as IBV_SEND_FENCE): not started until every earlier
 * work request of the QP has completed (not on RECV). */
#define MRC_SQE_F_FENCE 0x1u

/* 64 bytes.  Fields unused by an op must be zero (rsvd always). */
struct mrc_sqe {
	uint32_t seq;              /* publication word, written last */
	uint8_t op;                /* enum mrc_sqe_op */
	uint8_t flags;             /* MRC_SQE_F_*; others must be 0 */
	uint16_t rsvd0;
	uint64_t wr_id;            /* echoed in the completion */
	uint32_t lkey;             /* local region (not ATOMIC_ADD) */
	uint32_t rkey;             /* remote region (WRITE*, ATOMIC_ADD) */
	uint64_t loff;             /* offset into the local region */
	uint64_t len;              /* bytes, <= 1 GiB */
	uint64_t roff;             /* offset into the remote region */
	uint64_t add;              /* ATOMIC_ADD addend */
	uint32_t imm;              /* *_IMM immediate */
	uint32_t rsvd1;
};

/* Completion opcodes. */
enum mrc_cqe_op {
	MRC_CQE_WRITE = 1,
	MRC_CQE_WRITE_IMM = 2,
	MRC_CQE_SEND = 3,
	MRC_CQE_SEND_IMM = 4,
	MRC_CQE_ATOMIC_ADD = 5,
	MRC_CQE_RECV = 6,          /* a SEND landed in a posted RECV */
	MRC_CQE_RECV_WRITE_IMM = 7,/* a remote WRITE_IMM was placed (wr_id 0) */
	MRC_CQE_OP_MAX = 7,
};
#define MRC_CQE_F_IMM 0x1u     /* imm is valid */

/* 32 bytes. */
struct mrc_cqe {
	uint32_t seq;              /* publication word, written last */
	int32_t status;            /* 0 or negative errno (mrc_strerror) */
	uint64_t wr_id;
	uint32_t byte_len;
	uint32_t imm;
	uint32_t qpn;
	uint8_t op;                /* enum mrc_cqe_op; 0 if the sqe op was bad */
	uint8_t flags;             /* MRC_CQE_F_* */
	uint16_t rsvd;
};

#ifndef __cplusplus
_Static_assert(sizeof(struct mrc_ring_hdr) == 3 * MRC_RING_CACHELINE, "ring hdr");
_Static_assert(sizeof(struct mrc_sqe) == 64, "sqe size");
_Static_assert(sizeof(struct mrc_cqe) == 32, "cqe size");
/* The power-floor words took padding: the page's layout is unchanged. */
_Static_assert(sizeof(struct mrc_notify) == 2 * MRC_RING_CACHELINE, "notify page layout");
/* A completion's op is its submission's op (RECV_WRITE_IMM has none). */
#define MRC__SAME_OP(x) ((int)MRC_CQE_##x == (int)MRC_SQE_##x)
_Static_assert(MRC__SAME_OP(WRITE) && MRC__SAME_OP(WRITE_IMM) && MRC__SAME_OP(SEND) &&
	       MRC__SAME_OP(SEND_IMM) && MRC__SAME_OP(ATOMIC_ADD) && MRC__SAME_OP(RECV) &&
	       (int)MRC_CQE_OP_MAX == (int)MRC_SQE_OP_MAX + 1,
	       "cqe ops answer sqe ops one to one");
#undef MRC__SAME_OP
#endif

/* Bytes a ring of n entries of desc_size occupies (header + descriptors),
 * rounded up to a cache line. */
static inline uint64_t mrc_ring_bytes(uint32_t n, uint32_t desc_size)
{
	uint64_t b = sizeof(struct mrc_ring_hdr) + (uint64_t)n * desc_size;
	return (b + MRC_RING_CACHELINE - 1) & ~(uint64_t)(MRC_RING_CACHELINE - 1);
}

/* Lays out a ring as mrcd creates it: the header (descriptors right after
 * it, head = tail = base) and every slot's seq pre-filled with what the
 * previous lap would have left ("Index base"), so that no slot of the
 * first lap matches its index by accident.  h must point at
 * mrc_ring_bytes(entries, desc_size) bytes.  mrcd uses it, and so do the
 * tests and benchmarks that stand in for mrcd. */
static inline void mrc_ring_layout(struct mrc_ring_hdr *h, uint32_t kind, uint32_t entries,
				   uint32_t desc_size, uint32_t flags, uint32_t qpn,
				   uint64_t base, uint32_t notify_slot)
{
	memset(h, 0, sizeof(*h));
	h->magic = MRC_RING_MAGIC;
	h->version = MRC_RING_VERSION;
	h->kind = kind;
	h->entries = entries;
	h->desc_size = desc_size;
	h->flags = flags;
	h->qpn = qpn;
	h->notify_slot = notify_slot;
	h->desc_off = sizeof(*h);
	h->base = base;
	h->head = base;
	h->tail = base;
	unsigned char *desc = (unsigned char *)h + h->desc_off;
	for (uint64_t i = base; i != base + entries; i++) {
		uint32_t seq = (uint32_t)(i - entries + 1);
		memcpy(desc + (i & (entries - 1)) * desc_size, &seq, sizeof(seq));
	}
}

#if !defined(__CUDACC__) && !defined(__cplusplus) /* C11 atomics: C only */
/* ---- host-side helpers (C11 atomics) ----------------------------------
 * The ring words are plain integers in the ABI; these casts access them
 * atomically (same size and alignment on every supported platform). */
#define MRC__A32(p) ((_Atomic uint32_t *)(void *)(p))
#define MRC__A64(p) ((_Atomic uint64_t *)(void *)(p))

static inline uint32_t mrc_ring_seq_load(const uint32_t *seq)
{
	return atomic_load_explicit(MRC__A32(seq), memory_order_acquire);
}
static inline void mrc_ring_seq_publish(uint32_t *seq, uint64_t index)
{
	atomic_store_explicit(MRC__A32(seq), (uint32_t)(index + 1), memory_order_release);
}
static inline uint64_t mrc_ring_tail_load(const struct mrc_ring_hdr *h)
{
	return atomic_load_explicit(MRC__A64(&h->tail), memory_order_acquire);
}
static inline void mrc_ring_tail_store(struct mrc_ring_hdr *h, uint64_t tail)
{
	atomic_store_explicit(MRC__A64(&h->tail), tail, memory_order_release);
}
/* Producer side of the doorbell: returns 1 when the caller must write the
 * consumer's eventfd (it was asleep), 0 otherwise. */
static inline int mrc_ring_need_wake(struct mrc_ring_hdr *h)
{
	atomic_thread_fence(memory_order_seq_cst);
	if (!atomic_load_explicit(MRC__A32(&h->sleeping), memory_order_relaxed))
		return 0;
	return atomic_exchange_explicit(MRC__A32(&h->sleeping), 0, memory_order_acq_rel) != 0;
}
/* Consumer side: announce sleep, then re-check the next slot's seq.
 * Returns 1 when work arrived meanwhile (sleeping is cleared again, do not
 * block), 0 when the caller may block on its eventfd. */
static inline int mrc_ring_prepare_sleep(struct mrc_ring_hdr *h, const uint32_t *next_seq,
					 uint64_t next_index)
{
	atomic_store_explicit(MRC__A32(&h->sleeping), 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_seq_cst);
	if (atomic_load_explicit(MRC__A32(next_seq), memory_order_acquire) ==
	    (uint32_t)(next_index + 1)) {
		atomic_store_explicit(MRC__A32(&h->sleeping), 0, memory_order_relaxed);
		return 1;
	}
	return 0;
}
static inline void mrc_ring_wake_done(struct mrc_ring_hdr *h)
{
	atomic_store_explicit(MRC__A32(&h->sleeping), 0, memory_order_relaxed);
}
#endif /* !__CUDACC__ && !__cplusplus */

#ifdef __cplusplus
}
#endif
#endif
