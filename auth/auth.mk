# Authentication primitives (auth/auth.h): cluster key, per-connection
# secrets and tokens, CTRL envelope, AEAD.  The only users of libsodium.
CORE_SRCS += auth/key.c auth/ctrl.c auth/aead.c
EXTRA_CFLAGS += $(shell pkg-config --cflags libsodium)
EXTRA_LDLIBS += $(shell pkg-config --libs libsodium)
