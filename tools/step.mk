# mrc-step (tools/step/): a training step over libmrc-coll through mrcd
# (docs/step.md).  Links the static libraries as mrc-coll-perf does.
STEP_OBJS := $(addprefix $(B)/tools/step/,main.o args.o run.o report.o bulk.o)
$(B)/bin/mrc-step: $(STEP_OBJS) $(LIBCOLL_A) $(B)/lib/libmrc.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_ALL) -o $@ $^ $(COLL_LDLIBS) -lm -lpthread
all: $(B)/bin/mrc-step
