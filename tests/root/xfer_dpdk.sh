#!/bin/bash
# Integration (root): tests/root/xfer.sh's 1 GiB verified transfers under
# every fault with the dpdk datapath (af_packet vdevs on the plane NICs) at
# both ends.  Skips (77) when the dpdk datapath is not built in or DPDK's
# af_packet driver is missing.  tests/root/xfer_dpdk_mix.sh does dpdk to
# kernel UDP and back.  Under make check's load (4-8 on 2 cores) the five
# transfers moved at 200-620 Mbit/s and the suite took about 3 minutes
# (docs/datapaths.md); MRC_XFER_BYTES (xfer.sh's default: 1G, 256M under
# MRC_ROOT_QUICK=1) makes it smaller.
set -eu
B=${1:-build}
. "$(dirname "$0")/lib.sh"
on_datapath dpdk xfer.sh
