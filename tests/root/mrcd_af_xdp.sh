#!/bin/sh
# Integration (root): tests/root/mrcd.sh with every mrcd on the af_xdp
# datapath: the 1 GiB verified transfers under its faults, the all-to-all,
# the client and daemon kills, the SIGHUP reloads.  Skips (exit 77) when
# af_xdp was not built in or this kernel has no AF_XDP sockets.
set -eu
B=${1:-build}
here=$(dirname "$0")
. "$here/lib.sh"
need_af_xdp
export MRC_DATAPATH=af_xdp MRC_MRCD_PREFIX=mrcDx
exec "$here/mrcd.sh" "$B"
