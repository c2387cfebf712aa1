#!/bin/bash
# scripts/debian-base.sh ROOT [CACHE]: puts a Debian 12 minbase root
# filesystem into the (empty) directory ROOT, from the tarball CACHE
# (default /var/cache/mrc/bookworm-minbase.tar.gz) or, without one, with
# `debootstrap --variant=minbase bookworm` from the first Debian mirror of
# this machine's apt sources (never written into the repository), caching
# the result.  Then gives ROOT this machine's apt configuration and name
# resolution, so apt-get works inside as it does here.  Used by
# make check-fresh (scripts/check-fresh.sh) and tests/root/systemd_boot.sh.
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 ROOT [CACHE]" >&2; exit 2; }
root=$1
cache=${2:-/var/cache/mrc/bookworm-minbase.tar.gz}

# The first Debian archive URI of this machine's apt sources (deb822
# .sources files or one-line sources.list entries).
mirror() {
	local u
	u=$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null |
		awk '/^URIs:/ { for (i = 2; i <= NF; i++) if ($i !~ /security/) { print $i; exit } }')
	[ -n "$u" ] || u=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
		awk '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\// && $i !~ /security/) { print $i; exit } }')
	[ -n "$u" ] || { echo "debian-base: no Debian mirror found in /etc/apt/sources*" >&2; return 1; }
	echo "$u"
}

if [ -s "$cache" ]; then
	echo "== debian-base: from $cache"
	tar -xzf "$cache" -C "$root"
else
	command -v debootstrap >/dev/null || { echo "debian-base: debootstrap missing (scripts/deps.sh installs it)" >&2; exit 1; }
	m=$(mirror)
	echo "== debian-base: debootstrap --variant=minbase bookworm from $m (cached afterwards in $cache)"
	debootstrap --variant=minbase bookworm "$root" "$m" >"$root.debootstrap.log" 2>&1 ||
		{ tail -n 30 "$root.debootstrap.log" >&2; rm -f "$root.debootstrap.log"; exit 1; }
	rm -f "$root.debootstrap.log"
	mkdir -p "$(dirname "$cache")"
	tar -czf "$cache.tmp" -C "$root" . && mv "$cache.tmp" "$cache"
fi
chmod 755 "$root"   # the tarball's "./" entry carries the directory's mode
rm -f "$root/etc/apt/sources.list"
cp -a /etc/apt/sources.list.d/. "$root/etc/apt/sources.list.d/" 2>/dev/null || true
if [ -f /etc/apt/sources.list ]; then cp /etc/apt/sources.list "$root/etc/apt/sources.list"; fi
cp -a /etc/apt/apt.conf.d/. "$root/etc/apt/apt.conf.d/" 2>/dev/null || true
cp -L /etc/resolv.conf "$root/etc/resolv.conf"
