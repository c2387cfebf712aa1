#!/bin/sh
# scripts/install.sh into a temporary DESTDIR: every kind of file lands
# where the unit, pkg-config and man expect it, and `systemd-analyze
# verify` accepts the installed unit (its binary paths pointed into the
# DESTDIR, man pages found there).  Listed in ROOT_TESTS because `make
# check` runs it after `all`; it needs no root itself.
set -u
B=${1:-build}
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT INT TERM
PREFIX=/usr/local
fails=0
bad() { echo "FAIL $*"; fails=$((fails + 1)); }
./scripts/install.sh "$D" "$PREFIX" "$B" >/dev/null || { echo "FAIL install.sh exited $?"; exit 1; }
P=$D$PREFIX
for f in bin/mrcd bin/mrcctl lib/systemd/system/mrcd.service lib/sysusers.d/mrcd.conf \
	lib/tmpfiles.d/mrcd.conf share/man/man8/mrcd.8 share/man/man8/mrcctl.8 \
	share/man/man5/mrcd.conf.5 share/mrc/topologies/fabric-2p-8h.json share/doc/mrc/ctl.md \
	share/mrc/grafana/mrc-dashboard.json; do
	[ -e "$P/$f" ] || bad "missing $PREFIX/$f"
done
[ -f "$D/etc/mrcd/mrcd.conf.example" ] || bad "missing /etc/mrcd/mrcd.conf.example"
# The dissector lands where tshark loads global Lua plugins, and loads.
if command -v tshark >/dev/null 2>&1; then
	ws=$(tshark -G folders 2>/dev/null | sed -n 's/^Global Lua Plugins:[[:space:]]*//p')
	wc=$(tshark -G folders 2>/dev/null | sed -n 's/^Global configuration:[[:space:]]*//p')
	[ -f "$D$ws/mrc.lua" ] || bad "missing the dissector $ws/mrc.lua"
	[ -f "$D$wc/profiles/MRC/preferences" ] || bad "missing the Wireshark profile $wc/profiles/MRC"
	# tshark refuses -o for a preference no loaded dissector registered
	: >"$D/empty.txt" && text2pcap -q "$D/empty.txt" "$D/empty.pcap" &&
		tshark -r "$D/empty.pcap" -X "lua_script:$D$ws/mrc.lua" -o mrc.port:4791 >/dev/null 2>&1 ||
		bad "tshark does not load the installed dissector"
fi
if [ -e "$B/lib/libmrc.so" ]; then
	for f in lib/libmrc.so lib/libmrc.a lib/pkgconfig/mrc.pc include/mrc/mrc.h; do
		[ -e "$P/$f" ] || bad "missing $PREFIX/$f"
	done
fi
[ -e "$D/etc/mrcd/cluster.key" ] && bad "install put a cluster key in place (each cluster makes its own)"
[ -x "$P/bin/mrcd" ] && "$P/bin/mrcd" --genkey "$D/cluster.key" >/dev/null &&
	"$P/bin/mrcd" -c "$D/etc/mrcd/mrcd.conf.example" --key_file "$D/cluster.key" --check >/dev/null ||
	bad "installed mrcd rejects the installed example configuration"
grep -qx "ExecStart=$PREFIX/bin/mrcd" "$P/lib/systemd/system/mrcd.service" || bad "ExecStart does not point at $PREFIX/bin/mrcd"
if command -v systemd-analyze >/dev/null; then
	sed "s|$PREFIX/bin|$P/bin|g" "$P/lib/systemd/system/mrcd.service" >"$D/mrcd.service"
	if out=$(MANPATH="$P/share/man" systemd-analyze verify "$D/mrcd.service" 2>&1); then
		echo "ok   systemd-analyze verify mrcd.service (Documentation= man pages found)"
	else
		bad "systemd-analyze verify: $out"
	fi
else
	bad "systemd-analyze missing (scripts/deps.sh installs package systemd)"
fi
[ $fails = 0 ] || { echo "install: $fails check(s) failed"; exit 1; }
echo "install: all checks passed ($(find "$D" -type f | wc -l) files)"
