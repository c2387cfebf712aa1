#!/bin/sh
# Builds here what the NCCL run on a GPU machine needs there (docs/nccl.md,
# "On a GPU machine") into nccl-gpu-kit/ (ignored by git; carry it):
#   bin/mrcd, bin/mrc-nccl-harness  with every shared library they use
#   bin/mrcctl, bin/mrc_pingpong,   (scripts/gpu-all.sh: the put/signal/
#   bin/mrc_bulk,                   wait rounds, host-side references
#   bin/mrc_gpu_put[_cuda],          and the daemon's counters;
#   bin/pingpong, bin/bench_ring    _cuda where CUDA was found here;
#                                   the benches where make bench built)
#   bin/mrcsim                      scripts/bigsim-device.sh's runs
#   bin/mrcd-base                   only with MRC_KIT_BASE_MRCD=PATH and
#   plugin/libnccl-net-mrc-base.so  MRC_KIT_BASE_PLUGIN=PATH: a baseline for
#                                   side-by-side rows
#   lib/                            (ldd, the loader and libc included: run
#                                   them as lib/ld-linux-x86-64.so.2
#                                   --library-path lib bin/X, so the GPU
#                                   machine needs none of libev, libsodium,
#                                   jansson, libnl, inih, libsystemd)
#   plugin/libnccl-net-mrc.so       self-contained (libmrc linked in; needs
#                                   glibc >= 2.34 in the NCCL process)
# scripts/nccl-gpu-run.sh runs it there.
#   Usage: scripts/nccl-gpu-kit.sh [KIT_DIR]   (B=build dir)
set -eu
B=${B:-build}
K=${1:-nccl-gpu-kit}
make -j2 all "$B/bin/mrc-nccl-harness" >/dev/null
rm -rf "$K"
mkdir -p "$K/bin" "$K/lib" "$K/plugin"
for f in mrcd mrc-nccl-harness mrcctl mrc_pingpong mrc_bulk mrc_gpu_put mrc_gpu_put_cuda mrcsim; do
	[ -x "$B/bin/$f" ] && cp "$B/bin/$f" "$K/bin/"
done
for f in pingpong bench_ring; do   # gpu-all.sh's host-side references
	[ -x "$B/bench/$f" ] && cp "$B/bench/$f" "$K/bin/"
done
[ -n "${MRC_KIT_BASE_MRCD:-}" ] && cp "$MRC_KIT_BASE_MRCD" "$K/bin/mrcd-base"
[ -n "${MRC_KIT_BASE_PLUGIN:-}" ] && cp "$MRC_KIT_BASE_PLUGIN" "$K/plugin/libnccl-net-mrc-base.so"
cp "$B/lib/libnccl-net-mrc.so" "$K/plugin/"
for f in "$K"/bin/*; do
	ldd "$f" | awk '/=> \// { print $3 } /^[ \t]*\/.*ld-linux/ { print $1 }'
done | sort -u | while read -r so; do cp -L "$so" "$K/lib/"; done
# The plugin must not need more than libc in NCCL's process.
extra=$(ldd "$K/plugin/libnccl-net-mrc.so" | awk '/=>/ { print $1 }' | grep -v -E '^(libc|libpthread|linux-vdso)\.' || true)
[ -z "$extra" ] || { echo "nccl-gpu-kit: the plugin needs $extra" >&2; exit 1; }
echo "nccl-gpu-kit: $(du -sh "$K" | cut -f1) in $K ($(ls "$K/lib" | wc -l) libraries)"
echo "run there, from the repository root, carrying $K: bash scripts/nccl-gpu-run.sh"
