/* The calling thread's EEVDF slice (Linux 6.12+: a task that wakes with a
 * shorter slice than the running task's preempts it), shared by mrcd's
 * sched_slice_us and mrc_pingpong -L.  Older kernels take sched_runtime
 * and ignore it. */
#ifndef MRC_COMMON_SCHED_SLICE_H
#define MRC_COMMON_SCHED_SLICE_H

#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <unistd.h>
#include <sys/syscall.h>

/* The kernel's struct sched_attr, its first version (glibc wraps
 * sched_setattr only from 2.41): the slice is a fair-class thread's
 * sched_runtime. */
struct mrc__slice_attr {
	uint32_t size, policy;
	uint64_t flags;
	int32_t nice;
	uint32_t priority;
	uint64_t runtime, deadline, period;
};

/* Sets the calling thread's slice to us (0: the kernel's default);
 * returns 0 or a negative errno (-EPERM for a real-time thread, whose
 * slice is not the fair class's).  The policy, nice value and flags
 * stay. */
static inline int mrc__sched_slice_set(uint32_t us)
{
	struct mrc__slice_attr a = { .size = sizeof(a) };
	if (syscall(SYS_sched_getattr, 0, &a, sizeof(a), 0))
		return -errno;
	if (a.policy != SCHED_OTHER && a.policy != SCHED_BATCH)
		return -EPERM;
	a.size = sizeof(a);
	a.runtime = (uint64_t)us * 1000;
	a.deadline = a.period = 0;
	return syscall(SYS_sched_setattr, 0, &a, 0) ? -errno : 0;
}

#endif
