#!/bin/bash
# Integration (root): traffic classes on the wire and in the emulated
# fabric's priority band (issue 33 item 3; docs/wire.md "Traffic classes").
# On a fabric with 1000 Mbit/s links (so every port has mrc-fabric's band:
# an HTB whose class 1:10 takes DSCP 46), h0 sends 4 MiB to h7 (mrc_bulk)
# once per class while dumpcap records both of h0's plane NICs, and the
# capture is decoded by the Wireshark dissector (tools/wireshark/mrc.lua):
#   - urgent (-t urgent both ends): every data packet h0 sends and every
#     ACK h7 returns carries DSCP 46 (mrcd.conf dscp_urgent), and h0's
#     ports put them in the band: class 1:10's packet count moved by at
#     least the data packets captured;
#   - bulk: DSCP 10 (dscp_bulk) both ways, and class 1:10 did not move;
#   - default (no -t, as every QP before classes): DSCP 0 both ways;
#   - an urgent sender to a default receiver (a peer that knows nothing of
#     classes): the transfer verifies, data DSCP 46, ACKs DSCP 0;
#   - each receiver read the DSCP 46 datagrams (and only those) from its
#     urgent queue (udp datapath, docs/datapaths.md): rx_urgent moved;
#   - probes (not a QP's) are DSCP 0; nothing decodes with a CRC error;
#     mrcctl stats' tx_class counts each run's data in its class.
# Skipped (exit 77, SKIP line) without tshark.  Bounded, cleans up on exit.
set -u
B=${1:-build}
P=mrcQ
F="$B/bin/mrc-fabric -p $P"
cap=
. tests/root/lib.sh
fab_head
on_cleanup '[ -n "$cap" ] && kill $cap 2>/dev/null'
need_tshark

cat >"$tmp/topo.json" <<'EOF'
{"version": 1, "block": "fcbb:bb00::/32", "mtu": 9216, "rate_mbit": 1000,
 "generate": {"planes": 2, "leaves_per_plane": 4, "spines_per_plane": 2, "hosts_per_leaf": 2}}
EOF
$F down >/dev/null 2>&1
$F up "$tmp/topo.json" 2>/dev/null >/dev/null || die "mrc-fabric up"
start_mrcd h0
start_mrcd h7
ctl h0 probe h7 >/dev/null || die "mrcctl probe h7"

# Packets h0's two plane NICs sent in the urgent band (HTB class 1:10).
band() {
	local n=0 nic
	for nic in p0l0 p1l0; do
		n=$((n + $(ip netns exec $P-h0 tc -s class show dev $nic classid 1:10 |
			sed -n 's/.*Sent [0-9]* bytes \([0-9]*\) pkt.*/\1/p')))
	done
	echo $n
}
datan() { local f n=0; for f in "$tmp"/c*.pcapng; do n=$((n + $(ts1 "$f" -Y "mrc.opcode <= 5 && mrc.src_host == 0" -T fields -e frame.number | wc -l))); done; echo $n; }
probed() {
	ctl h0 probe h7 >/dev/null || return 1
	local f; for f in "$tmp"/cp0l0.pcapng "$tmp"/cp1l0.pcapng; do
		[ "$(ts1 "$f" -T fields -e frame.number | wc -l)" -gt 0 ] || return 1
	done
}
SIZE=$((4 << 20))
urg() { stats $1 '.datapath.rx_urgent'; }   # urgent datagrams host H read first
# run NAME SENDER_CLASS RECEIVER_CLASS WANT_DATA_DSCP WANT_ACK_DSCP
run() {
	local name=$1 sc=$2 rc=$3 wd=$4 wa=$5
	rm -f "$tmp"/c*.pcapng "$tmp"/cap*.log
	local nic
	for nic in p0l0 p1l0; do
		ip netns exec $P-h0 dumpcap -q -i $nic -f "udp port 791" -B 64 -w "$tmp/c$nic.pcapng" 2>"$tmp/cap$nic.log" &
		cap="$cap $!"
		until_t 10 grep -q "Capturing on" "$tmp/cap$nic.log" || die "dumpcap did not start: $(cat "$tmp/cap$nic.log")"
	done
	until_t 10 probed || die "dumpcap saw no probe on both NICs in 10 s"
	local b0 c0 cn=${sc:-default}; b0=$(band); c0=$(stats h0 ".engine.tx_class.$cn")
	local u07 u00; u07=$(urg h7); u00=$(urg h0)
	$B/bin/mrc_bulk -S "$(sock h7)" -s $SIZE -i 78 ${rc:+-t $rc} recv >"$tmp/recv" 2>&1 &
	local rpid=$!
	timeout 60 $B/bin/mrc_bulk -S "$(sock h0)" -s $SIZE -i 78 ${sc:+-t $sc} send 7 >"$tmp/send" 2>&1 ||
		die "$name: mrc_bulk send: $(cat "$tmp/send"); recv: $(cat "$tmp/recv")"
	wait $rpid && grep -q OK "$tmp/recv" && ok "$name: transfer of $SIZE bytes verified ($(tail -n1 "$tmp/recv"))" ||
		bad "$name: mrc_bulk recv: $(cat "$tmp/recv")"
	local b1 c1; b1=$(band); c1=$(stats h0 ".engine.tx_class.$cn")
	local du7=$(( $(urg h7) - u07 )) du0=$(( $(urg h0) - u00 ))
	# Stop once the files hold the transfer's data (bounded), never after a fixed wait.
	local got=0 want=$((SIZE / 4096))
	until_t 20 eval 'got=$(datan); test "$got" -ge "$want"' || echo "note: the capture holds $got data packets of $want after 20 s"
	kill -INT $cap; wait $cap; cap=
	mergecap -w "$tmp/c.pcapng" "$tmp"/cp*.pcapng || die "mergecap"
	local f="$tmp/c.pcapng"
	local dd ad pd nbad
	dd=$(ts1 "$f" -Y "mrc.opcode <= 5 && mrc.src_host == 0" -T fields -e ipv6.tclass.dscp | sort | uniq -c | awk '{printf "%s:%s ", $2, $1}')
	ad=$(ts1 "$f" -Y "mrc.opcode == 16 && mrc.src_host == 7" -T fields -e ipv6.tclass.dscp | sort | uniq -c | awk '{printf "%s:%s ", $2, $1}')
	pd=$(ts1 "$f" -Y "mrc.opcode >= 32 && mrc.opcode <= 33" -T fields -e ipv6.tclass.dscp | sort -u | tr '\n' ' ')
	nbad=$(ts1 "$f" -Y "mrc.hcrc.status == 0 || mrc.pcrc.status == 0 || _ws.malformed" -T fields -e frame.number | wc -l)
	echo "$name: data DSCP:count $dd; ACK DSCP:count $ad; probe DSCPs $pd; band 1:10 +$((b1 - b0)) pkts"
	[ "$got" -ge $((want / 2)) ] && [ "$dd" = "$wd:$got " ] &&
		ok "$name: all $got data packets h0 -> h7 decode as MRC with DSCP $wd" ||
		bad "$name: data packets by DSCP '$dd', want all $got with $wd"
	[ -n "$ad" ] && [ "$(echo $ad | tr ' ' '\n' | cut -d: -f1 | sort -u)" = "$wa" ] &&
		ok "$name: every ACK h7 -> h0 carries DSCP $wa" || bad "$name: ACKs by DSCP '$ad', want only $wa"
	[ -z "$pd" ] || [ "$pd" = "0 " ] && ok "$name: probes carry DSCP 0" || bad "$name: probe DSCPs '$pd'"
	[ "$nbad" = 0 ] && ok "$name: no CRC error or malformed packet" || bad "$name: $nbad bad packets"
	[ $((c1 - c0)) -ge "$got" ] && ok "$name: mrcctl stats counts them as $cn (tx_class.$cn +$((c1 - c0)))" ||
		bad "$name: tx_class.$cn moved by $((c1 - c0)), fewer than the $got captured"
	# Each receiver's urgent queue (docs/datapaths.md "udp"): DSCP 46
	# datagrams are read from it, ahead of the plane's backlog; nothing else
	# enters it.  At least SIZE / 9216 data packets carried the transfer.
	if [ "$wd" = 46 ]; then
		[ "$du7" -ge $((SIZE / 9216)) ] && ok "$name: h7 read the urgent data from its urgent queue (rx_urgent +$du7)" ||
			bad "$name: h7's rx_urgent moved by $du7, fewer than $((SIZE / 9216))"
	else
		[ "$du7" = 0 ] && ok "$name: h7's urgent queue stayed empty (rx_urgent +0)" || bad "$name: h7's rx_urgent +$du7 without urgent data"
	fi
	if [ "$wa" = 46 ]; then
		[ "$du0" -gt 0 ] && ok "$name: h0 read the urgent ACKs from its urgent queue (rx_urgent +$du0)" || bad "$name: h0's rx_urgent +0"
	else
		[ "$du0" = 0 ] && ok "$name: h0's urgent queue stayed empty (rx_urgent +0)" || bad "$name: h0's rx_urgent +$du0 without urgent ACKs"
	fi
	if [ "$wd" = 46 ]; then
		[ $((b1 - b0)) -ge "$got" ] && ok "$name: the fabric's urgent band took them (class 1:10 +$((b1 - b0)) >= $got)" ||
			bad "$name: class 1:10 moved by $((b1 - b0)), fewer than the $got urgent data packets"
	else
		[ $((b1 - b0)) = 0 ] && ok "$name: nothing entered the urgent band (class 1:10 +0)" ||
			bad "$name: class 1:10 moved by $((b1 - b0)) without urgent traffic"
	fi
}
run urgent urgent urgent 46 46
run bulk bulk bulk 10 10
run default "" "" 0 0
run "urgent to a default peer" urgent "" 46 0

[ $fails = 0 ] || { echo "tclass: $fails check(s) failed"; exit 1; }
echo "tclass: all checks passed"
