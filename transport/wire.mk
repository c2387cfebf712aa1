CORE_SRCS += transport/crc32c.c transport/wire.c
