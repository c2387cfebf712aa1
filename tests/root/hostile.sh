#!/bin/bash
# Integration (root): the hostile neighbour (issue 29).  Every attack of the
# audit, run against real daemons on the 2-plane SRv6 fabric while a
# verified transfer h0 -> h7 goes on; each attempt is checked to have been
# refused (by the kernel) or dropped and counted (by mrcd), and the
# transfer to have completed intact.
#
#   port:   as uid 65534 on h0, bind mrcd's UDP port (the daemons run on
#           4791 here, an unprivileged port an operator may choose, so
#           only the missing SO_REUSEADDR/SO_REUSEPORT stands in the way)
#           on each plane address and the wildcard, with SO_REUSEADDR and
#           with SO_REUSEPORT: refused; a raw socket to send as the port:
#           refused; with no daemon running (h3), the default port 791 is
#           privileged: refused; mrcd warns at start that 4791 is not.
set -u
B=${1:-build}
P=mrcH
T=examples/topologies/fabric-2p-8h.json
F="$B/bin/mrc-fabric -p $P"
SIZE=${MRC_HOSTILE_BYTES:-512M}
PORT=4791
tmp=$(mktemp -d)
PY=/usr/bin/python3        # Debian's: a user's pyenv shim is not for uid 65534
declare -A dpid
fails=0
cleanup() {
	for p in "${dpid[@]}"; do kill "$p" 2>/dev/null; done
	[ -n "${spid:-}" ] && kill "$spid" 2>/dev/null
	[ -n "${rpid:-}" ] && kill "$rpid" 2>/dev/null
	$F down >/dev/null 2>&1
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 143' INT TERM
. tests/root/lib.sh

$F down >/dev/null 2>&1
$F up "$T" >/dev/null || { echo "mrc-fabric up failed"; exit 1; }
$B/bin/mrcd --genkey "$tmp/cluster.key" >/dev/null || exit 1
chmod 755 "$tmp"
for h in h0 h7; do
	mkdir -p "$tmp/$h" && chmod 755 "$tmp/$h"
	ip netns exec $P-$h $B/bin/mrcd --topology $T --host $h --socket "$tmp/$h/mrcd.sock" \
		--socket_mode 0666 --port $PORT --key_file "$tmp/cluster.key" --log_level notice \
		2>>"$tmp/$h.log" &
	dpid[$h]=$!
	until_t 10 test -S "$tmp/$h/mrcctl.sock" || { echo "FAIL mrcd on $h did not start"; tail "$tmp/$h.log"; exit 1; }
done
nobody() { local h=$1; shift; ip netns exec $P-$h setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
idx() { ctl h0 -j topology | jq -r --arg h "$1" '.hosts[] | select(.name == $h) | .index'; }
I7=$(idx h7)
stat() { ctl $1 -j stats | jq "$2"; }

# The transfer every attack runs beside.
SIZE_B=$(numfmt --from=iec "$SIZE")
$B/bin/mrc_bulk -S "$tmp/h7/mrcd.sock" -s "$SIZE" recv >"$tmp/recv" 2>&1 &
rpid=$!
until_t 10 sh -c "$B/bin/mrcctl -s $tmp/h7/mrcctl.sock -j status >/dev/null" || true
$B/bin/mrc_bulk -S "$tmp/h0/mrcd.sock" -s "$SIZE" send $I7 >"$tmp/send" 2>&1 &
spid=$!
placed() { ctl h7 -j status 2>/dev/null | jq -r '.totals.bytes_placed // 0'; }
started() { [ "$(placed)" -ge $((SIZE_B / 20)) ]; }
until_t 60 started || { bad "transfer did not reach 5% in 60 s"; cat "$tmp/send" "$tmp/recv"; exit 1; }

# --- port -------------------------------------------------------------
# try_bind ADDR PORT OPT: prints "refused ERRNO" or, when the kernel lets
# the socket share the port, "bound N" with the datagrams it then caught
# in 1 s (what the audit's attacker read: mrcd's traffic).
cat >"$tmp/bind.py" <<'EOF'
import errno, socket, sys, time
addr, port, opt = sys.argv[1], int(sys.argv[2]), sys.argv[3]
s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
if opt.startswith("dev:"):
    s.setsockopt(socket.SOL_SOCKET, socket.SO_BINDTODEVICE, opt[4:].encode())
elif opt != "none":
    s.setsockopt(socket.SOL_SOCKET, getattr(socket, opt), 1)
try:
    s.bind((addr, port))
except OSError as e:
    print("refused", errno.errorcode.get(e.errno, e.errno)); sys.exit(0)
s.settimeout(0.1); n = 0; end = time.time() + 1
while time.time() < end:
    try:
        s.recv(65536); n += 1
    except socket.timeout:
        pass
print("bound", n)
EOF
chmod 644 "$tmp/bind.py"
addrs=$(ip -n $P-h0 -6 -j addr show scope global | jq -r '[.[].addr_info[] | select(.scope == "global") | .local] | join(" ")')
[ -n "$addrs" ] || bad "no global address on h0"
for a in $addrs ::; do
	for opt in SO_REUSEADDR SO_REUSEPORT none; do
		r=$(nobody h0 $PY "$tmp/bind.py" "$a" $PORT $opt 2>&1)
		case "$r" in
		"refused EADDRINUSE") ok "uid 65534 binding [$a]:$PORT ($opt) while mrcd runs: EADDRINUSE" ;;
		*) bad "uid 65534 binding [$a]:$PORT ($opt) while mrcd runs: $r" ;;
		esac
	done
done
# SO_BINDTODEVICE needs no privilege since Linux 5.7: on a plane NIC it
# meets mrcd's socket there; on lo it may bind, but what peers send mrcd
# arrives on the plane NICs, so it must catch nothing.
nics=$(ip -n $P-h0 -j link show | jq -r '[.[].ifname | select(. != "lo")] | join(" ")')
for n in $nics; do
	r=$(nobody h0 $PY "$tmp/bind.py" :: $PORT dev:$n 2>&1)
	[ "$r" = "refused EADDRINUSE" ] && ok "uid 65534 binding [::]:$PORT on plane NIC $n: EADDRINUSE" ||
		bad "uid 65534 binding [::]:$PORT on plane NIC $n: $r"
done
for a in $addrs ::; do
	r=$(nobody h0 $PY "$tmp/bind.py" "$a" $PORT dev:lo 2>&1)
	case "$r" in
	"refused "*|"bound 0") ok "uid 65534 on lo, [$a]:$PORT: $r (nothing of mrcd's)" ;;
	*) bad "uid 65534 on lo, [$a]:$PORT: $r" ;;
	esac
done
r=$(nobody h0 $PY -c 'import socket; socket.socket(socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_UDP)' 2>&1)
case "$r" in
*PermissionError*|*"Operation not permitted"*) ok "uid 65534 cannot open a raw socket to send as port $PORT" ;;
*) bad "uid 65534 raw socket: '$r'" ;;
esac
# No daemon on h3: the default port is privileged, so nobody takes it first.
r=$(nobody h3 $PY "$tmp/bind.py" :: 791 SO_REUSEADDR 2>&1)
[ "$r" = "refused EACCES" ] && ok "uid 65534 binding the default port 791 with no mrcd running: EACCES" ||
	bad "uid 65534 binding the default port 791 on h3 (no mrcd): $r"
grep -q "UDP port $PORT (side channel 4792) is not privileged here" "$tmp/h0.log" &&
	ok "mrcd warned at start that its ports ($PORT, side 4792) are not privileged" ||
	bad "no warning about the unprivileged port in h0's log"

# --- the end: the transfer beside every attack ------------------------
wait $spid; rs=$?; spid=
wait $rpid; rr=$?; rpid=
[ $rs = 0 ] && [ $rr = 0 ] && ok "transfer of $SIZE completed and verified: $(tail -n1 "$tmp/recv")" ||
	{ bad "transfer failed (sender $rs, receiver $rr)"; tail -n3 "$tmp/send" "$tmp/recv"; }
[ $fails = 0 ] || { for h in h0 h7; do echo "--- mrcd $h log"; tail -n 20 "$tmp/$h.log"; done; echo "hostile: $fails check(s) failed"; exit 1; }
echo "hostile: all checks passed"
