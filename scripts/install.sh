#!/bin/sh
# Installs mrc:  ./scripts/install.sh DESTDIR PREFIX BUILD
# (what `make install` runs).  Binaries, libmrc with headers and
# pkg-config file, the systemd unit (ExecStart pointing at PREFIX/bin),
# sysusers and tmpfiles entries, the example configuration and topologies,
# man pages and docs, the Wireshark dissector, the Grafana dashboard.  Whatever the build did not produce (e.g. libmrc) is
# skipped with a note, never an error.
set -eu
[ $# -eq 3 ] || { echo "usage: $0 DESTDIR PREFIX BUILD" >&2; exit 2; }
D=$1; PREFIX=$2; B=$3
case "$PREFIX" in /*) ;; *) echo "install.sh: PREFIX must be absolute: '$PREFIX'" >&2; exit 2 ;; esac
[ -d "$B/bin" ] || { echo "install.sh: $B/bin does not exist (run make first)" >&2; exit 1; }
cd "$(dirname "$0")/.."
P=$D$PREFIX
# Units, sysusers and tmpfiles live under PREFIX/lib (systemd also reads
# /usr/local/lib/...); the configuration directory is always /etc/mrcd,
# because that is where mrcd looks.
UNITDIR=$P/lib/systemd/system
inst() { mode=$1; dir=$2; shift 2; install -d "$dir"; install -m "$mode" "$@" "$dir/"; }

inst 755 "$P/bin" "$B"/bin/*
if ls "$B"/lib/libmrc.so* >/dev/null 2>&1; then
	install -d "$P/lib"
	for f in "$B"/lib/libmrc.so*; do cp -P "$f" "$P/lib/"; done
	# The soname link ldconfig would make, so a fresh prefix works at once.
	so=$(objdump -p "$B/lib/libmrc.so" 2>/dev/null | awk '$1 == "SONAME" {print $2}')
	if [ -n "$so" ] && [ ! -e "$P/lib/$so" ]; then
		mv "$P/lib/libmrc.so" "$P/lib/$so"
		ln -sf "$so" "$P/lib/libmrc.so"
	fi
else
	echo "install.sh: no $B/lib/libmrc.so, skipping the shared library"
fi
[ -f "$B/lib/libmrc.a" ] && inst 644 "$P/lib" "$B/lib/libmrc.a"
[ -f "$B/lib/mrc.pc" ] && inst 644 "$P/lib/pkgconfig" "$B/lib/mrc.pc"
ls include/mrc/*.h >/dev/null 2>&1 && inst 644 "$P/include/mrc" include/mrc/*.h

install -d "$UNITDIR"
sed "s|@BINDIR@|$PREFIX/bin|g" systemd/mrcd.service.in >"$UNITDIR/mrcd.service"
chmod 644 "$UNITDIR/mrcd.service"
install -D -m 644 systemd/mrcd.sysusers "$P/lib/sysusers.d/mrcd.conf"
install -D -m 644 systemd/mrcd.tmpfiles "$P/lib/tmpfiles.d/mrcd.conf"

install -D -m 644 etc/mrcd.conf.example "$D/etc/mrcd/mrcd.conf.example"
inst 644 "$P/share/mrc/topologies" examples/topologies/*.json
for m in man/*.[3578]; do
	[ -f "$m" ] || continue
	inst 644 "$P/share/man/man${m##*.}" "$m"
done
inst 644 "$P/share/doc/mrc" README.md docs/*.md etc/mrcd.conf.example

# The Wireshark dissector and its "MRC" profile go where this machine's
# Wireshark looks (its global Lua plugin and configuration folders, which
# do not follow PREFIX), as tshark reports them; without tshark, under
# PREFIX/lib/wireshark for a later copy by hand.
wsdir() { tshark -G folders 2>/dev/null | sed -n "s/^$1:[[:space:]]*//p" | head -n 1; }
if command -v tshark >/dev/null 2>&1 && [ -n "$(wsdir 'Global Lua Plugins')" ]; then
	WSLUA=$D$(wsdir 'Global Lua Plugins'); WSCONF=$D$(wsdir 'Global configuration')
else
	WSLUA=$P/lib/wireshark/plugins; WSCONF=$P/share/wireshark
	echo "install.sh: tshark not found, dissector put in $WSLUA"
fi
# The libfabric provider goes where Debian's libfabric looks for external
# providers (its libdir's libfabric/; FI_PROVIDER_PATH overrides), which
# does not follow PREFIX (docs/libfabric.md).
if [ -f "$B/lib/libmrc-fi.so" ]; then
	FIDIR=$D/usr/lib/$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)/libfabric
	inst 755 "$FIDIR" "$B/lib/libmrc-fi.so"
else
	echo "install.sh: no $B/lib/libmrc-fi.so, skipping the libfabric provider"
fi
inst 644 "$P/share/mrc/grafana" tools/grafana/mrc-dashboard.json
inst 644 "$WSLUA" tools/wireshark/mrc.lua
inst 644 "$WSCONF/profiles/MRC" tools/wireshark/profile/preferences
echo "installed mrc into ${D:-/}${D:+ }(prefix $PREFIX)"
