#!/bin/bash
# Integration (root): a capture of real mrc traffic on the emulated fabric,
# decoded by the Wireshark dissector (tools/wireshark/mrc.lua).
#   - h0 sends 16 MiB to h7 (mrc_bulk) while dumpcap records both of h0's
#     plane NICs; dumpcap must report no drop (up to 3 tries);
#   - every UDP datagram on port 791 decodes as MRC (none as InfiniBand),
#     with no CRC error and no malformed-packet expert;
#   - per EV, the data packets h0 sent to h7 in the capture equal the
#     tx_pkts `mrcctl paths h7` reports for that EV over the transfer;
#   - each data packet's uSID route names h7, and the plane and spine
#     `mrcctl paths` gives for its EV (the dissector reads them from the
#     destination address, not from the EV).
# Skipped (exit 77, SKIP line) without tshark.  Bounded, cleans up on exit.
set -u
B=${1:-build}
P=mrcW
T=examples/topologies/fabric-2p-8h.json
F="$B/bin/mrc-fabric -p $P"
cap=
. tests/root/lib.sh
fab_head
on_cleanup '[ -n "$cap" ] && kill $cap 2>/dev/null'
need_tshark
ts() { ts1 "$tmp/c.pcapng" "$@"; }

$F down >/dev/null 2>&1
$F up "$T" >/dev/null || die "mrc-fabric up"
cp "$T" "$tmp/topo.json"
start_mrcd h0
start_mrcd h7

paths() { ctl h0 -j paths h7 | jq -c '[.paths[] | select(.exists) | {ev, plane, spine, tx: .tx_pkts}]'; }
sent() { jq -n --argjson b "$1" --argjson a "$2" '[$a[] as $x | $x.tx - ($b[] | select(.ev == $x.ev) | .tx)] | add'; }
probed() {
	ctl h0 probe h7 >/dev/null || return 1
	local f; for f in "$tmp"/cp0l0.pcapng "$tmp"/cp1l0.pcapng; do
		[ "$(ts1 "$f" -T fields -e frame.number | wc -l)" -gt 0 ] || return 1
	done
}
datan() { local f n=0; for f in "$tmp"/cp*.pcapng; do n=$((n + $(ts1 "$f" -Y "mrc.opcode <= 5 && mrc.src_host == 0" -T fields -e frame.number | wc -l))); done; echo $n; }
SIZE=$((16 << 20))
# h7 becomes a peer of h0 (probes do not count in tx_pkts)
ctl h0 probe h7 >/dev/null || die "mrcctl probe h7"
until_t 10 paths >/dev/null 2>&1 || die "mrcctl paths h7"

# One capture of one transfer.  dumpcap records h0's two plane NICs (its
# ports to leaf p<plane>l0) into a tmpfs; it says "Capturing on" once both
# are open.  libpcap hands packets over in blocks, and a block the kernel
# has not yet retired when dumpcap stops is lost without being counted as
# a drop: so the capture is stopped only once the file holds every data
# packet mrcctl counted (bounded), never after a fixed wait.
capture() {
	rm -f "$tmp"/c*.pcapng "$tmp"/cap*.log
	# One dumpcap per NIC: with several interfaces one dumpcap queues
	# packets between threads and drops from that queue under load.
	local nic i=0
	for nic in p0l0 p1l0; do
		ip netns exec $P-h0 dumpcap -q -i $nic -f "udp port 791" -B 64 -w "$tmp/c$nic.pcapng" 2>"$tmp/cap$nic.log" &
		cap="$cap $!"
		until_t 10 grep -q "Capturing on" "$tmp/cap$nic.log" || die "dumpcap did not start: $(cat "$tmp/cap$nic.log")"
	done
	# "Capturing on" can come before the kernel hands the NIC's packets to
	# dumpcap: probes (not data, not counted) go out on every EV until both
	# files hold one, so the transfer starts on a capture already running.
	until_t 10 probed || die "dumpcap saw no probe on both NICs in 10 s: $(cat "$tmp"/cap*.log)"
	$B/bin/mrc_bulk -S "$(sock h7)" -s $SIZE -i 77 recv >"$tmp/recv" 2>&1 &
	local rpid=$!
	before=$(paths)
	timeout 60 $B/bin/mrc_bulk -S "$(sock h0)" -s $SIZE -i 77 send 7 >"$tmp/send" 2>&1 || die "mrc_bulk send: $(cat "$tmp/send"); recv: $(cat "$tmp/recv"); paths: $(paths)"
	wait $rpid || die "mrc_bulk recv: $(cat "$tmp/recv")"
	after=$(paths)
	local want; want=$(sent "$before" "$after")
	local got=0
	until_t 20 eval 'got=$(datan); test "$got" -ge "$want"' || echo "note: the capture holds $got data packets of $want after 20 s"
	kill -INT $cap; wait $cap; cap=
	mergecap -w "$tmp/c.pcapng" "$tmp"/cp*.pcapng || die "mergecap"
	# dumpcap -q ends with "Packets received/dropped on interface 'X': R/D ..."
	cat "$tmp"/cap*.log | grep "received/dropped"
	drops=$(cat "$tmp"/cap*.log | sed -n "s/.*received\/dropped on interface '[^']*': [0-9]*\/\([0-9]*\).*/\1/p" | awk '{s += $1} END {print s + 0}')
	[ "$(cat "$tmp"/cap*.log | grep -c "received/dropped")" = 2 ] && [ "$drops" = 0 ] && [ "$got" -ge "$want" ]
}
# A capture with drops cannot be compared with mrcctl's counts, and a
# loaded machine can outrun dumpcap (it dropped 44 of 5,300 packets once
# in make check-fresh, and once lost 350 of 4,098 on one NIC without
# counting them as dropped): up to 3 tries, each a whole new transfer.  A
# try is good when dumpcap reports no drop and the files hold at least
# the data packets mrcctl counted; the per-EV checks below still fail on
# any difference, so a miscount in mrcd fails all three tries.
for try in 1 2 3; do
	capture && break
	echo "try $try: dumpcap dropped $drops packets (or did not report both NICs), or the files hold fewer data packets than mrcctl counted"
done
[ "$drops" = 0 ] && ok "dumpcap recorded both NICs and dropped nothing (try $try)" ||
	bad "dumpcap dropped packets in all 3 tries; the counts below cannot match"

total=$(ts -Y "udp.port == 791" -T fields -e frame.number | wc -l)
mrcn=$(ts -Y "mrc" -T fields -e frame.number | wc -l)
ibn=$(ts -Y "infiniband" -T fields -e frame.number | wc -l)
[ "$total" -gt 1000 ] && [ "$mrcn" = "$total" ] && [ "$ibn" = 0 ] &&
	ok "all $total datagrams on UDP 791 decode as MRC (none as InfiniBand)" ||
	bad "of $total datagrams on 791, $mrcn decode as MRC and $ibn as InfiniBand"
badcrc=$(ts -Y "mrc.hcrc.status == 0 || mrc.pcrc.status == 0 || _ws.malformed || _ws.expert.severity == error" -T fields -e frame.number | wc -l)
[ "$badcrc" = 0 ] && ok "no CRC error and no malformed packet in $total" || bad "$badcrc packets with a CRC error or malformed"
ops=$(ts -Y mrc -T fields -e mrc.opcode | sort -n | uniq -c | awk '{printf "%s:%s ", $2, $1}')
echo "opcodes (opcode:count): $ops"

# Per EV: data packets h0 -> h7 in the capture vs mrcctl's tx_pkts delta.
ts -Y "mrc.opcode <= 5 && mrc.src_host == 0" -T fields -E separator=, -e mrc.ev -e mrc.route.host \
	-e mrc.route.plane -e mrc.route.spine -e mrc.plen >"$tmp/data.csv"
cmp=$(jq -n -c --argjson b "$before" --argjson a "$after" --rawfile csv "$tmp/data.csv" '
	($csv | split("\n") | map(select(length > 0) | split(",") | map(tonumber? // -1))) as $rows
	| [$a[] as $x | ($b[] | select(.ev == $x.ev) | .tx) as $t0
	   | {ev: $x.ev, plane: $x.plane, spine: $x.spine, mrcctl: ($x.tx - $t0),
	      capture: ([$rows[] | select(.[0] == $x.ev)] | length),
	      wrong_route: ([$rows[] | select(.[0] == $x.ev and (.[1] != 7 or .[2] != $x.plane
	                     or ((.[3] // -1) != (if $x.spine < 0 then -1 else $x.spine end))))] | length)}]')
echo "per EV: $cmp"
n=$(jq '[.[] | .capture] | add' <<<"$cmp")
[ "$n" -gt 0 ] && jq -e 'all(.[]; .mrcctl == .capture)' <<<"$cmp" >/dev/null &&
	ok "per-EV data packet counts in the capture equal mrcctl paths ($n packets over $(jq length <<<"$cmp") EVs)" ||
	bad "per-EV counts differ: $cmp"
jq -e 'all(.[]; .wrong_route == 0) and ([.[] | select(.capture > 0)] | length) >= 2' <<<"$cmp" >/dev/null &&
	ok "every data packet's uSID route names h7 and its EV's plane and spine, over several EVs" ||
	bad "uSID routes disagree with mrcctl paths: $cmp"
bytes=$(awk -F, '{s += $5} END {print s + 0}' "$tmp/data.csv")
[ "$bytes" -ge $SIZE ] && ok "payload bytes in the capture ($bytes) cover the $SIZE sent" || bad "capture holds $bytes payload bytes of $SIZE"

[ $fails = 0 ] || { echo "wireshark: $fails check(s) failed"; exit 1; }
echo "wireshark: all checks passed"
