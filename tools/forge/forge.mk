# mrc-forge: the forged-packet sender of tests/root/forge.sh and hostile.sh
# (and the replayer of tests/root/ctrl_replay.sh).  A test tool:
# built beside the objects, not in bin/, so scripts/install.sh (which
# installs bin/*) never ships it.
MRC_FORGE := $(B)/tools/mrc-forge
all: $(MRC_FORGE)
$(MRC_FORGE): $(B)/tools/forge/forge.o $(B)/libmrccore.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_ALL) -o $@ $^ $(LDLIBS_ALL)
ROOT_TESTS += tests/root/forge.sh tests/root/ctrl_replay.sh
ROOT_TESTS += tests/root/hostile.sh
