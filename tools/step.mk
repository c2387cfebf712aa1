# mrc-step (tools/step/): a training step over libmrc-coll through mrcd
# (docs/step.md).  Links the static libraries as mrc-coll-perf does.
STEP_OBJS := $(addprefix $(B)/tools/step/,main.o args.o run.o report.o print.o work.o bulk.o)
$(B)/bin/mrc-step: $(STEP_OBJS) $(LIBCOLL_A) $(B)/lib/libmrc.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_ALL) -o $@ $^ $(COLL_LDLIBS) -lm -lpthread
all: $(B)/bin/mrc-step
# Its command line and report, unit-tested alone (libc and the core
# library, named: LIBCORE is set after the .mk files are read).
$(B)/tests/test_step_args: $(B)/tests/test_step_args.o $(B)/tools/step/args.o $(B)/tools/step/print.o $(B)/libmrccore.a
	$(CC) $(LDFLAGS_ALL) -o $@ $^ -lcmocka $(LDLIBS_ALL)
ROOT_TESTS += tests/root/step.sh
# Its Open MPI twin (tools/step/mpi.c), for bench/fabric/step.sh's
# comparison row: built when mpicc is there, as bench/mpi_coll.
MPICC ?= $(shell command -v mpicc 2>/dev/null)
ifneq ($(MPICC),)
all: $(B)/bench/mpi_step
$(B)/bench/mpi_step: tools/step/mpi.c tools/step/args.c tools/step/print.c tools/step/work.c $(B)/lib/libmrc-coll.a $(B)/lib/libmrc.a
	@mkdir -p $(dir $@)
	$(MPICC) $(CFLAGS_ALL) $(LDFLAGS_ALL) -o $@ $^ $(COLL_LDLIBS) -lm -lpthread
endif
