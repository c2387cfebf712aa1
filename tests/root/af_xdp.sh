#!/bin/sh
# Integration (root): the af_xdp datapath on the emulated fabric: the 1 GiB
# verified transfers under every fault of tests/root/xfer.sh with
# MRC_DATAPATH=af_xdp (copy mode on veth, docs/datapaths.md).  Skips (exit 77) when af_xdp was
# not built in or this kernel has no AF_XDP sockets.
set -eu
B=${1:-build}
if [ ! -f "$B/datapath/af_xdp_prog.o" ]; then
	echo "SKIP af_xdp not built in (libxdp-dev, libbpf-dev, clang: scripts/deps.sh)"
	exit 77
fi
# AF_XDP is address family 44; a kernel without CONFIG_XDP_SOCKETS refuses it.
if ! python3 -c 'import socket; socket.socket(44, socket.SOCK_RAW).close()' 2>/dev/null; then
	echo "SKIP this kernel has no AF_XDP sockets (CONFIG_XDP_SOCKETS)"
	exit 77
fi
export MRC_DATAPATH=af_xdp
here=$(dirname "$0")
exec "$here/xfer.sh" "$B"
