CORE_SRCS += common/strerror.c common/errf.c
