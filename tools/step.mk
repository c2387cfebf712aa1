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
