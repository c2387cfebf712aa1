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
#   client: a member of socket_group (uid 65534 with group users) holds 70
#           idle connections to each daemon's client socket before the
#           transfer starts: root's clients are not refused; mrcd closes
#           every one of the 70 (over the per-uid cap at once, the rest
#           after client_hello_timeout_ms) and counts them.
#   mrcctl: the same member holds 64 idle mrcctl connections: another
#           member's and root's mrcctl still work; the 64 are refused or
#           closed when idle, and counted.
#   metrics: 16 idle TCP connections fill the metrics endpoint: a scrape
#           still gets its answer; the idle ones are evicted, counted.
#   aead:   the daemons run with payload_encryption = aes-gcm; an on-path
#           observer (a capture on h7's plane-0 NIC) reads a data packet
#           and an ACK of the live QPs, and from h3 (holding h0's, then
#           h7's address, sending from the MRC port) sends what the audit
#           did with them: zero-length WRITE_IMMs carrying imm 0xdeadbeef
#           with the observed token field, ACKs of everything with the
#           observed ACK's, and the captured sealed data packet replayed
#           verbatim.  Each is dropped by the AEAD mode and counted; the
#           QPs stay RTS and the transfer verifies.
#   reflect: from h3 holding h0's address, 3,000 data packets to QP
#           numbers h7 does not have: h7 answers NOQP (to h0, the victim)
#           at most at its token bucket's rate (noqp_burst, noqp_per_s)
#           and counts the rest as noqp_limited.
# The other attacks of the audit have suites of their own: a CTRL REQ
# recorded and replayed into a restarted daemon and data from a non-peer
# address (tests/root/ctrl_replay.sh), forgeries without the key
# (tests/root/forge.sh); stepped-back clocks, probe replies, replay state
# and PSN wrap are unit-tested (docs/security.md names each test).
set -u
B=${1:-build}
P=mrcH
T=examples/topologies/fabric-2p-8h.json
F="$B/bin/mrc-fabric -p $P"
SIZE=${MRC_HOSTILE_BYTES:-1G}
PORT=4791
tmp=$(mktemp -d)
PY=/usr/bin/python3        # Debian's: a user's pyenv shim is not for uid 65534
declare -A dpid
fails=0
cleanup() {
	for p in "${dpid[@]}"; do kill "$p" 2>/dev/null; done
	[ -n "${spid:-}" ] && kill "$spid" 2>/dev/null
	[ -n "${rpid:-}" ] && kill "$rpid" 2>/dev/null
	pkill -f "$tmp/flood.py" 2>/dev/null
	$F down >/dev/null 2>&1
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 143' INT TERM
. tests/root/lib.sh

grep -qw aes /proc/cpuinfo && grep -qw pclmulqdq /proc/cpuinfo ||
	{ echo "SKIP this CPU lacks AES-NI/PCLMUL: payload_encryption = aes-gcm cannot run"; exit 77; }
command -v tshark >/dev/null || { echo "FAIL tshark missing (scripts/deps.sh installs it)"; exit 1; }
$F down >/dev/null 2>&1
$F up "$T" >/dev/null || { echo "mrc-fabric up failed"; exit 1; }
$B/bin/mrcd --genkey "$tmp/cluster.key" >/dev/null || exit 1
chmod 755 "$tmp"
for h in h0 h7; do
	mkdir -p "$tmp/$h" && chmod 755 "$tmp/$h"
	ip netns exec $P-$h $B/bin/mrcd --topology $T --host $h --socket "$tmp/$h/mrcd.sock" \
		--socket_mode 0660 --socket_group users --port $PORT --key_file "$tmp/cluster.key" \
		--client_hello_timeout_ms 1000 --ctl_idle_timeout_ms 1000 \
		--metrics_listen "[::1]:9464" --metrics_idle_timeout_ms 1000 \
		--payload_encryption aes-gcm --log_level notice \
		2>>"$tmp/$h.log" &
	dpid[$h]=$!
	until_t 10 test -S "$tmp/$h/mrcctl.sock" || { echo "FAIL mrcd on $h did not start"; tail "$tmp/$h.log"; exit 1; }
done
nobody() { local h=$1; shift; ip netns exec $P-$h setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
# member: uid 65534 in socket_group (users, gid 100); member2: another uid of it.
member() { local h=$1; shift; ip netns exec $P-$h setpriv --reuid=65534 --regid=65534 --groups=100 "$@"; }
member2() { local h=$1; shift; ip netns exec $P-$h setpriv --reuid=65533 --regid=65533 --groups=100 "$@"; }
op() { stats $1 ".oper.$2"; }
# flood.py unix PATH N | tcp HOST PORT N: opens N connections that never
# speak, writes "ready K" to its 4th/5th argument's file once K are open,
# then watches them: prints "closed C of K" when the daemon has closed all
# (C = K) or when 15 s have passed.
cat >"$tmp/flood.py" <<'EOF2'
import select, socket, sys, time
kind = sys.argv[1]
if kind == "unix":
    target, n, ready = sys.argv[2], int(sys.argv[3]), sys.argv[4]
    fam = socket.AF_UNIX
else:
    target, n, ready = (sys.argv[2], int(sys.argv[3])), int(sys.argv[4]), sys.argv[5]
    fam = socket.AF_INET6
socks = []
# The client socket is SOCK_SEQPACKET, mrcctl's and the metrics' streams.
types = [socket.SOCK_SEQPACKET, socket.SOCK_STREAM] if kind == "unix" else [socket.SOCK_STREAM]
err = None
for _ in range(n):
    for t in types:
        s = socket.socket(fam, t)
        try:
            s.connect(target); socks.append(s); break
        except OSError as e:
            err = e; s.close()
open(ready, "w").write("ready %d%s\n" % (len(socks), "" if len(socks) == n else " (%s)" % err))
closed, end = set(), time.time() + 15
while len(closed) < len(socks) and time.time() < end:
    r, _, _ = select.select([s for s in socks if s not in closed], [], [], 0.2)
    for s in r:
        try:
            while s.recv(4096):
                pass
        except OSError:
            pass
        closed.add(s)
print("closed %d of %d" % (len(closed), len(socks)))
EOF2
chmod 644 "$tmp/flood.py"
chmod 1777 "$tmp"
# flood_bg NAME HOST ARGS...: starts the flood as the member in HOST's
# namespace; its result lands in $tmp/NAME.out; waits until it is in place.
flood_bg() {
	local name=$1 h=$2; shift 2
	member $h $PY "$tmp/flood.py" "$@" "$tmp/$name.ready" >"$tmp/$name.out" 2>&1 &
	until_t 10 test -s "$tmp/$name.ready" || bad "$name: flood not in place: $(cat "$tmp/$name.out")"
}
# flood_done NAME N: the flood saw all N of its connections closed.
flood_done() {
	local r
	until_t 20 test -s "$tmp/$1.out"
	r=$(cat "$tmp/$1.out")
	[ "$r" = "closed $2 of $2" ] && ok "$1: mrcd closed all $2 idle connections ($(cat "$tmp/$1.ready"))" ||
		bad "$1: $r ($(cat "$tmp/$1.ready" 2>/dev/null))"
}

I7=$(idx h7)

declare -A c0
# --- client: idle connections must not keep root's clients out --------
for h in h0 h7; do
	c0[$h]=$(( $(op $h clients_refused) + $(op $h clients_hello_timeouts) ))
	flood_bg client-$h $h unix "$tmp/$h/mrcd.sock" 70
done
# The transfer every attack runs beside; its clients (root's) connect
# while the member's 70 idle connections are open.
bulk_start
ok "root's clients connected and the transfer started beside 70 idle connections on each daemon"
for h in h0 h7; do
	flood_done client-$h 70
	n=$(( $(op $h clients_refused) + $(op $h clients_hello_timeouts) - c0[$h] ))
	[ $n -ge 70 ] && ok "$h counted them: clients_refused + clients_hello_timeouts +$n" ||
		bad "$h: clients_refused + clients_hello_timeouts rose by $n, not 70"
done

# --- aead: what an on-path observer can forge ---------------------------
A0=$(addr h0); A7=$(addr h7)
read -r P37 D37 <<<"$(path h3 h7)"
read -r P30 D30 <<<"$(path h3 h0)"
live_qp
cap=$tmp/onpath.pcapng
ip netns exec $P-h7 timeout 10 dumpcap -q -i p0l3 -c 400 -f "udp port $PORT" -w "$cap" 2>"$tmp/cap.err" ||
	bad "capture on h7's p0l3: $(cat "$tmp/cap.err")"
ts() { tshark -n -r "$cap" -X "lua_script:tools/wireshark/mrc.lua" -o "mrc.port:$PORT" "$@" 2>/dev/null; }
read -r dpsn dtok draw <<<"$(ts -Y "mrc.opcode == 1 && mrc.dqpn == $Q7" -T fields -e mrc.psn -e mrc.token -e udp.payload | head -n1 | tr -d ':')"
read -r atok <<<"$(ts -Y "mrc.opcode == 16 && mrc.dqpn == $Q0" -T fields -e mrc.token | head -n1)"
if [ -z "${dtok:-}" ] || [ -z "${atok:-}" ] || [ -z "${draw:-}" ]; then
	bad "on-path capture held no data packet to h7's QP $Q7 or ACK to h0's QP $Q0"
else
	echo "observed: data to QP $Q7 psn $dpsn token field $dtok; ACK to QP $Q0 token field $atok"
	encdrops() { stats $1 '[.daemon.enc | .rx_bad_auth, .rx_missing, .rx_replay, .rx_stale, .rx_bad_len, .rx_nokey] | add'; }
	ed7=$(encdrops h7); ed0=$(encdrops h0)
	ip -n $P-h3 addr add $A0/128 dev lo nodad || bad "h3: add h0's address"
	ip -n $P-h3 addr add $A7/128 dev lo nodad || bad "h3: add h7's address"
	as() { ip netns exec $P-h3 $B/tools/mrc-forge --src $1 --sport $PORT --port $PORT --count $N "${@:2}"; }
	N=20
	as $A0 --dst $P37 --dev $D37 --token "${dtok#0x}" --imm deadbeef --psn $(( (dpsn + 1) & 0xffffff )) imm $Q7 ||
		bad "forge: zero-length WRITE_IMM send failed"
	as $A0 --dst $P37 --dev $D37 --count 1 raw "$draw" || bad "forge: replay send failed"
	as $A7 --dst $P30 --dev $D30 --token "${atok#0x}" --psn $(( (dpsn + 100000) & 0xffffff )) ack $Q0 ||
		bad "forge: ACK send failed"
	rose() { [ $(( $(encdrops h7) - ed7 )) -ge $((N + 1)) ] && [ $(( $(encdrops h0) - ed0 )) -ge $N ]; }
	until_t 10 rose &&
		ok "AEAD mode dropped and counted them: h7 +$(( $(encdrops h7) - ed7 )) (>= $((N + 1)): WRITE_IMMs, replay), h0 +$(( $(encdrops h0) - ed0 )) (>= $N: ACKs)" ||
		bad "AEAD drops: h7 +$(( $(encdrops h7) - ed7 )) of $((N + 1)), h0 +$(( $(encdrops h0) - ed0 )) of $N ($(ctl h7 -j stats | jq -c .daemon.enc))"
	rp=$(stats h7 '.daemon.enc.rx_replay + .daemon.enc.rx_stale')
	[ "$rp" -ge 1 ] && ok "the replayed sealed packet counted as a replay (rx_replay + rx_stale $rp)" ||
		bad "h7 rx_replay + rx_stale is $rp after the replay"
	qps_rts "the on-path forgeries"
	# --- reflect: NOQP answers are rate-limited ---------------------------
	nq0=$(stats h7 '.engine.nack_tx.noqp'); nl0=$(stats h7 '.engine.noqp_limited')
	t0=$(date +%s%N)
	for q in $(seq 3001 3003); do as $A0 --dst $P37 --dev $D37 --count 1000 data $((q << 16)) || bad "forge: data to QP $q failed"; done
	limited() { [ $(( $(stats h7 '.engine.noqp_limited') - nl0 )) -gt 0 ]; }
	until_t 10 limited
	t1=$(date +%s%N)
	nq=$(( $(stats h7 '.engine.nack_tx.noqp') - nq0 )); nl=$(( $(stats h7 '.engine.noqp_limited') - nl0 ))
	cap_n=$(( 64 + 1000 * (t1 - t0) / 1000000000 + 1000 ))   # burst + rate over the window, 1 s of slack
	[ $nl -gt 0 ] && [ $nq -le $cap_n ] &&
		ok "h7 answered $nq NOQPs to 3,000 packets for no QP (at most $cap_n in $(( (t1 - t0) / 1000000 )) ms) and limited $nl" ||
		bad "h7 NOQPs: $nq sent (bound $cap_n), $nl limited"
	ip -n $P-h3 addr del $A0/128 dev lo 2>/dev/null
	ip -n $P-h3 addr del $A7/128 dev lo 2>/dev/null
fi
[ "$(stats h0 .daemon.enc.tx_sealed)" -gt 0 ] && [ "$(stats h7 .daemon.enc.rx_opened)" -gt 0 ] &&
	ok "AEAD in use: h0 sealed $(stats h0 .daemon.enc.tx_sealed), h7 opened $(stats h7 .daemon.enc.rx_opened)" ||
	bad "AEAD not in use"

# --- mrcctl: no lock-out ----------------------------------------------
r0=$(op h0 refused); i0=$(op h0 idle_closed)
flood_bg ctl h0 unix "$tmp/h0/mrcctl.sock" 64
member2 h0 $B/bin/mrcctl -s "$tmp/h0/mrcctl.sock" status >/dev/null 2>"$tmp/m2.err" &&
	ok "another member's mrcctl works beside 64 idle connections" ||
	bad "another member's mrcctl: $(cat "$tmp/m2.err")"
ctl h0 status >/dev/null 2>"$tmp/root.err" && ok "root's mrcctl works beside 64 idle connections" ||
	bad "root's mrcctl: $(cat "$tmp/root.err")"
flood_done ctl 64
n=$(( $(op h0 refused) - r0 + $(op h0 idle_closed) - i0 ))
[ $n -ge 64 ] && ok "h0 counted them: refused + idle_closed +$n" || bad "h0: refused + idle_closed rose by $n, not 64"

# --- metrics: idle connections cannot keep a scrape out ---------------
e0=$(op h0 metrics_evicted)
flood_bg metrics h0 tcp ::1 9464 16
scrape=$(ip netns exec $P-h0 $PY -c 'import urllib.request as u; print(u.urlopen("http://[::1]:9464/metrics", timeout=5).read().count(b"\nmrc"))' 2>&1)
[ "${scrape:-0}" -gt 0 ] 2>/dev/null && ok "a scrape beside 16 idle connections got $scrape metric lines" ||
	bad "scrape beside 16 idle connections: $scrape"
flood_done metrics 16
n=$(( $(op h0 metrics_evicted) - e0 ))
[ $n -ge 1 ] && ok "h0 evicted idle metrics connections: metrics_evicted +$n" || bad "h0: metrics_evicted did not rise"

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
bulk_done
[ $fails = 0 ] || { for h in h0 h7; do echo "--- mrcd $h log"; tail -n 20 "$tmp/$h.log"; done; echo "hostile: $fails check(s) failed"; exit 1; }
echo "hostile: all checks passed"
