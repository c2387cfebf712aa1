/* Zeroed memory whose pages cost nothing until written.  calloc clears
 * (writes) a block itself unless glibc happens to serve it from a fresh
 * mapping, and the heap it reuses is resident anyway; an anonymous
 * mapping is the kernel's zero page until a write.  What a clean run
 * never writes, the cold halves of path records (store.h), a QP's send
 * queue when it only receives, the window pool's blocks no QP took yet
 * (wpool.c), then costs nothing: 8,192 simulated hosts fit in 1 GiB
 * (bench/results/sim_fast.md).  Below a page
 * a mapping would cost more than it saves: calloc.  Memory, not I/O: the
 * engine's only mmap (scripts/check-layers.sh). */
#include <stdlib.h>
#include <sys/mman.h>

#include "transport/zmem.h"

void *mrce__zalloc(size_t len)
{
	if (len < MRCE__ZMEM_PAGE)
		return calloc(1, len ? len : 1);
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

void mrce__zfree(void *p, size_t len)
{
	if (!p)
		return;
	if (len < MRCE__ZMEM_PAGE)
		free(p);
	else
		munmap(p, len);
}
