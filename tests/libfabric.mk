# Real libfabric clients on the emulated fabric (issue 32): fi_pingpong,
# fabtests and Open MPI over the provider MRC_FI_PROV (tests/root/
# libfabric.sh, docs/libfabric-tests.md).  mpi_check is its MPI program
# (every byte checked), built with mpicc where it exists (scripts/deps.sh
# installs libopenmpi-dev); without it the MPI part of the test skips.
ROOT_TESTS += tests/root/libfabric.sh
MPICC ?= $(shell command -v mpicc 2>/dev/null)
ifneq ($(MPICC),)
all: $(B)/tests/mpi_check
$(B)/tests/mpi_check: tests/mpi_check.c
	@mkdir -p $(dir $@)
	$(MPICC) $(CFLAGS_ALL) $(LDFLAGS_ALL) -o $@ $<
endif
