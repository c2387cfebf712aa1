# The daemon core (daemon/core/): loop, node glue (engine <-> datapath),
# path denial, connection manager, reload.  Built as build/libmrcd-core.a,
# which mrcd and mrc-xfer list in their _SRCS (a word that is not a .c
# passes through to the link line unchanged, ahead of libmrccore.a, whose
# engine, datapath and topology the core needs).
MRCD_CORE_SRCS := daemon/core/core.c daemon/core/log.c daemon/core/node.c daemon/core/peers.c daemon/core/rx.c \
                  daemon/core/tx.c daemon/core/side.c daemon/core/links.c daemon/core/deny.c \
                  daemon/core/cm.c daemon/core/reload.c daemon/core/local.c daemon/core/view.c \
                  daemon/core/health.c daemon/core/timer.c daemon/core/urgent.c
MRCD_CORE_LIB  := $(B)/libmrcd-core.a
# The configuration, CTRL and admin state (adminstate.h) codecs are pure: they also live in
# libmrccore.a, so the unit tests and fuzz targets reach them.
CORE_SRCS += daemon/core/config.c daemon/core/ctrl.c daemon/core/adminstate.c
# The AEAD payload mode's packet work is pure too (tests drive it between
# two engines); tx.c and rx.c call it.
CORE_SRCS += daemon/core/enc.c
# Peers' datapath endpoints (verbs first contact) are pure too.
CORE_SRCS += daemon/core/dpep.c

# Named first so that `all` stays the default goal (this file is read
# before the Makefile's own rules).
all: $(MRCD_CORE_LIB)

$(MRCD_CORE_LIB): $(MRCD_CORE_SRCS:%.c=$(B)/%.o)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

# tests/test_loop_order.c drives the core's loop itself: the core library,
# and libmrccore.a once more after it for what the core needs from it.
$(B)/tests/test_loop_order: $(MRCD_CORE_LIB)
$(B)/tests/test_loop_order: LDLIBS_ALL += $(B)/libmrccore.a $(PKG_LDLIBS) -lev -lm

# tests/test_core_view.c: the core's read-only views through mrcd.h alone
# (a core of its own, mrcd_core_new), linked as test_loop_order is.
$(B)/tests/test_core_view: $(MRCD_CORE_LIB)
$(B)/tests/test_core_view: LDLIBS_ALL += $(B)/libmrccore.a $(PKG_LDLIBS) -lev -lm

# tests/test_sched_slice.c: a core of its own (mrcd_core_new), linked as
# test_core_view is.
$(B)/tests/test_sched_slice: $(MRCD_CORE_LIB)
$(B)/tests/test_sched_slice: LDLIBS_ALL += $(B)/libmrccore.a $(PKG_LDLIBS) -lev -lm
