# mrcctl: the operator's command line (docs/ctl.md, man/mrcctl.8).  The
# protocol codec, the Prometheus renderer and the table renderer are pure
# functions in CORE_SRCS, so the daemon, the tests and the fuzz target share
# them.
CORE_SRCS += ctl/ctljson.c ctl/prom.c ctl/render.c
PROGS += mrcctl
mrcctl_SRCS = ctl/mrcctl.c
# mrcctl against two live mrcd on the emulated fabric (needs root).
ROOT_TESTS += tests/root/ctl.sh
ROOT_TESTS += tests/root/ctl_install.sh
