#!/bin/bash
# Integration (root): two mrcd on the verbs datapath find each other with
# no configuration, on a 2-plane SRv6 fabric in network namespaces.  There
# is no RDMA device here, so the daemons are build/tests/mrcd-fakeverbs:
# mrcd linked against a fake libibverbs that carries UD datagrams over
# kernel UDP, demultiplexed by QP number and Q_Key as a NIC does
# (tests/support/fake_verbs_net.c).  Checks:
#   - each daemon opened verbs and its udp side channel (port 4792);
#   - MRC_VERBS_BYTES (64M) h0 -> h7 verified by hash (mrc_bulk): the
#     first REQ crossed the side channel, everything after it went over
#     the (fake) UD QPs: h0's verbs counters carry at least the payload;
#   - a datagram that is not CTRL sent to h7's side channel (from a leaf
#     switch's namespace, as any host on the fabric could) is dropped and
#     counted in daemon.rx_side_data;
#   - h7's daemon restarted (new QP numbers, h0's are stale): a second
#     transfer still verifies, through the side-channel retry.
# Bounded in time; cleans up on every exit.  Run it only under
# `flock /tmp/mrc-root.lock`.
set -u
B=${1:-build}
P=${MRC_VERBS_PREFIX:-mrcV}
T=examples/topologies/fabric-2p-8h.json
F="$B/bin/mrc-fabric -p $P"
SIZE=${MRC_VERBS_BYTES:-64M}
MRCD=${MRC_VERBS_MRCD:-$B/tests/mrcd-fakeverbs}   # another build of it
tmp=$(mktemp -d)
declare -A dpid
fails=0
cleanup() {
	for p in "${dpid[@]}"; do kill "$p" 2>/dev/null; done
	$F down >/dev/null 2>&1
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM   # through the EXIT trap
. tests/root/lib.sh

if [ ! -x "$MRCD" ]; then
	echo "SKIP $MRCD not built (the verbs datapath needs libibverbs-dev)"
	exit 77
fi
$F down >/dev/null 2>&1
$F up "$T" >/dev/null || { echo "mrc-fabric up failed"; exit 1; }
jq '.topology' /run/mrc-fabric/$P/state.json >"$tmp/topo.json"
$B/bin/mrcd --genkey "$tmp/cluster.key" >/dev/null || exit 1

# start H: the fake-verbs mrcd in namespace $P-H (start_mrcd's, on verbs:
# a RoCE UD message is at most 4096 bytes, so mtu 4096 - 72; port 4791
# as a RoCE host would name it, which moves the side channel to 4792).
start() {
	local h=$1
	mkdir -p "$tmp/$h"
	ip netns exec $P-$h $MRCD --topology "$tmp/topo.json" --host $h --socket "$(sock $h)" \
		--key_file "$tmp/cluster.key" --datapath verbs --port 4791 --mtu 4024 --log_level info \
		2>>"$tmp/$h.log" &
	dpid[$h]=$!
	until_t 10 test -S "$tmp/$h/mrcctl.sock" || { echo "mrcd on $h did not start"; tail "$tmp/$h.log"; exit 1; }
}
for h in h0 h7; do start $h; done
for h in h0 h7; do
	if grep -q "datapath verbs: first contact over udp port 4792" "$tmp/$h.log" &&
	   [ "$(ctl $h -j status | jq -r .datapath)" = verbs ]; then
		ok "$h: datapath verbs, side channel on udp port 4792"
	else
		bad "$h: not on verbs with a side channel: $(tail -n3 "$tmp/$h.log")"
	fi
done

recv_ready() { grep -q "waiting for a sender" "$tmp/r"; }
dp_bytes() { ctl h0 -j stats | jq -r '.datapath.tx_bytes'; }
sid=7900
# bulk NAME: one verified transfer h0 -> h7.
bulk() {
	local name=$1 rc_s rc_r b0 b1
	sid=$((sid + 1))
	b0=$(dp_bytes)
	$B/bin/mrc_bulk -S "$(sock h7)" -s "$SIZE" -i $sid recv >"$tmp/r" 2>&1 &
	local r=$!
	until_t 10 recv_ready || bad "$name: receiver never listened: $(tail -n2 "$tmp/r")"
	timeout 120 $B/bin/mrc_bulk -S "$(sock h0)" -s "$SIZE" -i $sid send 7 >"$tmp/s" 2>&1
	rc_s=$?
	# A receiver still waiting once the sender gave up is killed (fails).
	timeout 30 tail --pid=$r -f /dev/null; kill $r 2>/dev/null; wait $r; rc_r=$?
	b1=$(dp_bytes)
	if [ $rc_s = 0 ] && [ $rc_r = 0 ]; then
		ok "$name: $SIZE verified ($(tail -n1 "$tmp/r"))"
	else
		bad "$name: sender exit $rc_s, receiver exit $rc_r"; tail -n3 "$tmp/s" "$tmp/r" "$tmp/h0.log" "$tmp/h7.log"
	fi
	# The payload went through the verbs provider, not the side channel.
	if [ $((b1 - b0)) -ge "$(numfmt --from=iec "$SIZE")" ]; then
		ok "$name: h0 sent $((b1 - b0)) bytes over the (fake) UD QPs"
	else
		bad "$name: h0's verbs datapath sent only $((b1 - b0)) bytes"
	fi
}
bulk "first contact"

# Anything but CTRL on the side channel is dropped and counted.
side_data() { ctl h7 -j stats | jq -r '.daemon.rx_side_data'; }
a7=$(ip -n $P-h7 -6 -j addr show scope global | jq -r '[.[].addr_info[] | select(.scope == "global") | .local][0]')
s0=$(side_data)
for ns in $P-p0l3 $P-p1l3; do   # h7's leaves on planes 0 and 1
	ip netns exec $ns bash -c "printf 'not a ctrl message' >/dev/udp/$a7/4792" 2>>"$tmp/side.err"
done
if until_t 10 eval '[ "$(side_data)" -ge $((s0 + 2)) ]'; then
	ok "h7 counted 2 non-CTRL datagrams on its side channel ($s0 -> $(side_data))"
else
	bad "h7's rx_side_data $s0 -> $(side_data) after 2 non-CTRL datagrams to [$a7]:4792 $(cat "$tmp/side.err")"
fi

# h7 restarts: new QP numbers; h0 still holds the old ones.
kill "${dpid[h7]}"; wait "${dpid[h7]}" 2>/dev/null
until_t 10 eval '! test -S "$tmp/h7/mrcctl.sock"' || true
rm -f "$tmp/h7/mrcctl.sock" "$(sock h7)"
start h7
bulk "after h7 restarted (stale QP numbers at h0)"

if grep -q "AddressSanitizer\|runtime error" "$tmp/h0.log" "$tmp/h7.log"; then
	bad "sanitizer report in a daemon log"
fi
echo "verbs_fake: $fails failure(s)"
[ $fails = 0 ]
