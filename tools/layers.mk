# make check-layers: the build-level layering check (scripts/check-layers.sh):
# the engine's objects leave undefined only libc's string routines (and
# calloc/free in the objects that create and destroy), and every #include
# goes to the file's own folder or a lower layer.
.PHONY: check-layers
check-layers: $(patsubst %.c,$(B)/%.o,$(wildcard transport/*.c))
	@B=$(B) ./scripts/check-layers.sh
