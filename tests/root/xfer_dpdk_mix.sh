#!/bin/bash
# Integration (root): interoperation of the dpdk datapath with kernel UDP,
# tests/root/xfer.sh's verified transfers under every fault at
# MRC_XFER_MIX_BYTES (default 256M, 128M under MRC_ROOT_QUICK=1): a dpdk
# sender to a udp receiver and back, so the frames DPDK builds are what
# the kernel accepts and the other way round.  Skips (77) when the dpdk datapath is not built in or
# DPDK's af_packet driver is missing.  tests/root/xfer_dpdk.sh does the
# 1 GiB transfers with dpdk at both ends.
set -eu
B=${1:-build}
here=$(dirname "$0")
. "$here/lib.sh"
need_dpdk
if [ "${MRC_ROOT_QUICK:-0}" = 1 ]; then BYTES=${MRC_XFER_MIX_BYTES:-128M}; else BYTES=${MRC_XFER_MIX_BYTES:-256M}; fi
rc=0
echo "--- dpdk sender, udp receiver ($BYTES)"
MRC_DATAPATH=dpdk MRC_DATAPATH_H7=udp MRC_XFER_BYTES=$BYTES "$here/xfer.sh" "$B" || rc=1
echo "--- udp sender, dpdk receiver ($BYTES)"
MRC_DATAPATH=udp MRC_DATAPATH_H7=dpdk MRC_XFER_BYTES=$BYTES "$here/xfer.sh" "$B" || rc=1
exit $rc
