CORE_SRCS += daemon/config.c
CORE_SRCS += daemon/ctrl.c
