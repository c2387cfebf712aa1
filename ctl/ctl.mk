# mrcctl: the operator's command line (docs/ctl.md, man/mrcctl.8).  Its
# codecs live in codec/.  The table renderer is a pure function
# in CORE_SRCS so the tests and the fuzz target can link it
# (mrcd never pulls it from the archive).
CORE_SRCS += ctl/render.c
PROGS += mrcctl
mrcctl_SRCS = ctl/mrcctl.c
# mrcctl against two live mrcd on the emulated fabric (needs root).
ROOT_TESTS += tests/root/ctl.sh
ROOT_TESTS += tests/root/ctl_install.sh
