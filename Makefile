# mrc: multipath reliable transport.  GNU make.
#
#   make            build everything (release build in build/)
#   make check      unit + property tests, sanitizer (ASan+UBSan) build of
#                   the same tests, bounded fuzzing of every parser, and the
#                   root-only integration tests on an emulated fabric
#   make bench      benchmarks (bench/), figures into bench/results/
#   make demo       the main job on built-in defaults
#   make install    PREFIX=/usr/local DESTDIR=
#   make clean
#
# Each layer lists its sources in its own *.mk files (CORE_SRCS, PROGS, ...),
# so layers can grow without touching this file.

PREFIX  ?= /usr/local
DESTDIR ?=
B       ?= build
SAN     ?= 0
OPT     ?= -O2
FUZZ_SECONDS ?= 15
CC      := gcc

PKG_LIBS := jansson libnl-3.0 libnl-route-3.0 inih libsystemd
# Recursively expanded on purpose: pkg-config may only exist after `deps`.
PKG_CFLAGS = $(shell pkg-config --cflags $(PKG_LIBS) 2>/dev/null)
PKG_LDLIBS = $(shell pkg-config --libs $(PKG_LIBS) 2>/dev/null)

WARN    := -Wall -Wextra -Werror -Wshadow -Wno-unused-parameter
CFLAGS_ALL = -std=gnu11 $(WARN) -g $(OPT) -D_GNU_SOURCE -Iinclude -I. \
             -fno-strict-aliasing $(PKG_CFLAGS) $(EXTRA_CFLAGS)
LDLIBS_ALL = $(PKG_LDLIBS) -lev -lm -lpthread $(EXTRA_LDLIBS)
SANFLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
ifeq ($(SAN),1)
CFLAGS_ALL += $(SANFLAGS)
LDFLAGS_ALL += $(SANFLAGS)
endif

CORE_SRCS :=
TEST_SUPPORT_SRCS :=
PROGS :=
BENCHES :=
ROOT_TESTS :=
include $(sort $(wildcard */*.mk))

TESTS      := $(patsubst tests/%.c,%,$(sort $(wildcard tests/test_*.c)))
FUZZERS    := $(patsubst fuzz/%.c,%,$(sort $(wildcard fuzz/fuzz_*.c)))
CORE_OBJS  := $(CORE_SRCS:%.c=$(B)/%.o)
TSUP_OBJS  := $(TEST_SUPPORT_SRCS:%.c=$(B)/%.o)
TEST_BINS  := $(TESTS:%=$(B)/tests/%)
PROG_BINS  := $(PROGS:%=$(B)/bin/%)
BENCH_BINS := $(BENCHES:%=$(B)/bench/%)
LIBCORE    := $(B)/libmrccore.a
LIBTSUP    := $(B)/libmrctest.a

.PHONY: all deps tests check check-unit check-san check-fuzz check-root bench demo install clean
all: $(LIBCORE) $(PROG_BINS)

deps:
	@./scripts/deps.sh

$(B)/%.o: %.c | deps
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

check-san:
	$(MAKE) B=build/san SAN=1 OPT=-O1 check-unit

# libFuzzer needs clang; the core is rebuilt with coverage instrumentation.
FZ := build/fuzz
FUZZ_CFLAGS = -std=gnu11 -g -O1 -D_GNU_SOURCE -Iinclude -I. $(PKG_CFLAGS) \
              -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all
$(FZ)/%.o: %.c | deps
	@mkdir -p $(dir $@)
	clang $(FUZZ_CFLAGS) -MMD -MP -c $< -o $@
$(FZ)/bin/%: $(FZ)/fuzz/%.o $(CORE_SRCS:%.c=$(FZ)/%.o)
	@mkdir -p $(dir $@)
	clang -fsanitize=fuzzer,address,undefined -o $@ $^ $(LDLIBS_ALL)
check-fuzz: $(FUZZERS:%=$(FZ)/bin/%)
	@./scripts/run-fuzz.sh $(FZ) $(FUZZ_SECONDS) $(FUZZERS)

check-root: all
	@./scripts/run-root-tests.sh $(B) $(ROOT_TESTS)

check: deps
	$(MAKE) check-unit
	$(MAKE) check-san
	$(MAKE) check-fuzz
	$(MAKE) check-root
	@echo "make check: all passed"

bench: deps all $(BENCH_BINS)
	@./scripts/run-bench.sh $(B) $(BENCHES)

demo: deps all
	./scripts/demo.sh $(B)

install: all
	./scripts/install.sh "$(DESTDIR)" "$(PREFIX)" "$(B)"

clean:
	rm -rf build

-include $(shell find $(B) $(FZ) -name '*.d' 2>/dev/null)
