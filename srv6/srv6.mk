# srv6/: uSID/SRH encoding, netlink programming, link monitor.
CORE_SRCS += srv6/usid.c srv6/srh.c srv6/path.c srv6/stub.c
