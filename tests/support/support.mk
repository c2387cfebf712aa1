# Test support library (build/libmrctest.a): the in-memory multipath
# channel and guarded buffers.  Guarded so that being reached both from
# tests/tests.mk and from a deeper Makefile glob adds the sources once.
ifndef MRC_TSUP_MK
MRC_TSUP_MK := 1
TEST_SUPPORT_SRCS += tests/support/chan.c
TEST_SUPPORT_SRCS += tests/support/chan_diag.c
TEST_SUPPORT_SRCS += tests/support/gbuf.c
TEST_SUPPORT_SRCS += tests/support/etest.c
TEST_SUPPORT_SRCS += tests/support/mrcd_spawn.c
TEST_SUPPORT_SRCS += tests/support/get1.c
TEST_SUPPORT_SRCS += tests/support/coll_matrix.c
TEST_SUPPORT_SRCS += tests/support/coll_ranks.c
# the non-blocking tests' start-and-test loop (h-pregate)
TEST_SUPPORT_SRCS += tests/support/coll_nb.c
TEST_SUPPORT_SRCS += tests/support/qpbytes.c
TEST_SUPPORT_SRCS += tests/support/fake_verbs.c
endif
