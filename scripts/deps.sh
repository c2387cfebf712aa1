#!/bin/sh
# Installs the Debian packages that every README command needs (build,
# tests, demo, benchmarks, install, check-fresh), but only those missing (a dpkg query per package is ~10 ms, so
# this runs on every `make` without slowing it down).
set -eu
PKGS="gcc make pkg-config clang libclang-rt-14-dev llvm libinih-dev libsystemd-dev
libcmocka-dev libjansson-dev libnl-3-dev libnl-route-3-dev libev-dev
iproute2 nftables ethtool procps libbpf-dev libxdp-dev jq gnuplot-nox iperf3 mptcpize systemd curl time
passwd python3 man-db debootstrap libsodium-dev
openmpi-bin libopenmpi-dev tshark tmux systemd-container libibverbs-dev libdpdk-dev
libfabric-dev libfabric-bin autoconf automake libtool
libfftw3-dev"
# openmpi-bin, libopenmpi-dev: the Open MPI baseline of the fabric collective
# benchmark (bench/mpi_coll.c, bench/fabric/mpi.sh); mpicc calls gcc.
# tshark (with text2pcap): the Wireshark dissector's tests (tools/wireshark/);
# tmux: the terminal of tests/root/ctl_top.sh; systemd-container
# (systemd-nspawn): mrcd under a booted systemd, tests/root/systemd_boot.sh.
# libibverbs-dev (rdma-core): the verbs datapath (datapath/verbs*.c).
# libdpdk-dev: DPDK 22.11, the dpdk datapath (datapath/dpdk.c, docs/datapaths.md).
# libxdp-dev (with libbpf-dev and clang): the af_xdp datapath (datapath/af_xdp*.c).
# libfabric-dev (rdma/fabric.h, rdma/providers/fi_prov.h): the libfabric
# provider libmrc-fi.so (fi/, docs/libfabric.md); libfabric-bin (fi_info,
# fi_pingpong): its tests and the libfabric clients of tests/root/libfabric.sh
# and bench/fabric/libfabric.sh; autoconf automake libtool: building
# fabtests 1.17 there (scripts/fabtests-build.sh).
# libfftw3-dev: the spectrum of mrcsim's power model (sim/power.c, docs/power.md).
missing=""
for p in $PKGS; do
	st=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
	case "$st" in
	*"install ok installed"*) ;;
	*) missing="$missing $p" ;;
	esac
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" != 0 ]; then
	echo "mrc: missing Debian packages:$missing" >&2
	echo "mrc: run as root (or: sudo apt-get install$missing)" >&2
	exit 1
fi
echo "mrc: installing missing Debian packages:$missing"
export DEBIAN_FRONTEND=noninteractive
# shellcheck disable=SC2086
if ! apt-get install -y --no-install-recommends $missing; then
	apt-get update
	apt-get install -y --no-install-recommends $missing
fi
