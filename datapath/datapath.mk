CORE_SRCS += datapath/udp.c
