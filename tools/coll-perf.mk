# mrc-coll-perf (tools/coll-perf/): libmrc-coll's benchmark in the form of
# nccl-tests (docs/coll.md); a program, so not in the library's folder.
# It links the static libraries only (libmrc after libmrc-coll).
$(B)/bin/mrc-coll-perf: $(B)/tools/coll-perf/perf.o $(B)/tools/coll-perf/perf_moe.o $(B)/tools/coll-perf/perf_overlap.o $(B)/tools/coll-perf/perf_pregate.o $(LIBCOLL_A) $(B)/lib/libmrc.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_ALL) -o $@ $^ $(COLL_LDLIBS) -lm -lpthread
