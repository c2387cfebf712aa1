#!/bin/bash
# make check-fresh: proves the README's two commands work the first time on
# a fresh Debian 12.  Builds a minimal root filesystem with debootstrap
# (--variant=minbase bookworm; the mirror is read from this machine's apt
# sources, never written into the repository), caches it as a tarball
# between runs, bind-mounts it on itself (`ip netns exec` needs / to be a
# mount point), mounts proc, sys, dev and a tmpfs on /run, installs only
# `make`, copies `git archive HEAD` in, and runs `make demo` and then
# `make check MRC_FRESH=1` there as root (every suite, except that the
# sanitizer builds are built but not run, fuzz targets run 2 s and the root
# scripts run short, MRC_ROOT_QUICK=1: a fresh machine can break their
# build and the tools, packages and kernel features they use, not the
# outcome the host's full run proved).  Everything is unmounted and
# removed on any exit.  Environment:
#   MRC_FRESH_CACHE  where the base tarball is kept
#                    (default /var/cache/mrc/bookworm-minbase.tar.gz)
#   MRC_FRESH_KEEP=1 keep the root filesystem for inspection (still unmounted)
#   MRC_FRESH_CMDS   the commands to run (default "make demo && make check MRC_FRESH=1")
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "check-fresh: needs root (debootstrap, mounts, chroot)" >&2; exit 1; }
git rev-parse --verify -q HEAD >/dev/null || { echo "check-fresh: not a git checkout" >&2; exit 1; }
if ! git diff --quiet HEAD -- 2>/dev/null; then
	echo "check-fresh: note: uncommitted changes are NOT tested (git archive HEAD)" >&2
fi

cache=${MRC_FRESH_CACHE:-/var/cache/mrc/bookworm-minbase.tar.gz}
cmds=${MRC_FRESH_CMDS:-"make demo && make check MRC_FRESH=1"}

root=$(mktemp -d /var/tmp/mrc-fresh.XXXXXX)
# mktemp makes it 0700; a root filesystem is 0755 (the tests run commands
# as unprivileged users inside).
chmod 755 "$root"
cleanup() {
	local rc=$?
	# Whatever a test left mounted inside (/run/netns, ...) goes too.
	umount -R "$root" 2>/dev/null || umount -R -l "$root" 2>/dev/null || true
	if [ "${MRC_FRESH_KEEP:-0}" = 1 ]; then
		echo "check-fresh: root filesystem kept in $root"
	elif ! findmnt -R "$root" >/dev/null 2>&1; then
		rm -rf --one-file-system "$root"
	else
		echo "check-fresh: $root still has mounts; not removed" >&2
	fi
	exit $rc
}
trap cleanup EXIT INT TERM

t0=$(date +%s)
# The base, and this machine's apt configuration (its mirror, proxies,
# validity rules) and name resolution: the chroot stands for a fresh
# machine of this kind.
./scripts/debian-base.sh "$root" "$cache"

mount --bind "$root" "$root"
mount -t proc proc "$root/proc"
mount -t sysfs sys "$root/sys"
mount --rbind /dev "$root/dev"
mount -t tmpfs tmpfs "$root/run"

mkdir -p "$root/src/mrc"
git archive HEAD | tar -x -C "$root/src/mrc"
echo "== check-fresh: testing $(git rev-parse --short HEAD) in $root"

in_root() {
	chroot "$root" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
		HOME=/root TERM=dumb LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive /bin/sh -c "$1"
}
in_root "apt-get update -q >/dev/null && apt-get install -y -q --no-install-recommends make >/dev/null" ||
	{ echo "check-fresh: could not install make in the chroot" >&2; exit 1; }
t1=$(date +%s)
echo "== check-fresh: base ready in $((t1 - t0)) s; running: $cmds"
rc=0
in_root "cd /src/mrc && $cmds" || rc=$?
t2=$(date +%s)
if [ $rc = 0 ]; then
	echo "== check-fresh: passed: '$cmds' on a fresh Debian 12, first try ($((t2 - t1)) s)"
else
	echo "== check-fresh: FAILED (exit $rc) after $((t2 - t1)) s: '$cmds' on a fresh Debian 12" >&2
fi
exit $rc
