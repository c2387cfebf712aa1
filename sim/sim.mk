# sim/: mrcsim, the discrete-event fabric simulator running the real engine.
# Not in CORE_SRCS (that would link it into every test); tests link it from
# the test-support library instead.
SIM_SRCS := sim/evq.c sim/fabric.c sim/net.c sim/host.c sim/workload.c \
            sim/fault.c sim/scenario.c sim/scenario_json.c sim/stalls.c sim/report.c sim/report_util.c \
            sim/report_json.c sim/sim.c sim/step.c sim/step_a2a.c sim/step_run.c \
            sim/step_result.c sim/record.c sim/health.c
# the power model (issue 35, docs/power.md): fftw3 for its spectrum
SIM_SRCS += sim/power.c sim/power_out.c sim/power_params.c
# its parameters parser, fuzzed alone (FZ is not set yet here)
build/fuzz/bin/fuzz_simpower: build/fuzz/sim/power_params.o
LDLIBS_ALL += -lfftw3
TEST_SUPPORT_SRCS += $(SIM_SRCS)
PROGS += mrcsim
mrcsim_SRCS := sim/main.c $(SIM_SRCS)
# mrcsim links with link-time optimisation: the engine's small functions
# (queue and QP lookups, the spray's pick) inline across files, 8% fewer
# instructions per run, the same reports (docs/sim.md "Speed").  Its
# objects also carry machine code (fat), so tests and mrcd link as before.
ifeq ($(SAN)$(TSAN),0)
$(B)/sim/%.o $(B)/transport/%.o $(B)/topology/%.o $(B)/common/heap.o: \
	EXTRA_CFLAGS += -flto=2 -ffat-lto-objects
$(B)/bin/mrcsim: LDFLAGS_ALL += -flto=2 $(OPT)
endif
# The event loop's prefetches (sim/sim.c prefetch) were once compiled away
# without a sign (docs/sim.md "Prefetches that were not there"): mrcsim is
# not linked from a sim.o that has none.
$(B)/sim/sim.prefetch: $(B)/sim/sim.o
	@n=$$(objdump -d $< | grep -c prefetch); [ "$$n" -gt 0 ] || \
	{ echo "$<: no prefetch instruction (sim/sim.c prefetch() compiled away)" >&2; exit 1; }
	@touch $@
$(B)/bin/mrcsim: | $(B)/sim/sim.prefetch
