# srv6/: uSID/SRH encoding, netlink programming, link monitor.
CORE_SRCS += srv6/usid.c srv6/srh.c srv6/encap.c \
	srv6/nl.c srv6/nl_link.c srv6/nl_addr.c srv6/nl_route.c \
	srv6/nl_seg6local.c srv6/nl_sysctl.c srv6/linkmon.c
