# The root Makefile includes only */*.mk; this pulls in tests/support/.
include tests/support/support.mk
TSAN_TESTS += test_trace
ROOT_TESTS += tests/root/tclass.sh
# fabric-link localisation on the emulated fabric (issue 34, h-hroot)
ROOT_TESTS += tests/root/health.sh
