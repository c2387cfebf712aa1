/* mrc/gpu.h: posting to mrcd from a GPU kernel (or a host thread) through
 * a QP's rings, and the one-sided primitives collective and MoE kernels
 * build on (put, signal, put_with_signal, wait, flush).
 *
 * CONTRACT SKELETON (lead): the struct and the signatures below are the
 * interface the gpu/ helpers implement; bodies follow the ring ABI
 * (mrc/ring.h, version 2).
 *
 * The same inline source serves CUDA device code (__host__ __device__
 * under nvcc) and host threads (plain C11), so the protocol is tested
 * where there is no GPU.  One channel has one producer: one thread, or
 * one lane of a warp, calls these functions.
 */
#ifndef MRC_GPU_H
#define MRC_GPU_H

#include <stdint.h>

#include "mrc/ring.h"

#ifdef __cplusplus
extern "C" {
#endif

#ifdef __CUDACC__
#define MRC_GPU_FN static __host__ __device__ inline
#else
#define MRC_GPU_FN static inline
#endif

/* A channel: one QP's rings as its producer sees them (host pointers from
 * mrc_gpu_chan_init, or device pointers from mrc_gpu_chan_to_device), the
 * producer's private indices, and the remote semaphore that signal
 * increments.  Plain data: copy it to the device (kernel argument or
 * device memory); one copy per producer, never shared between two. */
struct mrc_gpu_chan {
	struct mrc_ring_hdr *sqh;
	struct mrc_sqe *sq;
	struct mrc_ring_hdr *cqh;
	struct mrc_cqe *cq;
	struct mrc_notify *notify;   /* the client's notify page (polled QP) */
	uint32_t notify_slot;
	uint32_t sq_mask, cq_mask;
	uint32_t qpn;
	uint64_t sq_head;            /* next SQ index to write */
	uint64_t sq_limit;           /* cached SQ tail + entries */
	uint64_t cq_tail;            /* next CQ index to read */
	uint64_t posted;             /* send-side work requests posted */
	uint64_t completed;          /* ... and completed */
	int32_t error;               /* first error completion (sticky), 0 */
	uint32_t sem_rkey;           /* remote semaphore (u64) for signal */
	uint64_t sem_roff;
	const volatile uint32_t *abort; /* non-zero: the daemon is gone */
	uint64_t timeout_ns;         /* bound on any spin; 0: none */
};

/* ---- device/host producer (inline, mrc/ring.h rules) ------------------ */
/* Each returns 0 or a negative errno: -EPIPE once *abort is set,
 * -ETIMEDOUT after timeout_ns of spinning, or the channel's sticky error
 * (an error completion's status).  Posting blocks (spins, consuming
 * completions) while the SQ is full. */
/* int mrc_gpu_post(struct mrc_gpu_chan *ch, const struct mrc_sqe *s);
 * int mrc_gpu_poll(struct mrc_gpu_chan *ch);           completions consumed, or < 0
 * int mrc_gpu_put(struct mrc_gpu_chan *ch, uint32_t rkey, uint64_t roff,
 *                 uint32_t lkey, uint64_t loff, uint64_t bytes);
 * int mrc_gpu_put_imm(..., uint32_t imm);               WRITE_IMM
 * int mrc_gpu_atomic_add(struct mrc_gpu_chan *ch, uint32_t rkey, uint64_t roff, uint64_t add);
 * int mrc_gpu_signal(struct mrc_gpu_chan *ch);          +1 on the remote semaphore, after every earlier put
 * int mrc_gpu_put_with_signal(struct mrc_gpu_chan *ch, uint32_t rkey, uint64_t roff,
 *                 uint32_t lkey, uint64_t loff, uint64_t bytes);
 * int mrc_gpu_wait(const struct mrc_gpu_chan *ch, const uint64_t *sem, uint64_t expected);
 *                                                        until *sem >= expected (acquire)
 * int mrc_gpu_flush(struct mrc_gpu_chan *ch);           every earlier put completed (sources reusable)
 */

/* ---- host side (libmrc-gpu, gpu/) -------------------------------------- */
#if !defined(__CUDA_ARCH__)
struct mrc_qp;
struct mrc_ctx;
struct mrc_gpu_watch;

/* Host-pointer channel on a QP created with MRC_QP_POLLED and connected;
 * sem_rkey/sem_roff: the peer's semaphore that mrc_gpu_signal increments
 * (0/0: signal returns -EINVAL). */
int mrc_gpu_chan_init(struct mrc_qp *qp, uint32_t sem_rkey, uint64_t sem_roff,
		      struct mrc_gpu_chan *out);
/* A watchdog thread per context: sets its abort word when the daemon's
 * socket hangs up; mrc_gpu_watch_attach points a channel at it. */
int mrc_gpu_watch_start(struct mrc_ctx *ctx, struct mrc_gpu_watch **out);
void mrc_gpu_watch_attach(struct mrc_gpu_watch *w, struct mrc_gpu_chan *ch);
void mrc_gpu_watch_stop(struct mrc_gpu_watch *w);

/* CUDA (built when CUDA is present; -ENOSYS otherwise): the device view
 * of a host channel (its ring mapping, notify page and abort word
 * registered with cudaHostRegister(..., cudaHostRegisterMapped)). */
int mrc_gpu_chan_to_device(const struct mrc_gpu_chan *host, struct mrc_gpu_chan *dev);
void mrc_gpu_chan_release(const struct mrc_gpu_chan *host);

/* ---- GPU memory as transfer source and target (gpu/gpumem.c) ----------
 * mrc_gpu_reg_mr(3), docs/gpu.md "GPU memory".  On the UDP datapath mrcd
 * cannot reach device memory: a device region is shadowed by a pinned
 * libmrc region of the same length (its key is the shadow's), and the
 * copies run in this process, which owns the CUDA context.  -ENOSYS when
 * built without CUDA, -ENODEV when there is no GPU. */
struct mrc_mr;
struct mrc_gpu_mr;
int mrc_gpu_reg_mr(struct mrc_ctx *ctx, void *devptr, uint64_t len, uint32_t access,
		   struct mrc_gpu_mr **out);
int mrc_gpu_dereg_mr(struct mrc_gpu_mr *g);
/* The host shadow: mrc_mr_key() is the rkey peers write to (landed data
 * stays there until mrc_gpu_mr_to_device) and the lkey of host posts. */
struct mrc_mr *mrc_gpu_mr_host(const struct mrc_gpu_mr *g);
/* Bytes per staging copy and per WRITE (default 1 MiB, at most 1 GiB). */
int mrc_gpu_mr_set_chunk(struct mrc_gpu_mr *g, uint64_t bytes);
/* Device [loff, loff+len) to the peer's (rkey, roff): copied to the
 * shadow chunk by chunk on the region's stream, each chunk's WRITE posted
 * as soon as its copy is done while the next chunks copy.  Blocks until
 * every WRITE completed (0), the first error completion's status, or
 * -ETIMEDOUT after timeout_ms (< 0: none).  The QP must have no other
 * work outstanding meanwhile; the device data must be ready (the kernel
 * that wrote it has completed: the copies run on a stream of their own). */
int mrc_gpu_write(struct mrc_qp *qp, struct mrc_gpu_mr *src, uint64_t loff, uint64_t len,
		  uint32_t rkey, uint64_t roff, int timeout_ms);
/* Synchronous copies between the shadow and the device: to_device after
 * a peer's data landed (e.g. on its WRITE_IMM completion), from_device
 * before a host post reads the shadow itself. */
int mrc_gpu_mr_to_device(struct mrc_gpu_mr *g, uint64_t off, uint64_t len);
int mrc_gpu_mr_from_device(struct mrc_gpu_mr *g, uint64_t off, uint64_t len);
#endif

#ifdef __cplusplus
}
#endif
#endif
