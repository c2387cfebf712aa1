CORE_SRCS += common/strerror.c
