#!/bin/bash
# Integration (root): a CTRL REQ recorded on the wire is not acted on by a
# restarted mrcd (issue 29, finding A).  mrcd on h0 and h7 of the 2-plane
# SRv6 fabric share a cluster key; a 1 MiB mrc_bulk transfer h0 -> h7 sets
# up a connection while dumpcap records h7's incoming CTRL datagrams.  The
# last REQ from h0 (under h7's cookie) is kept; mrcd on h7 is restarted
# with a listener on the same service, and the recording is sent again
# from h3's namespace holding h0's address and the MRC port (byte for
# byte, what an on-path recorder could do).
# Then data from h5's address (held by h3's namespace: no key, no session)
# must not make h7 a peer of h5 (finding C).
# Asserts: the restarted h7 counts it as outside any session
# (daemon.ctrl_no_session) and challenges (ctrl_challenge_tx), makes no QP
# for it (no "ghost" connection bound to h0's old QP), and a genuine client
# from h0 then connects and its transfer verifies.
set -u
B=${1:-build}
P=mrcR
T=examples/topologies/fabric-2p-8h.json
F="$B/bin/mrc-fabric -p $P"
FORGE=${MRC_FORGE:-$B/tools/mrc-forge}
tmp=$(mktemp -d)
declare -A dpid
fails=0
cleanup() {
	for p in "${dpid[@]}"; do kill "$p" 2>/dev/null; done
	for p in ${cpid:-} ${spid:-} ${rpid:-}; do kill "$p" 2>/dev/null; done
	$F down >/dev/null 2>&1
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 143' INT TERM
. tests/root/lib.sh
[ -x "$FORGE" ] || { echo "FAIL $FORGE not built"; exit 1; }
command -v dumpcap >/dev/null && command -v tshark >/dev/null ||
	{ echo "SKIP dumpcap/tshark not installed"; exit 77; }

$F down >/dev/null 2>&1
$F up "$T" >/dev/null || { echo "mrc-fabric up failed"; exit 1; }
$B/bin/mrcd --genkey "$tmp/cluster.key" >/dev/null || exit 1
chmod 755 "$tmp"
start() {
	local h=$1
	mkdir -p "$tmp/$h" && chmod 755 "$tmp/$h"
	rm -f "$tmp/$h/mrcctl.sock"
	ip netns exec $P-$h $B/bin/mrcd --topology $T --host $h --socket "$tmp/$h/mrcd.sock" \
		--key_file "$tmp/cluster.key" --log_level notice 2>>"$tmp/$h.log" &
	dpid[$h]=$!
	until_t 10 test -S "$tmp/$h/mrcctl.sock" || { echo "FAIL mrcd on $h did not start"; tail "$tmp/$h.log"; exit 1; }
}
start h0
start h7
A0=$(addr h0); I0=$(idx h0); I7=$(idx h7)
read -r P37 D37 <<<"$(path h3 h7)"
[ -n "$A0" ] && [ -n "$P37" ] || { echo "FAIL addresses: '$A0' '$P37'"; exit 1; }
# QPs on h7 connected to h0 (any state but RESET).
qps70() { ctl h7 -j qps | jq "[.qps[] | select(.host == $I0)] | length"; }

# Record h7's incoming MRC datagrams during a transfer (CTRL picked below:
# a BPF udp[] offset would not apply to IPv6).
IFS7=$(ip -n $P-h7 -o link show | awk -F': ' '$2 != "lo" { sub(/@.*/, "", $2); printf " -i %s", $2 }')
ip netns exec $P-h7 dumpcap -q -i lo $IFS7 -s 256 \
	-w "$tmp/cap.pcapng" 2>"$tmp/dumpcap.err" &
cpid=$!
# Capturing once a marker datagram sent inside h7 shows in the file.
marker() {
	ip netns exec $P-h7 bash -c 'echo m >/dev/udp/::1/9' 2>/dev/null
	tshark -r "$tmp/cap.pcapng" -Y "udp.dstport == 9" 2>/dev/null | grep -q .
}
until_t 10 marker || { bad "dumpcap did not start: $(cat "$tmp/dumpcap.err")"; exit 1; }
stdbuf -oL $B/bin/mrc_bulk -S "$tmp/h7/mrcd.sock" -s 1M recv >"$tmp/recv1" 2>&1 &
rpid=$!
until_t 10 grep -q "waiting for a sender" "$tmp/recv1" || { bad "receiver did not listen"; cat "$tmp/recv1"; exit 1; }
$B/bin/mrc_bulk -S "$tmp/h0/mrcd.sock" -s 1M send $I7 >"$tmp/send1" 2>&1; rs=$?
wait $rpid; rr=$?; rpid=
[ $rs = 0 ] && [ $rr = 0 ] && ok "first transfer h0 -> h7 verified" || { bad "first transfer (sender $rs, receiver $rr)"; cat "$tmp/send1" "$tmp/recv1"; exit 1; }
kill $cpid; wait $cpid 2>/dev/null; cpid=
# The last REQ from h0 (body type 1; the body starts where the header
# ends, at length - 16 (MAC) - blen (offset 12)): one h7 acted on.
REC=$(tshark -r "$tmp/cap.pcapng" -T fields -e ipv6.src -e udp.payload 2>/dev/null |
	awk -v a="$A0" 'function hex(s, v, i) { for (i = 1; i <= length(s); i++)
			v = v * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1; return v }
	index($1, a) && substr($2, 3, 2) == "30" {
		n = length($2) / 2; blen = hex(substr($2, 25, 4)); h = n - 16 - blen
		if (h > 0 && substr($2, 2 * h + 1, 2) == "01") r = $2 } END { print r }')
[ -n "$REC" ] && ok "recorded h0's REQ (${#REC} hex digits)" ||
	{ bad "no REQ from h0 recorded"; cat "$tmp/dumpcap.err"; echo "A0 $A0 I7 $I7 I0 $I0"; ctl h7 -j stats | jq -c ".daemon, .datapath" | cut -c1-400; tshark -r "$tmp/cap.pcapng" -T fields -e ipv6.src -e udp.payload 2>/dev/null | grep "	0230" | cut -c1-160 | head; exit 1; }

# Restart mrcd on h7, listener on the same service again.
kill ${dpid[h7]}; wait ${dpid[h7]} 2>/dev/null
start h7
stdbuf -oL $B/bin/mrc_bulk -S "$tmp/h7/mrcd.sock" -s 1M recv >"$tmp/recv2" 2>&1 &
rpid=$!
until_t 10 grep -q "waiting for a sender" "$tmp/recv2" || { bad "receiver did not listen"; cat "$tmp/recv2"; exit 1; }
ns0=$(stats h7 "(.daemon.ctrl_no_session // 0)"); ch0=$(stats h7 "(.daemon.ctrl_challenge_tx // 0)")
ip -n $P-h3 addr add $A0/128 dev lo nodad || bad "h3: add h0's address"
ip netns exec $P-h3 $FORGE --src $A0 --sport 791 --dst $P37 --dev $D37 --count 3 raw "$REC" ||
	bad "replay: send failed"
rose() { [ "$(stats h7 "(.daemon.ctrl_no_session // 0)")" -ge $((ns0 + 3)) ]; }
until_t 10 rose && ok "restarted h7: the recorded REQ is outside any session (ctrl_no_session +$(( $(stats h7 "(.daemon.ctrl_no_session // 0)") - ns0 )))" ||
	bad "ctrl_no_session rose by $(( $(stats h7 "(.daemon.ctrl_no_session // 0)") - ns0 )), want >= 3"
[ "$(stats h7 "(.daemon.ctrl_challenge_tx // 0)")" -gt "$ch0" ] && ok "h7 challenged the epoch the recording names" ||
	bad "no challenge sent"
[ "$(qps70)" = 0 ] && ok "no QP on h7 for the replayed REQ (no ghost connection)" ||
	bad "h7 made $(qps70) QP(s) for h0 from the replay"
ip -n $P-h3 addr del $A0/128 dev lo 2>/dev/null

# Finding C: data from a topology address that is no peer of h7 (h5's,
# held by h3's namespace) makes no peer (before: a peer, beaconed to every
# second); it is counted in rx_no_peer.
A5=$(addr h5); I5=$(idx h5)
np0=$(stats h7 "(.daemon.rx_no_peer // 0)")
ip -n $P-h3 addr add $A5/128 dev lo nodad || bad "h3: add h5's address"
ip netns exec $P-h3 $FORGE --src $A5 --sport 791 --dst $P37 --dev $D37 --count 5 data 0x10001 ||
	bad "forge data as h5: send failed"
nopeer() { [ "$(stats h7 "(.daemon.rx_no_peer // 0)")" -ge $((np0 + 5)) ]; }
until_t 10 nopeer && ok "h7: data from h5's address dropped, no peer (rx_no_peer +$(( $(stats h7 "(.daemon.rx_no_peer // 0)") - np0 )))" ||
	bad "rx_no_peer rose by $(( $(stats h7 "(.daemon.rx_no_peer // 0)") - np0 )), want >= 5"
[ "$(ctl h7 -j peers | jq "[.peers[] | select(.host == $I5)] | length")" = 0 ] &&
	ok "h7 has no peer for h5" || bad "h7 made a peer for h5 from unauthenticated data"
ip -n $P-h3 addr del $A5/128 dev lo 2>/dev/null

# The genuine client still gets through (its daemon is challenged once);
# bounded: with the ghost connection of a daemon that took the replay, the
# listener is bound to it and the genuine client never completes.
timeout 20 $B/bin/mrc_bulk -S "$tmp/h0/mrcd.sock" -s 1M send $I7 >"$tmp/send2" 2>&1; rs=$?
until_t 10 sh -c "! kill -0 $rpid 2>/dev/null" || kill $rpid 2>/dev/null
wait $rpid; rr=$?; rpid=
[ $rs = 0 ] && [ $rr = 0 ] && ok "genuine transfer to the restarted h7 verified" ||
	{ bad "genuine transfer (sender $rs, receiver $rr)"; tail -n3 "$tmp/send2" "$tmp/recv2"; }
[ $fails = 0 ] || { for h in h0 h7; do echo "--- mrcd $h log"; tail -n 20 "$tmp/$h.log"; done; echo "ctrl_replay: $fails check(s) failed"; exit 1; }
echo "ctrl_replay: all checks passed"
