# fuzz_ring drives the daemon's ring consumer itself: rings.c is linked
# into the target beside CORE_SRCS (the target fakes the core functions
# rings.c calls).  An extra prerequisite of the root Makefile's fuzz rule
# ($^ takes it; FZ is not set yet when this file is read).
build/fuzz/bin/fuzz_ring: build/fuzz/daemon/clients/rings.o
