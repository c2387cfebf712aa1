# Authentication primitives (auth/auth.h): cluster key, per-connection
# secrets and tokens, CTRL envelope, AEAD.  The only users of libsodium.
CORE_SRCS += auth/key.c auth/ctrl.c auth/aead.c auth/seal_ops.c
