# libmrc: shared and static client library and its pkg-config file.
# Objects are built position-independent in their own directory (one set
# serves both libraries).  `all` gets LIB_TARGETS from here.
LIBMRC_VERSION := 1.0.0
LIBMRC_SRCS := lib/ctx.c lib/call.c lib/mr.c lib/qp.c lib/post.c codec/climsg.c common/strerror.c \
               common/fdpass.c common/trace.c
LIBMRC_PIC  := $(LIBMRC_SRCS:%.c=$(B)/lib/pic/%.o)
LIBMRC_A    := $(B)/lib/libmrc.a
LIBMRC_SO   := $(B)/lib/libmrc.so
LIB_TARGETS := $(LIBMRC_SO) $(LIBMRC_A) $(B)/lib/mrc.pc

all: $(LIB_TARGETS)

$(B)/lib/pic/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -fPIC -MMD -MP -c $< -o $@

$(LIBMRC_A): $(LIBMRC_PIC)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(LIBMRC_SO): $(LIBMRC_PIC) lib/libmrc.map
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_ALL) -shared -Wl,-soname,libmrc.so.1 \
		-Wl,--version-script=lib/libmrc.map -Wl,--no-undefined \
		-o $@ $(LIBMRC_PIC) -lpthread

$(B)/lib/mrc.pc: lib/mrc.pc.in lib/lib.mk
	@mkdir -p $(dir $@)
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(LIBMRC_VERSION)|' $< > $@

# The example programs link the static library (after libmrccore.a; the
# archives share members, and the linker takes each symbol once).
$(EXAMPLE_PROGS:%=$(B)/bin/%): $(LIBMRC_A)

.PHONY: install-lib
install: install-lib
install-lib: $(LIB_TARGETS)
	install -d $(DESTDIR)$(PREFIX)/lib/pkgconfig $(DESTDIR)$(PREFIX)/include/mrc \
		$(DESTDIR)$(PREFIX)/share/man/man3
	install -m 644 man/libmrc.3 man/mrc_power_floor.3 $(DESTDIR)$(PREFIX)/share/man/man3/
	install -m 644 $(LIBMRC_A) $(DESTDIR)$(PREFIX)/lib/
	install -m 755 $(LIBMRC_SO) $(DESTDIR)$(PREFIX)/lib/libmrc.so.$(LIBMRC_VERSION)
	ln -sf libmrc.so.$(LIBMRC_VERSION) $(DESTDIR)$(PREFIX)/lib/libmrc.so.1
	ln -sf libmrc.so.1 $(DESTDIR)$(PREFIX)/lib/libmrc.so
	install -m 644 $(B)/lib/mrc.pc $(DESTDIR)$(PREFIX)/lib/pkgconfig/
	install -m 644 include/mrc/mrc.h include/mrc/ring.h include/mrc/error.h \
		$(DESTDIR)$(PREFIX)/include/mrc/

# Tests that use libmrc find its objects in the test support library
# (tests that do not call it pull nothing from there).
TEST_SUPPORT_SRCS += $(filter lib/%,$(LIBMRC_SRCS))
