#!/bin/sh
# Builds libfabric's conformance suite, fabtests 1.17, from its release
# tarball into DIR (default build/fabtests): DIR/bin holds fi_rdm,
# fi_getinfo_test, fi_rdm_tagged_pingpong, ... (tests/root/libfabric.sh,
# bench/fabric/libfabric.sh, docs/libfabric-tests.md).
#   scripts/fabtests-build.sh [DIR]
# The tarball: $MRC_FABTESTS_TAR, else ../shared/third_party/
# fabtests-1.17.0.tar.gz relative to the repository root.  Absent: says so
# and exits 77 (skip).  Idempotent: DIR/.built-from records the tarball's
# SHA-256, and a DIR built from the same tarball is left as it is.
# fabtests is built out of the tree (its source is unpacked under
# DIR/src), never copied into it.  Needs autoconf automake libtool
# libfabric-dev (scripts/deps.sh installs them) and about 3 minutes on 2
# cores.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-build/fabtests}
tar=${MRC_FABTESTS_TAR:-$root/../shared/third_party/fabtests-1.17.0.tar.gz}
if [ ! -f "$tar" ]; then
	echo "SKIP fabtests tarball $tar absent (set MRC_FABTESTS_TAR)"
	exit 77
fi
for t in autoreconf automake libtoolize; do
	command -v $t >/dev/null ||
		{ echo "fabtests-build: $t missing (scripts/deps.sh installs autoconf automake libtool)" >&2; exit 1; }
done
[ -f /usr/include/rdma/fabric.h ] ||
	{ echo "fabtests-build: libfabric headers missing (scripts/deps.sh installs libfabric-dev)" >&2; exit 1; }
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
sum=$(sha256sum "$tar" | cut -d' ' -f1)
if [ "$(cat "$dir/.built-from" 2>/dev/null)" = "$sum" ] && [ -x "$dir/bin/fi_rdm" ]; then
	echo "fabtests: $dir already built from $tar"
	exit 0
fi
rm -rf "$dir/src" "$dir/bin" "$dir/share" "$dir/.built-from"
mkdir -p "$dir/src"
tar xzf "$tar" -C "$dir/src" --strip-components=1
log="$dir/build.log"
echo "fabtests: building $tar into $dir (log: $log)"
# A failed step shows the end of its log: the whole log is thousands of lines.
step() { "$@" >>"$log" 2>&1 || { tail -n 30 "$log" >&2; echo "fabtests-build: '$*' failed (log: $log)" >&2; exit 1; }; }
: >"$log"
cd "$dir/src"
step ./autogen.sh
step ./configure --prefix="$dir"
step make -j"${MRC_FABTESTS_JOBS:-2}"
step make install
echo "$sum" >"$dir/.built-from"
echo "fabtests: built into $dir/bin ($(ls "$dir/bin" | wc -l) programs)"
