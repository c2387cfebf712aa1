# Example programs, written against libmrc only; lib/lib.mk makes them
# link build/lib/libmrc.a.
EXAMPLE_PROGS := mrc_bulk mrc_pingpong mrc_alltoall mrc_gpu_put
PROGS += $(EXAMPLE_PROGS)
mrc_bulk_SRCS := examples/bulk.c
mrc_pingpong_SRCS := examples/pingpong.c
mrc_alltoall_SRCS := examples/alltoall.c
# The GPU put flow on a host thread (examples/gpu_put.cu: the kernel).
mrc_gpu_put_SRCS := examples/gpu_put_host.c gpu/chan.c gpu/watch.c
ROOT_TESTS += tests/root/gpu_put.sh
