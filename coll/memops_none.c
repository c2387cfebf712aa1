/* libmrc-coll built without CUDA (no nvcc, gpu/cuda.mk), and the test
 * support library: no device backend; mrc_coll_set_memory says so. */
#include <errno.h>

#include "coll/devmem.h"

int mrc__coll_cuda_devops(const struct mrc__coll_devops **out)
{
	(void)out;
	return -ENOSYS;
}
