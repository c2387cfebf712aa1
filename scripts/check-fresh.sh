#!/bin/bash
# make check-fresh: proves the README's two commands work the first time on
# a fresh Debian 12.  Builds a minimal root filesystem with debootstrap
# (--variant=minbase bookworm; the mirror is read from this machine's apt
# sources, never written into the repository), caches it as a tarball
# between runs, bind-mounts it on itself (`ip netns exec` needs / to be a
# mount point), mounts proc, sys, dev and a tmpfs on /run, installs only
# `make`, copies `git archive HEAD` in, and runs `make demo` and then
# `make check` there as root.  Everything is unmounted and removed on any
# exit.  Environment:
#   MRC_FRESH_CACHE  where the base tarball is kept
#                    (default /var/cache/mrc/bookworm-minbase.tar.gz)
#   MRC_FRESH_KEEP=1 keep the root filesystem for inspection (still unmounted)
#   MRC_FRESH_CMDS   the commands to run (default "make demo; make check")
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "check-fresh: needs root (debootstrap, mounts, chroot)" >&2; exit 1; }
command -v debootstrap >/dev/null || { echo "check-fresh: debootstrap missing (scripts/deps.sh installs it)" >&2; exit 1; }
git rev-parse --verify -q HEAD >/dev/null || { echo "check-fresh: not a git checkout" >&2; exit 1; }
if ! git diff --quiet HEAD -- 2>/dev/null; then
	echo "check-fresh: note: uncommitted changes are NOT tested (git archive HEAD)" >&2
fi

cache=${MRC_FRESH_CACHE:-/var/cache/mrc/bookworm-minbase.tar.gz}
cmds=${MRC_FRESH_CMDS:-"make demo && make check"}

# The first Debian archive URI of this machine's apt sources (deb822
# .sources files or one-line sources.list entries).
mirror() {
	local u
	u=$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null |
		awk '/^URIs:/ { for (i = 2; i <= NF; i++) if ($i !~ /security/) { print $i; exit } }')
	[ -n "$u" ] || u=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
		awk '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\// && $i !~ /security/) { print $i; exit } }')
	[ -n "$u" ] || { echo "check-fresh: no Debian mirror found in /etc/apt/sources*" >&2; return 1; }
	echo "$u"
}

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
if [ -s "$cache" ]; then
	echo "== check-fresh: base from $cache"
	tar -xzf "$cache" -C "$root"
else
	m=$(mirror)
	echo "== check-fresh: debootstrap --variant=minbase bookworm from $m (cached afterwards in $cache)"
	debootstrap --variant=minbase bookworm "$root" "$m" >"$root.debootstrap.log" 2>&1 ||
		{ tail -n 30 "$root.debootstrap.log" >&2; rm -f "$root.debootstrap.log"; exit 1; }
	rm -f "$root.debootstrap.log"
	mkdir -p "$(dirname "$cache")"
	tar -czf "$cache.tmp" -C "$root" . && mv "$cache.tmp" "$cache"
fi
chmod 755 "$root"   # the tarball's "./" entry carries the directory's mode
# This machine's apt configuration (its mirror, proxies, validity rules)
# and name resolution: the chroot stands for a fresh machine of this kind.
rm -f "$root/etc/apt/sources.list"
cp -a /etc/apt/sources.list.d/. "$root/etc/apt/sources.list.d/" 2>/dev/null || true
if [ -f /etc/apt/sources.list ]; then cp /etc/apt/sources.list "$root/etc/apt/sources.list"; fi
cp -a /etc/apt/apt.conf.d/. "$root/etc/apt/apt.conf.d/" 2>/dev/null || true
cp -L /etc/resolv.conf "$root/etc/resolv.conf"

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
