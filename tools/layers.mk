# make check-layers: the build-level layering check (scripts/check-layers.sh):
# the engine's objects leave undefined only libc's string routines (and
# calloc/free in the objects that create and destroy), and every #include
# goes to the file's own folder or a lower layer.  One suite of make check.
.PHONY: check-layers
check-layers: all $(patsubst %.c,$(B)/%.o,$(wildcard transport/*.c))
	@if B=$(B) ./scripts/check-layers.sh; then \
		./scripts/suite.sh record "$${MRC_CHECK_LOG:-/dev/null}" pass "layering (scripts/check-layers.sh)"; \
	else \
		./scripts/suite.sh record "$${MRC_CHECK_LOG:-/dev/null}" fail "layering (scripts/check-layers.sh)" "see the lines above"; \
		exit 1; \
	fi
