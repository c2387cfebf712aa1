#!/bin/bash
# Integration (root): mrcd on every host of a 2-plane SRv6 fabric in
# network namespaces, applications on libmrc (examples/).
#   - 1 GiB WRITE h0 -> h7 verified by hash (mrc_bulk) under: no fault, 1%
#     silent loss on a spine link, a spine silently blackholed mid-transfer,
#     a plane NIC down mid-transfer, trimming on a spine link
#   - an 8-host all-to-all (mrc_alltoall) with a spine failed during it
#   - the receiving client killed mid-transfer: the sender gets a clean
#     error promptly and h7's daemon frees the QP
#   - the receiving daemon killed mid-transfer: both clients get an error
#     promptly; after a restart a new transfer succeeds
#   - SIGHUP mid-transfer with a topology of the same shape (one spine link
#     removed): applied without dropping the QP, the link's path becomes
#     DENIED; with a topology of another shape: refused, nothing dropped
# Faults are injected once the receiver's daemon has placed 20% of the
# bytes (polled through mrcctl), so they land mid-transfer; every fault
# command's exit status is checked, and so is its effect on h0's paths to
# h7 (mrcctl paths -j: state, lost and trimmed packets of the path through
# the faulty part).  Bounded in time; cleans up on every exit.
# MRC_DATAPATH / MRC_DATAPATH_ARGS pick the daemons' datapath
# (tests/root/mrcd_af_xdp.sh, mrcd_dpdk.sh).  MRC_MRCD_BYTES (default 1G)
# sizes the faulted transfers; the kill and restart transfers are half of
# it, the SIGHUP ones a quarter, the all-to-all slots 1/128.  Under
# MRC_ROOT_QUICK=1 (make check-fresh's short run: the same steps and
# assertions) the faulted transfers are 256M and the slots 2M; the kill,
# restart and SIGHUP ones keep their sizes.  Every wait is bounded by the
# time its bytes take at MRC_MRCD_FLOOR_MBIT (default 50 Mbit/s: below
# that the datapath is too slow to pass) plus 30 s of setup, not by a
# fixed number.
set -u
B=${1:-build}
P=${MRC_MRCD_PREFIX:-mrcD}
T=examples/topologies/fabric-2p-8h.json
F="$B/bin/mrc-fabric -p $P"
SIZE=${MRC_MRCD_BYTES:-1G}
# The kill, restart and SIGHUP transfers must outlast what is done to them
# mid-way (a 128M one had ended before its receiver was killed): the
# short run shrinks only the faulted transfers and the all-to-all.
LONG=$SIZE
[ "${MRC_ROOT_QUICK:-0}" = 1 ] && SIZE=${MRC_MRCD_BYTES:-256M}
FLOOR=${MRC_MRCD_FLOOR_MBIT:-50}
tmp=$(mktemp -d)
declare -A dpid
fails=0
cleanup() {
	for p in "${dpid[@]}"; do kill "$p" 2>/dev/null; done
	pkill -f "mrc_bulk -S $tmp" 2>/dev/null
	pkill -f "mrc_alltoall -S $tmp" 2>/dev/null
	$F down >/dev/null 2>&1
	rm -rf "$tmp"
}
# A signal ends the script (its EXIT trap cleans up); a trap that only
# cleaned up let it run on after TERM, holding the root lock.
trap cleanup EXIT
trap 'exit 143' INT TERM
. tests/root/lib.sh
placed() { ctl h7 -j status 2>/dev/null | jq -r '.totals.bytes_placed // 0'; }
# past PCT BASE TOTAL: h7 placed at least PCT% of TOTAL bytes since BASE.
past() { [ $(( $(placed) - $2 )) -ge $(( $3 / 100 * $1 )) ]; }
bytes_of() { numfmt --from=iec "$1"; }
# bound BYTES: seconds BYTES may take at FLOOR Mbit/s, plus 30 s.
bound() { echo $(( $1 * 8 / (FLOOR * 1000000) + 30 )); }
TOTAL=$(bytes_of "$SIZE")
HALF=$(($(bytes_of "$LONG") / 2)); QUARTER=$(($(bytes_of "$LONG") / 4)); SLOT=$((TOTAL / 128))
echo "mrcd: datapath ${MRC_DATAPATH:-udp}: transfers of $SIZE ($TOTAL bytes), kill/restart $HALF, SIGHUP $QUARTER, all-to-all slots $SLOT; bounds at $FLOOR Mbit/s + 30 s (a $SIZE transfer: $(bound $TOTAL) s)"

$F down >/dev/null 2>&1
$F up "$T" >/dev/null || { echo "mrc-fabric up failed"; exit 1; }
# The daemons read the fabric's explicit form, so a test can edit it.
jq '.topology' /run/mrc-fabric/$P/state.json >"$tmp/topo.json"
for h in h0 h1 h2 h3 h4 h5 h6 h7; do start_mrcd $h; done

# paths_snap: h0's paths to h7 as {"PLANE/SPINE": path} ({} before h7 is
# a peer).
paths_snap() { paths_map h0 h7; }
# effect (tests/root/lib.sh) reads h0's paths to h7 through paths_snap.
# inject NAME FAULT...: runs mrc-fabric's fault command, checks its status.
inject() {
	local name=$1; shift
	$F "$@" >/dev/null || { bad "$name: 'mrc-fabric $*' failed (exit $?)"; return 1; }
}
# recv_ready: the receiver is listening (it prints this after mrc_listen).
recv_ready() { grep -qs "waiting for a sender" "$tmp/r"; }

# bulk NAME FAULT CHECK: one verified transfer h0 -> h7 with FAULT at 20%;
# CHECK (jq, see effect) proves the fault happened.
sid=7100
bulk() {
	local name=$1 fault=$2 check=${3:-} total base t0 rc_r rc_s before
	sid=$((sid + 1))
	total=$TOTAL; base=$(placed); before=$(paths_snap)
	local lim; lim=$(bound "$total")
	timeout $((lim + 30)) $B/bin/mrc_bulk -S "$(sock h7)" -s "$total" -i $sid recv >"$tmp/r" 2>&1 &
	local r=$!
	until_t 10 recv_ready || bad "$name: receiver never listened: $(tail -n2 "$tmp/r")"
	t0=$(date +%s%N)
	timeout "$lim" $B/bin/mrc_bulk -S "$(sock h0)" -s "$total" -i $sid send 7 >"$tmp/s" 2>&1 &
	local s=$!
	local injected=0
	if [ -n "$fault" ]; then
		if until_t "$lim" past 20 "$base" "$total"; then
			# shellcheck disable=SC2086
			inject "$name" $fault && injected=1
		else
			bad "$name: never reached 20%"
		fi
	fi
	wait $s; rc_s=$?
	# The receiver is bounded too (timeout above): this wait ends.
	wait $r; rc_r=$?
	local ms=$(( ($(date +%s%N) - t0) / 1000000 ))
	if [ $rc_s = 0 ] && [ $rc_r = 0 ]; then
		ok "$name: $SIZE verified in $ms ms ($(tail -n1 "$tmp/r"))"
	else
		bad "$name: sender exit $rc_s, receiver exit $rc_r (after $ms ms, bound $lim s)"
		tail -n3 "$tmp/s" "$tmp/r"
	fi
	# What the datapaths dropped themselves (full rings): retransmissions.
	echo "     datapath drops: h0 $(ctl h0 -j stats | jq -c '.datapath | {tx_eagain, rx_dropped}'), h7 $(ctl h7 -j stats | jq -c '.datapath | {tx_eagain, rx_dropped}')"
	[ $injected = 1 ] && effect "$name" "$before" "$check"
	$F restore >/dev/null || bad "$name: mrc-fabric restore failed"
}
# h0 (leaf 0) reaches h7 (leaf 3) through plane P, spine S: path "P/S".
bulk "no fault" ""
bulk "1% silent loss on spine link p0s0-p0l3" "drop p0s0-p0l3 1" \
	'.a["0/0"].lost > (.b["0/0"].lost // 0)'
bulk "spine p0s1 blackholed mid-transfer" "fail p0s1 --silent" \
	'.a["0/1"].state == "ASSUMED_BAD" and .a["0/1"].lost > (.b["0/1"].lost // 0)'
bulk "plane-1 NIC of h0 down mid-transfer" "fail h0-p1l0" \
	'.a["1/0"].state == "DENIED" and .a["1/1"].state == "DENIED" and .a["0/0"].state != "DENIED"'
bulk "trimming 5% on spine link p1s0-p1l3" "trim p1s0-p1l3 5" \
	'.a["1/0"].trims > (.b["1/0"].trims // 0)'

# All-to-all among the 8 hosts with spine p1s0 failed (loud) during it
# (h7 placing 10% of its share proves the exchange is under way).
a2a=()
for h in h0 h1 h2 h3 h4 h5 h6 h7; do
	timeout $(bound $((7 * 3 * SLOT * 8))) $B/bin/mrc_alltoall -S "$(sock $h)" -s "$SLOT" -r 3 >"$tmp/a2a-$h" 2>&1 &
	a2a+=($!)
done
base=$(placed); before=$(paths_snap); injected=0
if until_t "$(bound $((7 * 3 * SLOT * 8)))" past 10 "$base" $((7 * 3 * SLOT)); then
	inject "all-to-all" fail p1s0 && injected=1
else
	bad "all-to-all never progressed"
fi
a2a_fail=0
for j in "${a2a[@]}"; do wait "$j" || a2a_fail=$((a2a_fail + 1)); done
[ $a2a_fail = 0 ] && ok "8-host all-to-all (3 rounds x $SLOT bytes per pair) with spine p1s0 failed: every slot verified ($(grep -ho "[0-9.]* s," "$tmp"/a2a-h0))" \
	|| { bad "all-to-all: $a2a_fail host(s) failed"; tail -n2 "$tmp"/a2a-h*; }
[ $injected = 1 ] && effect "all-to-all, spine p1s0 failed" "$before" \
	'.a["1/0"].state != "GOOD" or .a["1/0"].lost > (.b["1/0"].lost // 0)'
$F restore >/dev/null || bad "all-to-all: mrc-fabric restore failed"

# The receiving client dies mid-transfer: the sender learns at once.
sid=$((sid + 1)); total=$HALF; base=$(placed)
$B/bin/mrc_bulk -S "$(sock h7)" -s $total -i $sid recv >"$tmp/r" 2>&1 &
r=$!
until_t 10 recv_ready || bad "kill test: receiver never listened"
timeout "$(bound $total)" $B/bin/mrc_bulk -S "$(sock h0)" -s $total -i $sid send 7 >"$tmp/s" 2>&1 &
s=$!
until_t "$(bound $total)" past 20 "$base" "$total" || bad "kill test never reached 20%"
# mrcctl qps per EV, on this live QP: the EVs it sprayed over add up to its
# packets, each on a real plane and spine; the text view lists them.
q=$(ctl h0 -j qps | jq -c '[.qps[] | select(.peer == "h7" and .state == "RTS")] | first')
jq -e '(.evs | length) >= 2 and ([.evs[].tx_pkts] | add) == .tx_pkts
	and all(.evs[]; .plane >= 0 and .spine >= 0 and .tx_pkts >= .lost_pkts)
	and (.spurious | type) == "number"' <<<"$q" >/dev/null &&
	ok "mrcctl qps: h0's QP to h7 used $(jq '.evs | length' <<<"$q") EVs, their packets add up to its $(jq .tx_pkts <<<"$q")" ||
	bad "mrcctl qps per EV: $q"
ctl h0 -j stats | jq -e '.engine | [.suspect_probes, .suspect_cleared, .suspect_retired] |
	all(type == "number")' >/dev/null && ok "mrcctl stats: the suspect-path counters" ||
	bad "mrcctl stats: no suspect_* counters"
ctl h0 qps | grep -q "^QPN *EV *PLANE *SPINE *TX_PKTS *SHARE *LOST" &&
	ok "mrcctl qps prints the per-EV table" || bad "mrcctl qps: no per-EV table: $(ctl h0 qps)"
kill -9 $r || bad "receiver killed: kill failed"; t0=$(date +%s%N)
wait $s; rc=$?; ms=$(( ($(date +%s%N) - t0) / 1000000 ))
if [ $rc != 0 ] && [ $ms -lt 5000 ]; then
	ok "receiver killed: sender failed cleanly after $ms ms ($(tail -n1 "$tmp/s"))"
else
	bad "receiver killed: sender exit $rc after $ms ms: $(tail -n1 "$tmp/s")"
fi
noqps() { [ "$(ctl h7 -j status | jq -r .qps)" = 0 ]; }
until_t 5 noqps && ok "h7's daemon freed the dead client's QP" || bad "h7 still has $(ctl h7 -j status | jq -r .qps) QPs"

# The receiving daemon dies mid-transfer, then comes back.
sid=$((sid + 1)); base=$(placed)
timeout "$(bound $total)" $B/bin/mrc_bulk -S "$(sock h7)" -s $total -i $sid recv >"$tmp/r" 2>&1 &
r=$!
until_t 10 recv_ready || bad "restart test: receiver never listened"
timeout "$(bound $total)" $B/bin/mrc_bulk -S "$(sock h0)" -s $total -i $sid send 7 >"$tmp/s" 2>&1 &
s=$!
until_t "$(bound $total)" past 20 "$base" "$total" || bad "restart test never reached 20%"
kill -9 "${dpid[h7]}" || bad "daemon killed: kill failed"; t0=$(date +%s%N)
wait $r; rc_r=$?; ms_r=$(( ($(date +%s%N) - t0) / 1000000 ))
wait $s; rc_s=$?; ms_s=$(( ($(date +%s%N) - t0) / 1000000 ))
[ $rc_r != 0 ] && [ $ms_r -lt 2000 ] && ok "daemon killed: its client got an error after $ms_r ms" \
	|| bad "daemon killed: client exit $rc_r after $ms_r ms"
[ $rc_s != 0 ] && [ $ms_s -lt 15000 ] && ok "daemon killed: the remote sender failed after $ms_s ms ($(tail -n1 "$tmp/s"))" \
	|| bad "daemon killed: sender exit $rc_s after $ms_s ms"
rm -f "$tmp/h7/mrcctl.sock"
start_mrcd h7
bulk "after the daemon restart" ""

# SIGHUP with a new topology while a transfer runs.
reload_during() {
	local name=$1 file=$2 total base r s
	sid=$((sid + 1)); total=$QUARTER; base=$(placed)
	timeout "$(( $(bound $total) + 30 ))" $B/bin/mrc_bulk -S "$(sock h7)" -s $total -i $sid recv >"$tmp/r" 2>&1 &
	r=$!
	until_t 10 recv_ready || bad "$name: receiver never listened"
	timeout "$(bound $total)" $B/bin/mrc_bulk -S "$(sock h0)" -s $total -i $sid send 7 >"$tmp/s" 2>&1 &
	s=$!
	until_t "$(bound $total)" past 20 "$base" "$total" || bad "$name: never reached 20%"
	cp "$file" "$tmp/topo.json"
	kill -HUP "${dpid[h0]}" || bad "$name: SIGHUP not delivered"
	wait $s; local rc_s=$?
	wait $r; local rc_r=$?
	[ $rc_s = 0 ] && [ $rc_r = 0 ] && ok "$name: the transfer kept its QP and verified" \
		|| bad "$name: sender exit $rc_s receiver exit $rc_r"
}
cp "$tmp/topo.json" "$tmp/orig.json"
jq '.links |= map(select((.a == "p0s1" and .b == "p0l3") or (.a == "p0l3" and .b == "p0s1") | not))' \
	"$tmp/orig.json" >"$tmp/cut.json"
reload_during "SIGHUP, spine link p0s1-p0l3 removed from the topology" "$tmp/cut.json"
st=$(ctl h0 -j paths h7 | jq -r '.paths[] | select(.plane == 0 and .spine == 1) | .state')
[ "$st" = DENIED ] && ok "after the reload the path through the removed link is DENIED" \
	|| bad "after the reload: path plane 0 spine 1 is '$st'; log: $(tail -n2 "$tmp/h0.log")"
# A valid topology with twice the hosts (and more spines): another shape.
cp examples/topologies/fabric-2p-16h.json "$tmp/shape.json"
reload_during "SIGHUP, topology of another shape" "$tmp/shape.json"
grep -q "topology kept" "$tmp/h0.log" && ok "the other shape was refused: $(grep -o 'topology kept.*' "$tmp/h0.log" | tail -n1)" \
	|| bad "no refusal logged for the other shape"

[ $fails = 0 ] || { echo "mrcd: $fails check(s) failed"; exit 1; }
echo "mrcd: all checks passed"
