# mrc: multipath reliable transport.  GNU make.
#
#   make            build everything (release build in build/)
#   make check      unit + property tests, the layering check, sanitizer
#                   (ASan+UBSan) build of the same tests, bounded fuzzing of
#                   every parser, and the root-only integration tests on an
#                   emulated fabric; ends with each stage's time, the 10
#                   slowest suites (every suite's wall time is in
#                   build/check-results.txt) and "N passed, N failed,
#                   N skipped" (suites)
#   make check-fresh  the README's two commands, first try, in a freshly
#                   debootstrapped Debian 12 chroot (root; scripts/check-fresh.sh);
#                   there make check runs with MRC_FRESH=1 (below)
#   make bench      benchmarks (bench/), figures into bench/results/
#   make demo       the main job on built-in defaults
#   make install    PREFIX=/usr/local DESTDIR=
#   make clean
#
# Each layer lists its sources in its own *.mk files (CORE_SRCS, PROGS, ...),
# so layers can grow without touching this file.

# Two passes.  The first installs missing Debian packages (scripts/deps.sh)
# and re-runs make with the same goals; only the second reads pkg-config,
# so no link line is ever expanded before the libraries it names exist.
ifeq ($(MRC_DEPS_DONE),)
GOALS := $(or $(MAKECMDGOALS),all)
ifeq ($(filter-out clean,$(GOALS)),)
clean:
	rm -rf build
else
.PHONY: $(GOALS) mrc-deps-then-make
$(GOALS): mrc-deps-then-make ; @:
mrc-deps-then-make:
	@./scripts/deps.sh
	@$(MAKE) --no-print-directory MRC_DEPS_DONE=1 $(GOALS)
endif
else

PREFIX  ?= /usr/local
DESTDIR ?=
B       ?= build
SAN     ?= 0
OPT     ?= -O2
FUZZ_SECONDS ?= 15
# MRC_FRESH=1 (make check-fresh's run inside the fresh root): what a fresh
# machine cannot change is built but not rerun there: the sanitizer builds
# are built, not run, each fuzz target runs its corpus and 2 s, and the
# root scripts run short (MRC_ROOT_QUICK=1: every tool, package and kernel
# feature they use, on fewer and smaller transfers: a fresh machine can
# break what they need, not what the host's full run proved).  The host's
# make check runs them in full; CI's 90 minutes hold both runs.
MRC_FRESH ?= 0
MRC_ROOT_QUICK ?= $(MRC_FRESH)
ifeq ($(MRC_FRESH),1)
FUZZ_SECONDS := 2
SAN_STAGE := check-san-build
else
SAN_STAGE := check-san
endif
CC      := gcc

PKG_LIBS := jansson libnl-3.0 libnl-route-3.0 inih libsystemd libsodium
# Read once: the first pass installed them (a missing one is an error here,
# not a confusing link failure later).
PKG_CFLAGS := $(shell pkg-config --cflags $(PKG_LIBS))
PKG_LDLIBS := $(shell pkg-config --libs $(PKG_LIBS))
ifeq ($(PKG_LDLIBS),)
$(error pkg-config found none of: $(PKG_LIBS); run scripts/deps.sh as root)
endif

WARN    := -Wall -Wextra -Werror -Wshadow -Wno-unused-parameter
CFLAGS_ALL = -std=gnu11 $(WARN) -g $(OPT) -D_GNU_SOURCE -Iinclude -I. \
             -fno-strict-aliasing $(PKG_CFLAGS) $(EXTRA_CFLAGS)
LDLIBS_ALL = $(PKG_LDLIBS) -lev -lm -lpthread $(EXTRA_LDLIBS)
SANFLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
ifeq ($(SAN),1)
CFLAGS_ALL += $(SANFLAGS)
LDFLAGS_ALL += $(SANFLAGS)
endif
# ThreadSanitizer (not combinable with ASan): the TSAN_TESTS, in build/tsan.
ifeq ($(TSAN),1)
# -Wno-tsan: TSan does not model fences; the rings pair them across
# processes (mrcd), where TSan does not look anyway.
CFLAGS_ALL += -fsanitize=thread -fno-omit-frame-pointer -Wno-tsan
LDFLAGS_ALL += -fsanitize=thread
endif

CORE_SRCS :=
TSAN_TESTS :=
EXTRA_TEST_BINS :=
TEST_SUPPORT_SRCS :=
PROGS :=
BENCHES :=
ROOT_TESTS :=
include $(sort $(wildcard */*.mk))

TESTS      := $(patsubst tests/%.c,%,$(sort $(wildcard tests/test_*.c)))
FUZZERS    := $(patsubst fuzz/%.c,%,$(sort $(wildcard fuzz/fuzz_*.c)))
CORE_OBJS  := $(CORE_SRCS:%.c=$(B)/%.o)
TSUP_OBJS  := $(TEST_SUPPORT_SRCS:%.c=$(B)/%.o)
TEST_BINS  := $(TESTS:%=$(B)/tests/%) $(EXTRA_TEST_BINS)
PROG_BINS  := $(PROGS:%=$(B)/bin/%)
BENCH_BINS := $(BENCHES:%=$(B)/bench/%)
LIBCORE    := $(B)/libmrccore.a
LIBTSUP    := $(B)/libmrctest.a

.PHONY: all tests check check-unit check-san check-san-build build-tsan check-tsan check-fuzz check-root check-fresh bench demo install clean
all: $(LIBCORE) $(PROG_BINS)

$(B)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -MMD -MP -c $< -o $@

$(LIBCORE): $(CORE_OBJS)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^
$(LIBTSUP): $(TSUP_OBJS)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(B)/tests/%: $(B)/tests/%.o $(LIBTSUP) $(LIBCORE)
	$(CC) $(LDFLAGS_ALL) -o $@ $^ -lcmocka $(LDLIBS_ALL)

# PROGS: each program NAME lists NAME_SRCS in its module.mk.
define prog_rule
$(B)/bin/$(1): $$($(1)_SRCS:%.c=$(B)/%.o) $(LIBCORE)
	@mkdir -p $$(dir $$@)
	$(CC) $(LDFLAGS_ALL) -o $$@ $$^ $$($(1)_LDLIBS) $(LDLIBS_ALL)
endef
$(foreach p,$(PROGS),$(eval $(call prog_rule,$(p))))
define bench_rule
$(B)/bench/$(1): $$($(1)_SRCS:%.c=$(B)/%.o) $(LIBTSUP) $(LIBCORE)
	@mkdir -p $$(dir $$@)
	$(CC) $(LDFLAGS_ALL) -o $$@ $$^ $(LDLIBS_ALL)
endef
$(foreach p,$(BENCHES),$(eval $(call bench_rule,$(p))))

tests: $(TEST_BINS)

# Runs every test binary, prints cmocka's summaries, fails if any failed.
check-unit: all tests
	@./scripts/run-tests.sh $(TEST_BINS)

# Both halves run even if the first failed (each suite records itself).
check-san:
	@rc=0; $(MAKE) B=build/san SAN=1 OPT=-O1 check-unit || rc=1; \
	$(MAKE) B=build/tsan TSAN=1 OPT=-O1 check-tsan || rc=1; exit $$rc
check-tsan: $(B)/bin/mrcd $(TSAN_TESTS:%=$(B)/tests/%)
	@./scripts/run-tests.sh $(TSAN_TESTS:%=$(B)/tests/%)
check-san-build:
	$(MAKE) B=build/san SAN=1 OPT=-O1 all tests
	$(MAKE) B=build/tsan TSAN=1 OPT=-O1 build-tsan
	@./scripts/suite.sh record "$$MRC_CHECK_LOG" skip sanitizer-runs \
		"built, not run under check-fresh (MRC_FRESH=1): the host's make check runs them"
build-tsan: $(B)/bin/mrcd $(TSAN_TESTS:%=$(B)/tests/%)

# libFuzzer needs clang; the core is rebuilt with coverage instrumentation.
FZ := build/fuzz
FUZZ_CFLAGS = -std=gnu11 -g -O1 -D_GNU_SOURCE -Iinclude -I. $(PKG_CFLAGS) \
              -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all
$(FZ)/%.o: %.c
	@mkdir -p $(dir $@)
	clang $(FUZZ_CFLAGS) -MMD -MP -c $< -o $@
$(FZ)/bin/%: $(FZ)/fuzz/%.o $(CORE_SRCS:%.c=$(FZ)/%.o)
	@mkdir -p $(dir $@)
	clang -fsanitize=fuzzer,address,undefined -o $@ $^ $(LDLIBS_ALL)
check-fuzz: $(FUZZERS:%=$(FZ)/bin/%)
	@./scripts/run-fuzz.sh $(FZ) $(FUZZ_SECONDS) $(FUZZERS)

check-root: all
	@MRC_ROOT_QUICK=$(MRC_ROOT_QUICK) ./scripts/run-root-tests.sh $(B) $(ROOT_TESTS)

# Every stage runs even if an earlier one failed; each suite (test binary,
# sanitizer binary, fuzz target, root script) records pass, fail or skip
# with its reason in MRC_CHECK_LOG, and the summary decides the exit status.
CHECK_LOG := $(abspath $(B))/check-results.txt
check:
	@mkdir -p $(B) && : >$(CHECK_LOG) && rm -f $(CHECK_LOG).times
	@for s in check-unit check-layers $(SAN_STAGE) check-fuzz check-root; do \
		./scripts/suite.sh stage $(CHECK_LOG) $$s $(MAKE) --no-print-directory $$s; \
	done; ./scripts/suite.sh summary $(CHECK_LOG)

check-fresh:
	./scripts/check-fresh.sh

bench: all $(BENCH_BINS)
	@./scripts/run-bench.sh $(B) $(BENCHES)

demo: all
	./scripts/demo.sh $(B)

install: all
	./scripts/install.sh "$(DESTDIR)" "$(PREFIX)" "$(B)"

clean:
	rm -rf build

-include $(shell find $(B) $(FZ) -name '*.d' 2>/dev/null)
endif
