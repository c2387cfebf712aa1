# fuzz_pregate_hdr reads the pre-gated dispatch's header rows
# (coll/pregate_hdr.c, not in the core): linked into the target beside
# CORE_SRCS as an extra prerequisite ($^ takes it), as fuzz/ring.mk does.
build/fuzz/bin/fuzz_pregate_hdr: build/fuzz/coll/pregate_hdr.o
