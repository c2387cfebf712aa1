# The root Makefile includes only */*.mk; this pulls in tests/support/.
include tests/support/support.mk
TSAN_TESTS += test_trace
ROOT_TESTS += tests/root/tclass.sh
# h-hfeed: fabric-link localisation on the emulated fabric (issue 34,
# docs/health.md "On the emulated fabric"): 3 blackholes located and
# healed, 1 congested healthy run; ~2 min
ROOT_TESTS += tests/root/health.sh
