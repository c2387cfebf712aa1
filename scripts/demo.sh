#!/bin/bash
# The main job on its built-in default: bring up a 2-plane SRv6 fabric in
# network namespaces (8 hosts, 4 leaves and 2 spines per plane, 400 Mbit/s
# links), start mrcd on every host, move 256 MiB from h0 to h7 with the
# libmrc bulk example (sprayed over every plane and spine), blackhole a
# spine link silently at 25% and take h0's plane-1 NIC down at 60%, then
# show goodput over time, packets per plane (mrcctl planes), how the
# daemon saw the failures (mrcctl events), the end-to-end hash check, and
# tear everything down.  DATAPATH (make demo DATAPATH=af_xdp; default udp)
# and DATAPATH_ARGS pick mrcd's datapath (docs/datapaths.md).
set -u
B=${1:-build}
TOPO=${MRC_DEMO_TOPO:-examples/topologies/demo.json}
SIZE=${MRC_DEMO_BYTES:-256M}
P=mrcdemo
DP=${DATAPATH:-udp}
F="$B/bin/mrc-fabric -p $P"
if [ "$(id -u)" != 0 ]; then
	echo "make demo: needs root (it builds network namespaces); run it as root" >&2
	exit 1
fi
tmp=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	$F down >/dev/null 2>&1
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM
die() { echo "demo: $*" >&2; exit 1; }
ctl() { local h=$1; shift; $B/bin/mrcctl -s "$tmp/$h/mrcctl.sock" "$@"; }
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }

$F down >/dev/null 2>&1
echo "== fabric: $TOPO"
$F up "$TOPO" || die "mrc-fabric up failed"
echo "== paths h0 -> h7 (one uSID destination address per plane and spine)"
$F path h0 h7
echo "== starting mrcd on every host (datapath $DP, with a cluster key made for this demo)"
$B/bin/mrcd --genkey "$tmp/cluster.key" || die "mrcd --genkey failed"
for h in h0 h1 h2 h3 h4 h5 h6 h7; do
	mkdir -p "$tmp/$h"
	ip netns exec $P-$h $B/bin/mrcd --topology "$TOPO" --host $h --key_file "$tmp/cluster.key" \
		--socket "$tmp/$h/mrcd.sock" --log_level warning --datapath "$DP" \
		${DATAPATH_ARGS:+--datapath_args "$DATAPATH_ARGS"} 2>"$tmp/$h.log" &
	pids+=($!)
done
for h in h0 h1 h2 h3 h4 h5 h6 h7; do
	for i in $(seq 100); do [ -S "$tmp/$h/mrcctl.sock" ] && break; sleep 0.05; done
	[ -S "$tmp/$h/mrcctl.sock" ] || die "mrcd on $h did not start: $(tail -n3 "$tmp/$h.log")"
done
echo "   mrcctl status on h0: datapath $(ctl h0 -j status | jq -r .datapath)"
total=$(numfmt --from=iec "$SIZE")
echo "== $SIZE h0 -> h7 with mrc_bulk over libmrc; spine link p0s1-p0l3 blackholed"
echo "   silently at 25%, h0's plane-1 NIC down at 60%"
$B/bin/mrc_bulk -S "$tmp/h7/mrcd.sock" -s "$SIZE" recv >"$tmp/recv" 2>&1 &
rpid=$!; pids+=($rpid)
$B/bin/mrc_bulk -S "$tmp/h0/mrcd.sock" -s "$SIZE" send 7 >"$tmp/send" 2>&1 &
spid=$!; pids+=($spid)
# Sample h7's placed bytes every 250 ms: the goodput the application sees.
t0=$(now_ms); last=0; series=""; faults=0
while kill -0 $spid 2>/dev/null; do
	sleep 0.25
	placed=$(ctl h7 -j status 2>/dev/null | jq -r '.totals.bytes_placed // 0')
	[ -n "$placed" ] || placed=$last
	series="$series $(( (placed - last) * 8 / 250000 ))"
	last=$placed
	if [ $faults = 0 ] && [ $placed -ge $((total / 4)) ]; then
		t_fault=$(date -u +%Y-%m-%dT%H:%M:%S.%6NZ)
		$F fail p0s1-p0l3 --silent >/dev/null; faults=1
		series="$series [blackhole]"
	elif [ $faults = 1 ] && [ $placed -ge $((total * 6 / 10)) ]; then
		$F fail h0-p1l0 >/dev/null; faults=2
		series="$series [NIC-down]"
	fi
	[ $(( $(now_ms) - t0 )) -lt 120000 ] || die "transfer did not finish in 120 s"
done
wait $spid; rc_s=$?
wait $rpid; rc_r=$?
echo "== goodput at h7 every 250 ms (Mbit/s):"
echo "  $series" | fold -s -w 78
echo "== sender:   $(tail -n1 "$tmp/send")"
echo "== receiver: $(tail -n1 "$tmp/recv")"
echo "== data packets h0 sent per plane (mrcctl planes on h0):"
ctl h0 -j planes | jq -r '.planes[] | "   plane \(.plane) NIC \(.nic): link \(.link), \(.tx_pkts) packets, \(.lost) lost; paths GOOD \(.evs.GOOD) ASSUMED_BAD \(.evs.ASSUMED_BAD) DENIED \(.evs.DENIED)"'
echo "== how h0's daemon saw the failures (mrcctl events, from the blackhole on):"
ctl h0 events -n 500 | awk -v t="${t_fault:-0}" '$1 >= t' | grep -E "ASSUMED_BAD|DENIED|plane" | head -12
echo "== paths h0 -> h7 now (mrcctl paths h7):"
ctl h0 paths h7
echo "== tearing down"
[ $rc_s = 0 ] && [ $rc_r = 0 ] || die "transfer failed (sender $rc_s, receiver $rc_r)"
echo "== every byte arrived (hash checked end to end)"
