#!/bin/bash
# Integration (root): tests/root/mrcd.sh with every mrcd on the dpdk
# datapath (af_packet vdevs on the plane NICs, mrcd waiting on their
# sockets): the 1 GiB verified transfers under its faults, the
# all-to-all, the client and daemon kills, the SIGHUP reloads.  Skips (77)
# when dpdk is not built in or DPDK's af_packet driver is missing.
# MRC_MRCD_BYTES (default 1G, 256M under MRC_ROOT_QUICK=1) and
# MRC_MRCD_FLOOR_MBIT (default 50) as in mrcd.sh.
set -eu
B=${1:-build}
. "$(dirname "$0")/lib.sh"
export MRC_MRCD_PREFIX=mrcDd
on_datapath dpdk mrcd.sh
