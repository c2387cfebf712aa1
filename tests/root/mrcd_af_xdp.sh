#!/bin/bash
# Integration (root): tests/root/mrcd.sh with every mrcd on the af_xdp
# datapath: the 1 GiB verified transfers under its faults, the all-to-all,
# the client and daemon kills, the SIGHUP reloads.  Skips (exit 77) when
# af_xdp was not built in or this kernel has no AF_XDP sockets.
set -eu
B=${1:-build}
. "$(dirname "$0")/lib.sh"
export MRC_MRCD_PREFIX=mrcDx
on_datapath af_xdp mrcd.sh
