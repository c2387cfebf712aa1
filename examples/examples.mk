# Example programs, written against libmrc only; lib/lib.mk makes them
# link build/lib/libmrc.a.
EXAMPLE_PROGS := mrc_bulk mrc_pingpong mrc_alltoall
PROGS += $(EXAMPLE_PROGS)
mrc_bulk_SRCS := examples/bulk.c
mrc_pingpong_SRCS := examples/pingpong.c
mrc_alltoall_SRCS := examples/alltoall.c
