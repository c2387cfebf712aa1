#!/bin/bash
# Integration (root): tests/root/xfer.sh's verified transfers under every
# fault on the dpdk datapath (af_packet vdevs on the plane NICs, poll mode)
# at both ends, then interoperation at MRC_XFER_MIX_BYTES: a dpdk
# sender to a kernel-UDP receiver and back (the frames DPDK builds are what
# the kernel accepts, and the other way round).  Skips (77) when the dpdk
# datapath is not built in or DPDK's af_packet driver is missing.
# MRC_XFER_BYTES defaults to 64M here, not 1G: two poll-mode processes on
# a shared 2-core machine move 100-180 Mbit/s under load (760 Mbit/s on a
# quiet moment, bench/results/datapath.md), and the suite must end within
# check-root's 600 s (MRC_XFER_BYTES=1G on a larger host).
set -eu
export MRC_XFER_BYTES=${MRC_XFER_BYTES:-64M}
B=${1:-build}
here=$(dirname "$0")
. "$here/lib.sh"
need_dpdk
rc=0
echo "--- dpdk at both ends"
MRC_DATAPATH=dpdk "$here/xfer.sh" "$B" || rc=1
echo "--- dpdk sender, udp receiver"
MRC_DATAPATH=dpdk MRC_DATAPATH_H7=udp MRC_XFER_BYTES=${MRC_XFER_MIX_BYTES:-32M} \
	"$here/xfer.sh" "$B" || rc=1
echo "--- udp sender, dpdk receiver"
MRC_DATAPATH=udp MRC_DATAPATH_H7=dpdk MRC_XFER_BYTES=${MRC_XFER_MIX_BYTES:-32M} \
	"$here/xfer.sh" "$B" || rc=1
exit $rc
