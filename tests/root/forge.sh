#!/bin/bash
# Integration (root): forged packets cannot hurt a live connection (issue 12).
# mrcd on h0 and h7 of the 2-plane SRv6 fabric share a cluster key; while a
# verified 1 GiB WRITE h0 -> h7 (mrc_bulk) runs, build/tools/mrc-forge sends,
#   (a) as uid 65534 in h0's namespace (a local user; any port but the
#       daemon's): a NOQP NACK naming the live QP, an ACK and a data packet
#       to h7's QP, a PLANES notice denying every plane, a REQ to the
#       listening service;
#   (b) from h3's namespace (no daemon, no key) holding h0's, then h7's,
#       address on lo and sending from the MRC port: the same, each to the
#       daemon it can hurt (data/ACK/REQ/PLANES to h7 as h0, NOQP and
#       PLANES to h0 as h7), so only tokens and MACs stand in the way.
# Asserts: the transfer completes and verifies; both QPs stay RTS; no path
# of either daemon is DENIED; each daemon's drop counters (bad source or
# port, bad MAC, bad token) rose by at least the number of forged packets
# sent to it, and the token and MAC counters by the ones that needed them.
set -u
B=${1:-build}
P=mrcF
T=examples/topologies/fabric-2p-8h.json
F="$B/bin/mrc-fabric -p $P"
FORGE=$B/tools/mrc-forge
SIZE=${MRC_FORGE_BYTES:-1G}
N=20                      # forged packets of each kind from each forger
tmp=$(mktemp -d)
declare -A dpid
fails=0
cleanup() {
	for p in "${dpid[@]}"; do kill "$p" 2>/dev/null; done
	[ -n "${spid:-}" ] && kill "$spid" 2>/dev/null
	[ -n "${rpid:-}" ] && kill "$rpid" 2>/dev/null
	$F down >/dev/null 2>&1
	rm -rf "$tmp"
}
# A signal ends the script (its EXIT trap cleans up); a trap that only
# cleaned up let it run on after TERM, holding the root lock.
trap cleanup EXIT
trap 'exit 143' INT TERM
. tests/root/lib.sh
[ -x "$FORGE" ] || { echo "FAIL $FORGE not built"; exit 1; }

$F down >/dev/null 2>&1
$F up "$T" >/dev/null || { echo "mrc-fabric up failed"; exit 1; }
$B/bin/mrcd --genkey "$tmp/cluster.key" >/dev/null || exit 1
chmod 755 "$tmp"
for h in h0 h7; do
	mkdir -p "$tmp/$h" && chmod 755 "$tmp/$h"
	ip netns exec $P-$h $B/bin/mrcd --topology $T --host $h --socket "$tmp/$h/mrcd.sock" \
		--key_file "$tmp/cluster.key" --log_level notice 2>>"$tmp/$h.log" &
	dpid[$h]=$!
	until_t 10 test -S "$tmp/$h/mrcctl.sock" || { echo "FAIL mrcd on $h did not start"; tail "$tmp/$h.log"; exit 1; }
done

A0=$(addr h0); A7=$(addr h7); I0=$(idx h0); I7=$(idx h7)
read -r P07 D07 <<<"$(path h0 h7)"
read -r P37 D37 <<<"$(path h3 h7)"
read -r P30 D30 <<<"$(path h3 h0)"
[ -n "$A0" ] && [ -n "$P07" ] && [ -n "$P37" ] && [ -n "$P30" ] || { echo "FAIL addresses: '$A0' '$P07' '$P37' '$P30'"; exit 1; }

# Every drop of a forged packet lands in one of these counters.
drops() {
	ctl $1 -j stats | jq '.daemon.rx_unknown_src + .daemon.rx_bad_sport + .daemon.ctrl_bad +
		.daemon.ctrl_bad_mac + .daemon.ctrl_wrong_src + .daemon.ctrl_wrong_dst +
		.daemon.ctrl_replay + .daemon.ctrl_stale + ([.engine.rx_bad_token[]] | add)'
}
denied() { ctl $1 -j paths $2 2>/dev/null | jq '[.paths[] | select(.state == "DENIED")] | length'; }

bulk_start
live_qp
[ "$Q0" != null ] && [ "$Q7" != null ] || { bad "no live QP h0 -> h7"; exit 1; }
echo "live QP: h0 $Q0 <-> h7 $Q7 (from mrcctl qps -j, as any local user sees it)"
den0=$(denied h0 h7); den7=$(denied h7 h0)
d0=$(drops h0); d7=$(drops h7)
tok7=$(stats h7 '.engine.rx_bad_token.data + .engine.rx_bad_token.ack')
mac7=$(stats h7 '.daemon.ctrl_bad_mac'); mac0=$(stats h0 '.daemon.ctrl_bad_mac')
noqp0=$(stats h0 '.engine.rx_bad_token.noqp')

# (a) an unprivileged local user on the sending host.
nobody() { ip netns exec $P-h0 setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
sent7=0; sent0=0
for k in "noqp $Q7" "ack $Q7" "data $Q7" "planes 0 $I0 $I7" "req 7001 $I0 $I7"; do
	nobody $FORGE --dst $P07 --dev $D07 --count $N $k || bad "forge (a) $k: send failed"
	sent7=$((sent7 + N))
done
# (b) another namespace with a peer's address and the MRC port, no key.
ip -n $P-h3 addr add $A0/128 dev lo nodad || bad "h3: add h0's address"
ip -n $P-h3 addr add $A7/128 dev lo nodad || bad "h3: add h7's address"
as() { ip netns exec $P-h3 $FORGE --src $1 --sport 791 --count $N "${@:2}"; }
for k in "data $Q7" "ack $Q7" "req 7001 $I0 $I7" "planes 0 $I0 $I7"; do
	as $A0 --dst $P37 --dev $D37 $k || bad "forge (b) $k: send failed"
	sent7=$((sent7 + N))
done
for k in "noqp $Q7" "planes 0 $I7 $I0"; do
	as $A7 --dst $P30 --dev $D30 $k || bad "forge (b) $k to h0: send failed"
	sent0=$((sent0 + N))
done
echo "forged: $sent7 packets to h7, $sent0 to h0"

# The drops are counted as the packets arrive: wait for them (bounded).
rose() { [ $(( $(drops h7) - d7 )) -ge $sent7 ] && [ $(( $(drops h0) - d0 )) -ge $sent0 ]; }
if until_t 10 rose; then
	ok "drop counters rose: h7 +$(( $(drops h7) - d7 )) (>= $sent7), h0 +$(( $(drops h0) - d0 )) (>= $sent0)"
else
	bad "drop counters: h7 +$(( $(drops h7) - d7 )) of $sent7, h0 +$(( $(drops h0) - d0 )) of $sent0"
fi
[ $(( $(stats h7 '.engine.rx_bad_token.data + .engine.rx_bad_token.ack') - tok7 )) -ge $((2 * N)) ] &&
	ok "h7: forged data and ACKs from h0's address dropped on the token" ||
	bad "h7: rx_bad_token data+ack rose by less than $((2 * N))"
[ $(( $(stats h7 '.daemon.ctrl_bad_mac') - mac7 )) -ge $((2 * N)) ] &&
	ok "h7: forged REQ and PLANES from h0's address dropped on the MAC" ||
	bad "h7: ctrl_bad_mac rose by less than $((2 * N))"
[ $(( $(stats h0 '.engine.rx_bad_token.noqp') - noqp0 )) -ge $N ] &&
	ok "h0: forged NOQP NACKs naming the live QP dropped on the token" ||
	bad "h0: rx_bad_token.noqp rose by less than $N"
[ $(( $(stats h0 '.daemon.ctrl_bad_mac') - mac0 )) -ge $N ] &&
	ok "h0: forged PLANES from h7's address dropped on the MAC" ||
	bad "h0: ctrl_bad_mac rose by less than $N"
qps_rts "the forgeries"
[ "$(denied h0 h7)" = "$den0" ] && [ "$(denied h7 h0)" = "$den7" ] &&
	ok "no path DENIED by the forgeries (h0->h7: $den0, h7->h0: $den7, as before)" ||
	bad "paths DENIED: h0->h7 $(denied h0 h7) (was $den0), h7->h0 $(denied h7 h0) (was $den7)"

bulk_done
ip -n $P-h3 addr del $A0/128 dev lo 2>/dev/null
ip -n $P-h3 addr del $A7/128 dev lo 2>/dev/null
[ $fails = 0 ] || { for h in h0 h7; do echo "--- mrcd $h log"; tail -n 20 "$tmp/$h.log"; done; echo "forge: $fails check(s) failed"; exit 1; }
echo "forge: all checks passed"
