#!/bin/bash
# Integration (root): tests/root/mrcd.sh with every mrcd on the dpdk
# datapath (af_packet vdevs on the plane NICs, poll mode): the verified
# transfers under its faults, the all-to-all, the client and daemon kills,
# the SIGHUP reloads.  Skips (77) when dpdk is not built in or DPDK's
# af_packet driver is missing.
# MRC_MRCD_BYTES defaults to 64M here, not 1G, and the floor rate to
# 10 Mbit/s: eight poll-mode daemons share this machine's 2 cores with
# the kernel's veth and af_packet work.  On 2026-11-24 a 64 MiB transfer
# took 3.6-6.5 s through mrcd here (about 100 Mbit/s, the whole suite
# 78 s), so mrcd.sh's six 1 GiB transfers would need about 9 minutes and
# would not end within check-root's 600 s (MRC_MRCD_BYTES=1G on a host
# with cores to spare).
set -eu
B=${1:-build}
. "$(dirname "$0")/lib.sh"
export MRC_MRCD_PREFIX=mrcDd MRC_MRCD_BYTES=${MRC_MRCD_BYTES:-64M}
export MRC_MRCD_FLOOR_MBIT=${MRC_MRCD_FLOOR_MBIT:-10}
echo "mrcd_dpdk: scaled to $MRC_MRCD_BYTES per transfer at a $MRC_MRCD_FLOOR_MBIT Mbit/s floor (8 poll-mode daemons on $(nproc) shared cores; see this script's header)"
on_datapath dpdk mrcd.sh
