#!/bin/bash
# Traffic classes (issue 33 item 3): urgent small-message latency while a
# bulk transfer runs, on the emulated fabric with its priority band
# (mrc-fabric up: HTB, DSCP 46 first).  mrcd on h0 and h7 with the default
# classes (dscp_urgent 46, dscp_bulk 10, bulk_min_pct 10).  Per rep, side
# by side:
#   idle      mrc_pingpong -t urgent h0 <-> h7, nothing else: its p99;
#   alone     mrc_bulk -t bulk of BULK bytes h0 -> h7: its MB/s;
#   classes   the same bulk, and the urgent ping-pong started once 5 % of
#             it has landed: the ping-pong's p99, the bulk's MB/s;
#   noclass   the same with both QPs in the default class (DSCP 0, one
#             band): what the classes are measured against.
# The targets: classes p99 <= 1.1 x idle p99, classes bulk >= 80 % of what
# the urgent traffic leaves (the alone MB/s less the urgent bytes, which
# at MSG bytes a round trip are nothing).  Medians over REPS reps.  Raw
# lines in bench/results/raw/tclass.jsonl, a table on stdout.
# Usage (root): bench/fabric/tclass.sh [BUILD]; env MRC_BENCH_REPS (5),
# MRC_BENCH_RATE (Mbit/s per link, 500), MRC_BENCH_BULK (256M),
# MRC_BENCH_PINGS (500: few enough to end inside the bulk, which the
# "inside" column checks), MRC_BENCH_MSG (64).  The ping-pong sleeps on
# its completion channel (-w) rather than spinning: a spinning client and
# server take two cores from mrcd on a small machine.
# A/B: MRC_BENCH_BASE=DIR (a baseline build, DIR/bin) runs each rep on
# both builds, alternated (the order flips every rep), mrcd restarted on
# h0 and h7 with each build's binaries; lines carry "build" (base, this)
# and a table per build follows.  noclass runs only without a base
# (MRC_BENCH_NOCLASS=1 forces it).  MRC_BENCH_TRACE=DIR: mrcd and the
# ping-pong record their stages (MRC_TRACE, docs/client.md) into
# DIR/<build>, written when mrcd stops (bench/trace_urgent.py reads them).
# Each line also has mrcd's mean run-queue wait per run on h0 and h7
# during the classes ping-pong (/proc/PID/schedstat): the time a woken
# mrcd waited for a CPU (mrcd.conf sched_slice_us, docs/step.md), and
# the packets the leaf ports to h7 sent from their urgent and other
# bands meanwhile (tc class counters: the band in use).
set -u
B=${1:-build}
P=${MRC_BENCH_PREFIX:-mrcK}
REPS=${MRC_BENCH_REPS:-5}
RATE=${MRC_BENCH_RATE:-500}
BULK=${MRC_BENCH_BULK:-256M}
N=${MRC_BENCH_PINGS:-500}
MSG=${MRC_BENCH_MSG:-64}
RES=${MRC_BENCH_RESULTS:-bench/results}
BASE=${MRC_BENCH_BASE:-}
OUTN=${MRC_BENCH_OUT:-$([ -n "$BASE" ] && echo tclass-ab || echo tclass)}
RAW="$RES/raw/$OUTN.jsonl"
NOCLASS=${MRC_BENCH_NOCLASS:-$([ -n "$BASE" ] && echo 0 || echo 1)}
TRACE=${MRC_BENCH_TRACE:-}
THIS=$B
F="$B/bin/mrc-fabric -p $P"
[ "$(id -u)" = 0 ] || { echo "bench/fabric/tclass: needs root (network namespaces); skipped" >&2; exit 0; }
bgp=
. tests/root/lib.sh
fab_head
on_cleanup 'for p in $bgp; do kill "$p" 2>/dev/null; done'
mkdir -p "$RES/raw"
: >"$RAW"
cat >"$tmp/topo.json" <<EOF
{"version": 1, "block": "fcbb:bb00::/32", "mtu": 9216, "rate_mbit": $RATE,
 "generate": {"planes": 2, "leaves_per_plane": 4, "spines_per_plane": 2, "hosts_per_leaf": 2}}
EOF
$F down >/dev/null 2>&1
$F up "$tmp/topo.json" >/dev/null 2>&1 || { echo "mrc-fabric up failed"; exit 1; }
# daemons BUILD NAME: mrcd on h0 and h7 from BUILD (restarted, and with
# MRC_TRACE into $TRACE/NAME when tracing); B is BUILD from then on.
daemons() {
	local h
	for h in h0 h7; do
		[ -n "${dpid[$h]:-}" ] && { kill "${dpid[$h]}"; wait "${dpid[$h]}" 2>/dev/null; }
		rm -f "$tmp/$h/mrcctl.sock" "$(sock $h)"
	done
	B=$1
	[ -n "$TRACE" ] && { mkdir -p "$TRACE/$2"; export MRC_TRACE="$TRACE/$2"; }
	start_mrcd h0
	start_mrcd h7
	unset MRC_TRACE
	until_t 30 eval 'ctl h0 probe h7 >/dev/null 2>&1' || echo "note: h0 could not probe h7 in 30 s"
}
BULK_B=$(numfmt --from=iec "$BULK")
sid=9000

# ping CLASS OUT: the ping-pong, client on h0; prints its p99 (us).
ping() {
	local t=$1 out=$2
	sid=$((sid + 1))
	local tr=; [ -n "$TRACE" ] && tr=$MRC_TRACE_NOW
	MRC_TRACE=$tr $B/bin/mrc_pingpong -S "$(sock h7)" -s $MSG -n $N -i $sid -w ${t:+-t $t} server >"$out.srv" 2>&1 &
	local sp=$!
	MRC_TRACE=$tr timeout 120 $B/bin/mrc_pingpong -S "$(sock h0)" -s $MSG -n $N -i $sid -w ${t:+-t $t} client 7 >"$out" 2>&1
	wait $sp
	sed -n 's/.* p99 \([0-9.]*\) us.*/\1/p' "$out"
}
# bulk_bg CLASS OUT: starts the bulk transfer h0 -> h7 (bpid: sender,
# brpid: receiver; wait for those only, never a bare wait: mrcd runs in
# the background too).
bulk_bg() {
	local t=$1 out=$2
	sid=$((sid + 1))
	$B/bin/mrc_bulk -S "$(sock h7)" -s $BULK -i $sid ${t:+-t $t} recv >"$out.recv" 2>&1 &
	brpid=$!
	bgp="$bgp $brpid"
	timeout 300 $B/bin/mrc_bulk -S "$(sock h0)" -s $BULK -i $sid ${t:+-t $t} send 7 >"$out" 2>&1 &
	bpid=$!
	bgp="$bgp $bpid"
}
# schedstat H: mrcd's loop thread on H, "ran_ns waited_ns runs" (the
# scheduler's own count: time on the CPU, time runnable on a run queue).
schedstat() { cat "/proc/${dpid[$1]}/schedstat" 2>/dev/null || echo "0 0 0"; }
# waited A B: mean run-queue wait per run (us) between two schedstat
# readings: how long mrcd, woken, waited for a CPU.
waited() { echo "$1 $2" | awk '{ r = $6 - $3; printf "%.1f", (r > 0 ? ($5 - $2) / r / 1000 : 0) }'; }
# band: packets the priority band's two classes sent on the leaf ports
# to h7 (both planes, since the fabric came up): "urgent,other", so a
# rep's delta shows the band in use where the bulk queues.
band() {
	local pl u=0 o=0 x
	for pl in 0 1; do
		x=$(ip netns exec $P-p${pl}l3 tc -s class show dev h7 2>/dev/null |
			awk '/class htb 1:10 /{c=10} /class htb 1:20 /{c=20} /Sent/{if (c) print c, $4; c=0}')
		u=$((u + $(echo "$x" | awk '$1 == 10 {print $2}' | head -1) + 0))
		o=$((o + $(echo "$x" | awk '$1 == 20 {print $2}' | head -1) + 0))
	done
	echo "$u,$o"
}
mbs() { sed -n 's/.* \([0-9.]*\) MB\/s.*/\1/p' "$1"; }
placed() { ctl h7 -j status 2>/dev/null | jq -r '.totals.bytes_placed // 0'; }

# rep_build R NAME: one rep on the build B is now.
rep_build() {
	local r=$1 name=$2 c t bt p0 p99 over wq=null,null bd=null,null
	MRC_TRACE_NOW=${TRACE:+$TRACE/$name}
	idle=$(ping urgent "$tmp/idle")
	bulk_bg bulk "$tmp/alone"; wait $bpid $brpid
	alone=$(mbs "$tmp/alone")
	p99_noclass=; mb_noclass=; over_noclass=null
	for c in classes noclass; do
		[ $c = noclass ] && [ "$NOCLASS" = 0 ] && continue
		t=; bt=; [ $c = classes ] && t=urgent && bt=bulk
		p0=$(placed)
		bulk_bg "$bt" "$tmp/b$c"
		until_t 60 eval '[ $(( $(placed) - p0 )) -ge $((BULK_B / 20)) ]' || echo "note: bulk did not reach 5 % in 60 s"
		local s0=$(schedstat h0) s7=$(schedstat h7) b0=$(band)
		p99=$(ping "$t" "$tmp/p$c")
		[ $c = classes ] && wq="$(waited "$s0" "$(schedstat h0)"),$(waited "$s7" "$(schedstat h7)")" &&
			bd=$(echo "$b0 $(band)" | awk -F'[ ,]' '{print $3 - $1 "," $4 - $2}')
		kill -0 $bpid 2>/dev/null && over=1 || over=0   # the ping-pong ended inside the bulk
		wait $bpid $brpid
		eval "p99_$c=\$p99; mb_$c=\$(mbs \$tmp/b$c); over_$c=\$over"
	done
	# The mechanisms' counters (null on a build without them): urgent
	# datagrams read first, ring polls run from a receive turn, urgent
	# services inside a bulk turn (urgent_turn_us) and the posts and
	# datagrams they took.
	local ru tp ut
	ru="$(stats h0 '.datapath.rx_urgent // null'),$(stats h7 '.datapath.rx_urgent // null')"
	tp="$(stats h0 '.rings.rx_turn_polls // null'),$(stats h7 '.rings.rx_turn_polls // null')"
	ut="$(stats h0 '.rings | [.urgent_turns, .urgent_posts, .urgent_rx]' | tr -d ' \n'),$(stats h7 '.rings | [.urgent_turns, .urgent_posts, .urgent_rx]' | tr -d ' \n')"
	line=$(printf '{"rep":%d,"build":"%s","rx_urgent_h0_h7":[%s],"rx_turn_polls_h0_h7":[%s],"urgent_turns_posts_rx_h0_h7":[%s],"mrcd_rq_wait_us_h0_h7":[%s],"band_pkts_urgent_other":[%s],"rate_mbit":%d,"bulk_bytes":%d,"msg":%d,"pings":%d,"load1":%s,"idle_p99_us":%s,"alone_mb_s":%s,"classes_p99_us":%s,"classes_mb_s":%s,"classes_overlap":%s,"noclass_p99_us":%s,"noclass_mb_s":%s,"noclass_overlap":%s}' \
		"$r" "$name" "$ru" "$tp" "$ut" "$wq" "$bd" "$RATE" "$BULK_B" "$MSG" "$N" "$(cut -d' ' -f1 /proc/loadavg)" "${idle:-null}" "${alone:-null}" "${p99_classes:-null}" "${mb_classes:-null}" "$over_classes" \
		"${p99_noclass:-null}" "${mb_noclass:-null}" "$over_noclass")
	echo "$line" | tee -a "$RAW"
}

if [ -z "$BASE" ]; then
	daemons "$THIS" this
	for r in $(seq 1 "$REPS"); do rep_build "$r" this; done
else
	for r in $(seq 1 "$REPS"); do
		order="base this"; [ $((r % 2)) = 0 ] && order="this base"
		for name in $order; do
			if [ $name = base ]; then daemons "$BASE" base; else daemons "$THIS" this; fi
			rep_build "$r" $name
		done
	done
fi
B=$THIS

{
echo "# Traffic classes: urgent p99 during a bulk transfer (bench/fabric/tclass.sh)"
echo
echo "\`${BASE:+MRC_BENCH_BASE=$BASE }bench/fabric/tclass.sh $B\` (or \`bench/fabric/run.sh $B tclass\`), $(date -u +%F), $(nproc) CPUs, load average at the end $(cut -d' ' -f1-3 /proc/loadavg) (each rep's load1 in the raw lines)."
echo
jq -s -r '
	def med: sort | if length == 0 then null else .[(length - 1) / 2 | floor] end;
	def r2: . * 100 | round / 100;
	def mmm: map(select(. != null)) | "\(med | r2) [\(min | r2), \(max | r2)]";
	group_by(.build)[] | . as $g |
	"build \(.[0].build): medians [min, max] over \(length) reps (\(.[0].rate_mbit) Mbit/s links, \(.[0].bulk_bytes / 1048576) MiB bulk, \(.[0].pings) round trips of \(.[0].msg) B; load1 \(map(.load1) | mmm)):",
	"| contender | urgent p99 (us) | p99 / idle (per rep) | bulk MB/s | bulk / alone (per rep) | ping-pong inside bulk |",
	"|---|---|---|---|---|---|",
	"| idle (urgent, no load) | \(map(.idle_p99_us) | mmm) | 1.00 | - | - | - |",
	"| bulk alone | - | - | \(map(.alone_mb_s) | mmm) | 1.00 | - |",
	"| classes (urgent + bulk) | \(map(.classes_p99_us) | mmm) | \(map(.classes_p99_us / .idle_p99_us) | mmm) | \(map(.classes_mb_s) | mmm) | \(map(.classes_mb_s / .alone_mb_s) | mmm) | \(map(.classes_overlap) | add)/\(length) |",
	(if ($g | map(.noclass_p99_us) | map(select(. != null)) | length) > 0 then
	"| no classes (default + default) | \(map(.noclass_p99_us) | mmm) | \(map(select(.noclass_p99_us != null) | .noclass_p99_us / .idle_p99_us) | mmm) | \(map(.noclass_mb_s) | mmm) | \(map(select(.noclass_mb_s != null) | .noclass_mb_s / .alone_mb_s) | mmm) | \(map(.noclass_overlap) | add)/\(length) |" else empty end),
	"",
	"mrcd'"'"'s run-queue wait per run during the classes ping-pong (us, /proc/PID/schedstat): h0 \(map(.mrcd_rq_wait_us_h0_h7[0]? // null) | mmm), h7 \(map(.mrcd_rq_wait_us_h0_h7[1]? // null) | mmm)",
	"",
	"targets (medians of the per-rep ratios): classes p99 / idle <= 1.1: \(if (map(.classes_p99_us / .idle_p99_us) | med) <= 1.1 then "met" else "NOT met" end); bulk / alone >= 0.8: \(if (map(.classes_mb_s / .alone_mb_s) | med) >= 0.8 then "met" else "NOT met" end)",
	""
' "$RAW"
} | tee "$RES/$OUTN.md"
