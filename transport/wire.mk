CORE_SRCS += transport/crc32c.c transport/wire.c
# The CTRL codec and the AEAD mode's framing (engine.h): the wire stays here.
CORE_SRCS += transport/ctrl.c transport/seal.c transport/pkt.c
