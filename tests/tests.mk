# The root Makefile includes only */*.mk; this pulls in tests/support/.
include tests/support/support.mk
TSAN_TESTS += test_trace
ROOT_TESTS += tests/root/tclass.sh
# fabric-link localisation on the emulated fabric (issue 34, h-hroot)
# tests/root/health.sh is not in make check yet: docs/health.md "On the emulated fabric"
# (bench/fabric/health.sh runs it)
