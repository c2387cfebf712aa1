#!/bin/bash
# Integration (root): mrcd under a real systemd.  A Debian 12 root
# filesystem (debootstrap minbase + systemd, cached) gets the project by
# `make install`, is booted with `systemd-nspawn --boot` (its own network
# namespace: two dummy plane NICs stand for the fabric), and then:
#   - `systemctl start mrcd` returns once mrcd sent READY=1, with its
#     status text (StatusText) set;
#   - `systemctl reload mrcd` applies a topology change (a spine link
#     removed: the path through it becomes DENIED) and logs it;
#   - path changes and admin actions reach the journal with structured
#     fields (MESSAGE_ID, MRC_PEER, MRC_EV, MRC_PLANE, MRC_SPINE,
#     MRC_NEW_STATE, MRC_REASON; MRC_KIND=admin);
#   - `systemctl stop mrcd` drains: STOPPING=1, exit 0, "stopped" logged;
#   - `systemd-analyze security mrcd.service` gives its exposure score,
#     which must stay at most MAX_EXPOSURE (docs/operator.md records it).
# Environment: MRC_BOOT_CACHE (default /var/cache/mrc/bookworm-systemd.tar.gz).
# Bounded in time; the container is stopped and its root removed on exit.
set -u
B=${1:-build}
MAX_EXPOSURE=4.0
cache=${MRC_BOOT_CACHE:-/var/cache/mrc/bookworm-systemd.tar.gz}
fails=0
. tests/root/lib.sh
skip() { echo "SKIP $*"; exit 77; }
die() { echo "FAIL $*"; exit 1; }
command -v systemd-nspawn >/dev/null || skip "systemd-nspawn missing (scripts/deps.sh installs systemd-container)"
# A chroot (make check-fresh) has no init of its own to host a container's
# cgroups reliably: say so rather than pass.
# systemd-nspawn needs a cgroup hierarchy at /sys/fs/cgroup (cgroup2, or
# v1 controllers under a tmpfs); make check-fresh's chroot mounts sysfs
# without one.
case "$(stat -fc %T /sys/fs/cgroup 2>/dev/null)" in
cgroup2fs | tmpfs) ;;
*) skip "no cgroup hierarchy mounted at /sys/fs/cgroup (a chroot such as make check-fresh's): systemd-nspawn cannot boot a container" ;;
esac
r1=$(stat -c %d:%i /proc/1/root/. 2>/dev/null) && [ "$r1" != "$(stat -c %d:%i /)" ] &&
	skip "running inside a chroot: booting a container needs the host's root"

root=$(mktemp -d /var/tmp/mrc-boot.XXXXXX)
chmod 755 "$root"
nsp=
cleanup() {
	if [ -n "$nsp" ] && kill -0 "$nsp" 2>/dev/null; then
		kill -TERM "$nsp" 2>/dev/null          # nspawn powers the container off
		for _ in $(seq 100); do kill -0 "$nsp" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$nsp" 2>/dev/null
	fi
	umount -R "$root" 2>/dev/null
	rm -rf --one-file-system "$root"
}
# A signal ends the script (its EXIT trap cleans up); a trap that only
# cleaned up let it run on after TERM, holding the root lock.
trap cleanup EXIT
trap 'exit 143' INT TERM

# ---- the root filesystem ---------------------------------------------------
# Runtime libraries of what make install ships, as Debian packages.
# (usrmerge: a library ldd finds under /lib may be registered under /usr/lib.)
pkgs=$(for l in $(ldd "$B"/bin/mrcd "$B"/bin/mrcctl | awk '$2 == "=>" && $3 ~ /^\// {print $3}' | sort -u); do
	dpkg -S "$l" 2>/dev/null || dpkg -S "/usr$l" 2>/dev/null || dpkg -S "$(realpath "$l")" 2>/dev/null ||
		echo "unknown: $l" >&2
done | cut -d: -f1 | sort -u | tr '\n' ' ')
# procps: the unit's ExecReload is /bin/kill -HUP (Debian's priority-important
# procps, which minbase leaves out); iproute2: the test's NICs.
pkgs="systemd systemd-sysv dbus procps iproute2 $pkgs"
missing() {
	[ "$(chroot "$root" dpkg-query -W -f='${Status}\n' $pkgs 2>/dev/null | grep -c 'install ok installed')" != "$(wc -w <<<"$pkgs")" ]
}
if [ -s "$cache" ]; then
	./scripts/debian-base.sh "$root" "$cache" >/dev/null || die "unpacking $cache"
else
	./scripts/debian-base.sh "$root" || die "no Debian base (debootstrap)"
fi
if missing; then
	echo "installing into the container: $pkgs"
	chroot "$root" sh -c "export DEBIAN_FRONTEND=noninteractive; apt-get update -q >/dev/null 2>&1;
		apt-get install -y -q --no-install-recommends $pkgs" >"$root.apt.log" 2>&1 ||
		{ tail -20 "$root.apt.log"; rm -f "$root.apt.log"; die "apt-get install in the container"; }
	rm -f "$root.apt.log"
	mkdir -p "$(dirname "$cache")" && tar -czf "$cache.tmp" -C "$root" . && mv "$cache.tmp" "$cache"
fi
./scripts/install.sh "$root" /usr/local "$B" >/dev/null || die "make install into the container"
mkdir -p "$root/etc/mrcd"
# The generated 2-plane fabric in explicit form (so a link can be cut),
# from mrc-fabric's own reading of it; cut.json lacks link p0s1-p0l3.
"$B/bin/mrc-fabric" -j -t examples/topologies/fabric-2p-8h.json show |
	jq '{version: 1, block, mtu: 9216, planes, hosts: [.nodes[] | select(.tier == "host") | {name, usid}],
	     switches: [.nodes[] | select(.tier != "host") | {name, tier, plane, usid}], links: [.links[] | {a, b}]}' \
	>"$root/etc/mrcd/topo.json" || die "explicit topology"
jq '.links |= map(select((.a == "p0s1" and .b == "p0l3") or (.a == "p0l3" and .b == "p0s1") | not))' \
	"$root/etc/mrcd/topo.json" >"$root/etc/mrcd/cut.json"
[ "$(jq '.links | length' "$root/etc/mrcd/cut.json")" = 31 ] || die "cut.json does not lack exactly one link"
printf '[mrcd]\ntopology = /etc/mrcd/topo.json\nhost = h0\n' >"$root/etc/mrcd/mrcd.conf"
# Two veth NICs named as h0's plane NICs, and h0's address, before mrcd.
cat >"$root/etc/systemd/system/mrc-nics.service" <<'EOF'
[Unit]
Description=plane NICs (veth) for the boot test
Before=mrcd.service
[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/bin/sh -ec 'for n in p0l0 p1l0; do ip link add $n type veth peer name $n.x; ip link set $n.x up; ip link set $n up; done; ip -6 addr add fcbb:bb00:8000::/128 dev lo'
[Install]
WantedBy=multi-user.target
EOF
ln -sf /etc/systemd/system/mrc-nics.service "$root/etc/systemd/system/multi-user.target.wants/mrc-nics.service"
echo mrc-boot >"$root/etc/hostname"

# ---- boot -------------------------------------------------------------------
# --register=no --keep-unit: no machined or system bus needed on the host.
systemd-nspawn -q -D "$root" --boot --register=no --keep-unit --private-network \
	-M mrcboot$$ >"$root.console" 2>&1 &
nsp=$!
leader() { pgrep -P "$nsp" | head -n 1; }
booted() {
	L=$(leader) && [ -n "$L" ] || return 1
	s=$(nsenter -t "$L" -a systemctl is-system-running 2>/dev/null)
	[ "$s" = running ] || [ "$s" = degraded ]
}
until_t 90 booted || { tail -20 "$root.console"; rm -f "$root.console"; die "the container did not boot in 90 s"; }
rm -f "$root.console"
X() { nsenter -t "$L" -a "$@"; }
ok "Debian 12 booted under systemd-nspawn ($(X systemctl --version | head -n 1))"
X systemctl is-active -q mrc-nics.service || die "dummy NICs: $(X systemctl status mrc-nics --no-pager | tail -5)"
X /usr/local/bin/mrcd --genkey /etc/mrcd/cluster.key >/dev/null || die "mrcd --genkey"
X systemctl daemon-reload

# ---- start: READY=1 and the status text -------------------------------------
X timeout 30 systemctl start mrcd || die "systemctl start mrcd: $(X journalctl -u mrcd --no-pager | tail -8)"
show() { X systemctl show mrcd -p "$1" --value; }
st=$(show StatusText)
[ "$(show ActiveState)/$(show SubState)" = active/running ] && [ -n "$st" ] &&
	ok "systemctl start returned after READY=1: active/running, status \"$st\"" ||
	bad "after start: $(show ActiveState)/$(show SubState), status '$st'"
grep -q "2 planes" <<<"$st" || bad "status text lacks the plane count: '$st'"
ctl() { X /usr/local/bin/mrcctl "$@"; }
ctl probe h7 >/dev/null 2>&1     # h7 becomes a peer (the probes are lost: no fabric)
until_t 10 ctl -j paths h7 >/dev/null 2>&1 || bad "h7 never became a peer"

# ---- reload: a topology change ------------------------------------------------
p01() { ctl -j paths h7 | jq -r '.paths[] | select(.plane == 0 and .spine == 1) | .state'; }
before=$(p01)
X cp /etc/mrcd/cut.json /etc/mrcd/topo.json
X timeout 30 systemctl reload mrcd || bad "systemctl reload failed"
denied() { [ "$(p01)" = DENIED ]; }
until_t 10 denied && ok "systemctl reload applied the topology: path plane 0 spine 1 $before -> DENIED" ||
	bad "after reload the path through the removed link is '$(p01)'"
X journalctl -u mrcd --no-pager | grep -q "configuration reloaded" && ok "the journal says the configuration was reloaded" ||
	bad "no reload message in the journal"
[ "$(show ActiveState)" = active ] || bad "not active after reload"

# ---- structured journal fields --------------------------------------------------
ctl plane disable 1 >/dev/null || bad "mrcctl plane disable 1"
ctl plane enable 1 >/dev/null || bad "mrcctl plane enable 1"
jpath() { X journalctl -u mrcd -o json --no-pager MESSAGE_ID=39d5ff975ab34f38a26f333bf875a531 MRC_PEER=h7; }
haspath() { jpath | jq -e -s 'any(.[]; .MRC_NEW_STATE == "DENIED" and .MRC_PLANE == "0" and .MRC_SPINE == "1" and .MRC_EV != null and .MRC_REASON != null)' >/dev/null; }
until_t 10 haspath && ok "path changes in the journal with fields: $(jpath | jq -r -s 'map(select(.MRC_NEW_STATE == "DENIED" and .MRC_SPINE == "1"))[0] | [to_entries[] | select(.key | test("^MRC_|^MESSAGE_ID")) | "\(.key)=\(.value)"] | join(" ")')" ||
	bad "no structured path change in the journal: $(jpath | head -c 600)"
jadmin() { X journalctl -u mrcd -o json --no-pager MRC_KIND=admin; }
hasadm() { [ "$(jadmin | jq -s 'map(select(.MESSAGE | test("plane 1 (dis|en)abled"))) | length')" -ge 2 ]; }
until_t 10 hasadm && ok "admin actions in the journal with MRC_KIND=admin ($(jadmin | jq -r -s '.[-1].MESSAGE'))" ||
	bad "admin actions not in the journal as MRC_KIND=admin"

# ---- stop: drain ------------------------------------------------------------------
pid=$(show MainPID)
X timeout 30 systemctl stop mrcd || bad "systemctl stop failed"
[ "$(show ActiveState)" = inactive ] && [ "$(show Result)" = success ] && [ "$(show ExecMainStatus)" = 0 ] &&
	ok "systemctl stop: inactive, result success, exit status 0" ||
	bad "after stop: $(show ActiveState), result $(show Result), status $(show ExecMainStatus)"
X journalctl -u mrcd --no-pager _PID="$pid" | grep -q "stopped" && ok "mrcd logged that it stopped (drained)" ||
	bad "no 'stopped' line from mrcd $pid"

# ---- exposure ----------------------------------------------------------------------
score=$(X systemd-analyze security mrcd.service --no-pager 2>/dev/null | sed -n 's/.*Overall exposure level for mrcd.service: \([0-9.]*\).*/\1/p')
[ -n "$score" ] && awk -v s="$score" -v m=$MAX_EXPOSURE 'BEGIN{exit !(s <= m)}' &&
	ok "systemd-analyze security: exposure $score (at most $MAX_EXPOSURE; docs/operator.md)" ||
	bad "exposure '$score' above $MAX_EXPOSURE"

[ $fails = 0 ] || { echo "systemd_boot: $fails check(s) failed"; exit 1; }
echo "systemd_boot: all checks passed"
