#!/bin/bash
# Integration (root): the af_xdp datapath on the emulated fabric: the 1 GiB
# verified transfers under every fault of tests/root/xfer.sh with
# MRC_DATAPATH=af_xdp (copy mode on veth, docs/datapaths.md).  Skips (exit
# 77) when af_xdp was not built in or this kernel has no AF_XDP sockets.
set -eu
B=${1:-build}
. "$(dirname "$0")/lib.sh"
on_datapath af_xdp xfer.sh
