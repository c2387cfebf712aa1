# mrcctl: the operator's command line (docs/ctl.md, man/mrcctl.8).  Its
# codecs live in codec/.  The verb table and the table renderer are pure
# functions in CORE_SRCS so the tests and the fuzz target can link them
# (mrcd never pulls them from the archive).
CORE_SRCS += ctl/render.c ctl/verbs.c ctl/top.c
PROGS += mrcctl
mrcctl_SRCS = ctl/mrcctl.c
# mrcctl against two live mrcd on the emulated fabric (needs root).
ROOT_TESTS += tests/root/ctl.sh
ROOT_TESTS += tests/root/ctl_install.sh
ROOT_TESTS += tests/root/ctl_top.sh
