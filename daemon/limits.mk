# Limits and ownership (h8): the service_reserve parser is pure and lives
# in libmrccore beside the configuration codec, which checks it.
CORE_SRCS += daemon/core/sidres.c
