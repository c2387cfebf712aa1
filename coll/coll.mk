# libmrc-coll: collectives over libmrc (docs/coll.md).  Shared and static,
# built like libmrc (position-independent objects in one directory), with
# its pkg-config file and man page (mrc-coll-perf: tools/coll-perf.mk).
LIBCOLL_VERSION := 2.1.0
COLL_SRCS := coll/reduce.c coll/sched.c coll/forest.c coll/comm.c coll/run.c coll/boot.c coll/shm.c coll/coll.c coll/verify.c coll/moe.c coll/moe_node.c coll/a2a2d.c coll/req.c coll/strag.c coll/strag_name.c \
	coll/memops_dev.c
# Pre-gated MoE dispatch and the expert fetch (docs/coll.md "Pre-gated dispatch")
COLL_SRCS += coll/pregate.c coll/pregate_fetch.c coll/pregate_hdr.c
install-coll: install-coll-pregate
.PHONY: install-coll-pregate
install-coll-pregate:
	install -d $(DESTDIR)$(PREFIX)/share/man/man3
	install -m 644 man/mrc_coll_moe_pregate.3 $(DESTDIR)$(PREFIX)/share/man/man3/
# The perf tools' option parsing (verify.c) checks numbers with common/'s
# parser; libmrc exports only its API, so the library carries its own copy.
COLL_LIB_EXTRA := common/parse.c

# GPU buffers (docs/coll.md, "GPU buffers"): with nvcc (the test of
# gpu/cuda.mk, which is read after this file) the library gets the CUDA
# backend and the reduction kernels (nvcc, sm_90) and links cudart; without,
# memops_none.c (-ENOSYS).  The test support library always takes
# memops_none.c: tests inject a fake backend and never link CUDA.
COLL_HAVE_CUDA := $(if $(wildcard $(or $(CUDA_HOME),/usr/local/cuda)/bin/nvcc),1,)
ifeq ($(COLL_HAVE_CUDA),1)
COLL_LIB_SRCS := $(COLL_SRCS) $(COLL_LIB_EXTRA) coll/memops_cuda.c
# (and libmrc-gpu's CUDA error mapping, gpu/cuda_err.c)
COLL_CU_PIC := $(B)/lib/pic/coll/reduce_cuda.cu.o $(B)/lib/pic/gpu/cuda_err.o
$(B)/lib/pic/gpu/cuda_err.o: CFLAGS_ALL += $(CUDA_CFLAGS)
COLL_LDLIBS = $(CUDA_LDLIBS) -lstdc++
$(B)/lib/pic/coll/memops_cuda.o: CFLAGS_ALL += $(CUDA_CFLAGS)
$(B)/lib/pic/%.cu.o: %.cu
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCC_FLAGS) -Xcompiler -fPIC -MMD -MP -c $< -o $@
# The GPU-machine check (scripts/gpu-check.sh builds the same there
# without make): built here so that it always compiles; it skips without a
# GPU.
$(B)/tests/gpu/collcheck: $(B)/tests/gpu/collcheck.o $(B)/lib/libmrc-coll.a $(B)/lib/libmrc.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_ALL) -o $@ $^ $(COLL_LDLIBS) -lm -lpthread
$(B)/tests/gpu/collcheck.o: CFLAGS_ALL += $(CUDA_CFLAGS)
all: $(B)/tests/gpu/collcheck
else
COLL_LIB_SRCS := $(COLL_SRCS) $(COLL_LIB_EXTRA) coll/memops_none.c
COLL_CU_PIC :=
COLL_LDLIBS :=
endif
COLL_PIC  := $(COLL_LIB_SRCS:%.c=$(B)/lib/pic/%.o) $(COLL_CU_PIC)
LIBCOLL_A := $(B)/lib/libmrc-coll.a
LIBCOLL_SO := $(B)/lib/libmrc-coll.so
COLL_TARGETS := $(LIBCOLL_A) $(LIBCOLL_SO) $(B)/lib/mrc-coll.pc $(B)/bin/mrc-coll-perf

all: $(COLL_TARGETS)

# The reductions are loops the vectoriser must see at -O3 (reduce.c).
$(B)/coll/reduce.o $(B)/lib/pic/coll/reduce.o: OPT := -O3

$(LIBCOLL_A): $(COLL_PIC)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(LIBCOLL_SO): $(COLL_PIC) $(B)/lib/libmrc.so coll/libmrc-coll.map
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_ALL) -shared -Wl,-soname,libmrc-coll.so.2 \
		-Wl,--version-script=coll/libmrc-coll.map -Wl,--no-undefined \
		-o $@ $(COLL_PIC) -L$(B)/lib -lmrc $(COLL_LDLIBS) -lm -lpthread

$(B)/lib/mrc-coll.pc: coll/mrc-coll.pc.in coll/coll.mk
	@mkdir -p $(dir $@)
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(LIBCOLL_VERSION)|' $< > $@

# The unit tests reach the collectives through the test support library.
TEST_SUPPORT_SRCS += $(COLL_SRCS) coll/memops_none.c
ROOT_TESTS += tests/root/coll.sh

.PHONY: install-coll
install: install-coll
install-coll: $(COLL_TARGETS)
	install -d $(DESTDIR)$(PREFIX)/lib/pkgconfig $(DESTDIR)$(PREFIX)/include/mrc \
		$(DESTDIR)$(PREFIX)/share/man/man3
	install -m 644 man/mrc_coll.3 man/mrc_coll_test.3 man/mrc_coll_straggler.3 $(DESTDIR)$(PREFIX)/share/man/man3/
	install -m 644 $(LIBCOLL_A) $(DESTDIR)$(PREFIX)/lib/
	install -m 755 $(LIBCOLL_SO) $(DESTDIR)$(PREFIX)/lib/libmrc-coll.so.$(LIBCOLL_VERSION)
	ln -sf libmrc-coll.so.$(LIBCOLL_VERSION) $(DESTDIR)$(PREFIX)/lib/libmrc-coll.so.2
	ln -sf libmrc-coll.so.2 $(DESTDIR)$(PREFIX)/lib/libmrc-coll.so
	install -m 644 $(B)/lib/mrc-coll.pc $(DESTDIR)$(PREFIX)/lib/pkgconfig/
	install -m 644 include/mrc/coll.h $(DESTDIR)$(PREFIX)/include/mrc/
TSAN_TESTS += test_coll_shm
