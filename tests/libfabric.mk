# Real libfabric clients on the emulated fabric (issue 32): fi_pingpong,
# fabtests and Open MPI over the provider MRC_FI_PROV (tests/root/
# libfabric.sh, docs/libfabric-tests.md).  mpi_check is its MPI program
# (every byte checked), built with mpicc where it exists (scripts/deps.sh
# installs libopenmpi-dev); without it the MPI part of the test skips.
ROOT_TESTS += tests/root/libfabric.sh
MPICC ?= $(shell command -v mpicc 2>/dev/null)
ifneq ($(MPICC),)
all: $(B)/tests/mpi_check
$(B)/tests/mpi_check: tests/mpi_check.c tests/support/mpi_stall.h
	@mkdir -p $(dir $@)
	$(MPICC) $(CFLAGS_ALL) $(LDFLAGS_ALL) -o $@ $<
endif
# fabtests 1.17 (scripts/fabtests-build.sh, once per tarball) before the
# root tests, so that its build is not part of the test's time budget; only
# where the test will run it: the mrc provider is built, or MRC_FI_PROV
# names another.  An absent tarball (77) is not an error: the test then
# reports fabtests n/a.
.PHONY: fabtests
fabtests:
	@if [ -f $(B)/lib/libmrc-fi.so ] || [ -n "$${MRC_FI_PROV:-}" -a "$${MRC_FI_PROV:-}" != mrc ]; then \
		./scripts/fabtests-build.sh $(B)/fabtests || [ $$? = 77 ]; fi
check-root: fabtests
