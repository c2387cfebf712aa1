CORE_SRCS += datapath/datapath.c datapath/udp.c datapath/af_xdp.c datapath/dpdk.c datapath/verbs.c
