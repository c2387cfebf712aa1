#!/bin/bash
# Daemon benchmarks over the emulated fabric WITHOUT rate limits
# (examples/topologies/fabric-2p-8h.json: 2 planes, 4 leaves x 2 spines per
# plane, 8 hosts, unlimited veth links), mrcd on h0 and h7, applications on
# libmrc (examples/):
#   goodput  one QP h0 -> h7 (mrc_bulk, BYTES per pass, two passes over
#            the same registered regions: the first pays for the memory's
#            first use, the second is the steady state) against raw UDP on
#            the same pair of namespaces (iperf3 -u -b 0, 4096-byte
#            datagrams like mrc's packets, to h7's plane-0 ECMP address):
#            the kernel's ceiling here; the ratio is taken within each run.
#            CPU seconds of every process involved and the machine's busy
#            share are recorded, since both cores are shared by every
#            namespace (the switches forward in softirq on the same CPUs).
#   latency  64-byte WRITE_WITH_IMM ping-pong h0 <-> h7 through both
#            daemons (mrc_pingpong, busy-polling clients) against a UDP
#            ping-pong between the same namespaces (bench/pingpong -u).
# Raw results: bench/results/raw/daemon.jsonl; then bench/fabric/daemon_md.sh
# writes bench/results/daemon.md (with bench_ring.md and bench_qpmem.md).
# Namespaces prefix mrcE (MRC_BENCH_DAEMON_PREFIX); everything started here
# is stopped and the fabric removed on any exit.
#   MRC_BENCH_REPS (5), MRC_BENCH_DAEMON_BYTES (256M), MRC_BENCH_PINGS (5000),
#   MRC_BENCH_MRCD_ARGS (more mrcd options, e.g. "--cc fixed"),
#   MRC_BENCH_SHMEM_THP: "both" (default) runs the mrc transfer of each
#            goodput rep twice, with shared-memory transparent huge pages
#            off ("never", Debian's default) and on for the regions that ask
#            ("advise", what docs/client.md recommends), setting
#            /sys/kernel/mm/transparent_hugepage/shmem_enabled for the run
#            and restoring it on exit; "system" leaves the machine's setting.
set -eu
B=${B:-${1:-build}}
P=${MRC_BENCH_DAEMON_PREFIX:-mrcE}
REPS=${MRC_BENCH_REPS:-5}
BYTES=${MRC_BENCH_DAEMON_BYTES:-256M}
PINGS=${MRC_BENCH_PINGS:-5000}
RES=${MRC_BENCH_RESULTS:-bench/results}
RAW="$RES/raw/daemon.jsonl"
T=examples/topologies/fabric-2p-8h.json
F="$B/bin/mrc-fabric -p $P"
say() { echo "[daemon] $*"; }

if [ "$(id -u)" != 0 ]; then
	say "needs root (network namespaces); skipped" >&2
	exit 0
fi
for t in iperf3 jq python3 numfmt; do
	command -v $t >/dev/null || { say "$t missing (scripts/deps.sh)" >&2; exit 1; }
done
for x in bin/mrcd bin/mrc_bulk bin/mrc_pingpong bin/mrc-fabric bench/pingpong; do
	[ -x "$B/$x" ] || { say "$B/$x missing (make all bench)" >&2; exit 1; }
done

THP_F=/sys/kernel/mm/transparent_hugepage/shmem_enabled
thp_now() { sed -n 's/.*\[\(.*\)\].*/\1/p' $THP_F 2>/dev/null || true; }   # the [bracketed] mode
ORIG_THP=$(thp_now)
ORIG_THP=${ORIG_THP:-none}
case "${MRC_BENCH_SHMEM_THP:-both}" in
both) [ -w $THP_F ] && MODES="never advise" || { say "$THP_F not writable: THP modes not compared"; MODES=$ORIG_THP; } ;;
system) MODES=$ORIG_THP ;;
*) say "MRC_BENCH_SHMEM_THP: both or system" >&2; exit 1 ;;
esac
set_thp() {
	[ "$1" != none ] && [ -w $THP_F ] || return 0
	[ "$1" = "$(thp_now)" ] || echo "$1" >$THP_F
}

TMP=$(mktemp -d /tmp/mrcbench-daemon.XXXXXX)
PIDS=""
declare -A DPID
cleanup() {
	[ "$ORIG_THP" = none ] || set_thp "$ORIG_THP" 2>/dev/null || true
	for p in $PIDS; do kill "$p" 2>/dev/null || true; done
	for p in $PIDS; do wait "$p" 2>/dev/null || true; done
	$F down >/dev/null 2>&1 || true
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# bg CMD...: in the background; pid in BGPID, remembered for cleanup.
bg() { "$@" & BGPID=$!; PIDS="$PIDS $BGPID"; }
# reap PID SECONDS: wait at most SECONDS, then kill; returns the status.
reap() {
	local p=$1 t=$2 i=0 rc=0
	while kill -0 "$p" 2>/dev/null; do
		i=$((i + 1))
		if [ $i -gt $((t * 10)) ]; then
			kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true
			return 124
		fi
		sleep 0.1
	done
	wait "$p" || rc=$?
	return $rc
}
until_t() {
	local end=$(($(date +%s) + $1)); shift
	while ! "$@"; do [ "$(date +%s)" -lt $end ] || return 1; sleep 0.05; done
}
sock() { echo "$TMP/$1/mrcd.sock"; }
# CPU seconds (user+system) of a process so far; 0 when gone
cpu_s() { awk -v hz="$(getconf CLK_TCK)" '{ sub(/.*\) /, ""); split($0, f, " "); printf "%.3f", (f[12] + f[13]) / hz }' "/proc/$1/stat" 2>/dev/null || echo 0; }
# machine: busy jiffies, idle jiffies, softirq jiffies
# mbit SECS: BYTES moved in SECS as Mbit/s (0 when SECS is 0 or empty)
mbit() { awk -v s="${1:-0}" -v b="$(numfmt --from=iec "$BYTES")" 'BEGIN{printf "%.1f", (s > 0 ? b * 8 / s / 1e6 : 0)}'; }
# ratio A B: A / B (0 when B is 0)
ratio() { awk -v m="$1" -v u="$2" 'BEGIN{printf "%.3f", (u > 0 ? m / u : 0)}'; }
# busy_of BEFORE... AFTER...: the machine's busy share and its softirq
# share between two cpu_stat readings (six numbers, three each)
busy_of() { awk -v a="$1" -v i="$2" -v s="$3" -v b="$4" -v j="$5" -v t="$6" 'BEGIN{d=(b-a)+(j-i); printf "%.3f %.3f", (d>0?(b-a)/d:0), (d>0?(t-s)/d:0)}'; }
cpu_stat() { awk '/^cpu /{print $2+$3+$4+$7+$8, $5+$6, $8}' /proc/stat; }
# user and system CPU seconds of a process so far
cpu_us() { awk -v hz="$(getconf CLK_TCK)" '{ sub(/.*\) /, ""); split($0, f, " "); printf "%.3f %.3f", f[12] / hz, f[13] / hz }' "/proc/$1/stat" 2>/dev/null || echo "0 0"; }
# an engine counter of host H's daemon (mrcctl stats)
ectr() { "$B/bin/mrcctl" -s "$TMP/$1/mrcctl.sock" -j stats 2>/dev/null | jq -r ".engine.$2 // 0" || echo 0; }
# a daemon counter of host H (0 where that build does not have it)
dctr() { "$B/bin/mrcctl" -s "$TMP/$1/mrcctl.sock" -j stats 2>/dev/null | jq -r ".daemon.$2 // 0" || echo 0; }
baddr() { printf 'fdbb:bb00:%x:%x::1' "$2" "$1"; }   # host H, plane PL
emit() { echo "$1" >>"$RAW"; }

mkdir -p "$RES/raw"
: >"$RAW"
$F down >/dev/null 2>&1 || true
$F up "$T" --ecmp >/dev/null
say "fabric $P up ($T: no rate limit), $(nproc) CPUs shared by every namespace"
"$B/bin/mrcd" --genkey "$TMP/cluster.key" >/dev/null || exit 1
for h in h0 h7; do
	mkdir -p "$TMP/$h"
	bg ip netns exec $P-$h "$B/bin/mrcd" --topology $T --host $h --socket "$(sock $h)" \
		--key_file "$TMP/cluster.key" ${MRC_BENCH_MRCD_ARGS:-} \
		--log_level warning 2>>"$TMP/$h.log"
	DPID[$h]=$BGPID
	until_t 10 test -S "$TMP/$h/mrcctl.sock" || { say "mrcd on $h did not start"; cat "$TMP/$h.log"; exit 1; }
done
emit "{\"kind\":\"meta\",\"date\":\"$(date -u '+%Y-%m-%d %H:%M UTC')\",\"cpu\":\"$(awk -F': ' '/model name/{print $2; exit}' /proc/cpuinfo)\",\"ncpu\":$(nproc),\"kernel\":\"$(uname -r)\",\"bytes\":\"$BYTES\",\"pings\":$PINGS,\"reps\":$REPS,\"load\":\"$(cut -d' ' -f1-3 /proc/loadavg)\",\"shmem_thp_system\":\"$ORIG_THP\"}"

# --- goodput: one QP vs raw UDP, same run ----------------------------------
sid=7300
r=1
while [ $r -le "$REPS" ]; do
	sid=$((sid + 1))
	gpl=""
	# mrc, once per shared-memory THP mode (huge pages for the regions)
	for thp in $MODES; do
		set_thp $thp
		bg "$B/bin/mrc_bulk" -S "$(sock h7)" -s "$BYTES" -i $sid recv >"$TMP/recv" 2>&1
		rp=$BGPID
		set -- $(cpu_stat)
		c0=$(cpu_s ${DPID[h0]}); c7=$(cpu_s ${DPID[h7]})
		u0=$(cpu_us ${DPID[h0]}); u7=$(cpu_us ${DPID[h7]})
		k0="$(ectr h0 tx_data) $(ectr h7 tx_acks) $(ectr h0 tx_retx) $(ectr h0 rto_fires) $(ectr h7 rx_dup) $(dctr h0 timer_superseded)"
		bg "$B/bin/mrc_bulk" -S "$(sock h0)" -s "$BYTES" -i $sid -p 2 send 7 >"$TMP/send" 2>&1
		sp=$BGPID
		rc=0; reap $sp 120 || rc=$?
		# the sender's own CPU cannot be read after it exits: /usr/bin/time is
		# not everywhere, so the daemons' CPU (where the transport runs) is
		# what is recorded; the clients sleep in mrc_wait.
		d0=$(awk -v a="$c0" -v b="$(cpu_s ${DPID[h0]})" 'BEGIN{printf "%.3f", b-a}')
		d7=$(awk -v a="$c7" -v b="$(cpu_s ${DPID[h7]})" 'BEGIN{printf "%.3f", b-a}')
		set -- "$@" $(cpu_stat)
		# system share of the daemons' CPU, and packets: data sent by h0,
		# ACKs sent by h7, retransmissions and RTO expiries of h0
		sys=$(awk -v a="$u0 $u7" -v b="$(cpu_us ${DPID[h0]}) $(cpu_us ${DPID[h7]})" 'BEGIN{split(a,x," "); split(b,y," "); u=(y[1]-x[1])+(y[3]-x[3]); s=(y[2]-x[2])+(y[4]-x[4]); printf "%.3f", (u+s>0 ? s/(u+s) : 0)}')
		k1="$(ectr h0 tx_data) $(ectr h7 tx_acks) $(ectr h0 tx_retx) $(ectr h0 rto_fires) $(ectr h7 rx_dup) $(dctr h0 timer_superseded)"
		# rx_dup of h7 against retx of h0: retransmissions that were not
		# needed (the original arrived); timer_superseded of h0: RTO checks
		# that the ACKs read first in the same loop turn made moot
		pk=$(awk -v a="$k0" -v b="$k1" 'BEGIN{split(a,x," "); split(b,y," "); printf "\"data_pkts\":%d,\"acks\":%d,\"retx\":%d,\"rto\":%d,\"rx_dup\":%d,\"timer_superseded\":%d", y[1]-x[1], y[2]-x[2], y[3]-x[3], y[4]-x[4], y[5]-x[5], y[6]-x[6]}')
		reap $rp 30 || rc=$?
		# two passes over the same regions: the first also pays for the
		# memory's first use (page faults), the second is the steady state
		secs=$(sed -n 's/.* to host .* in \([0-9.]*\) s:.*/\1/p' "$TMP/send")
		csecs=$(sed -n 's/.* pass 1\/2: .* in \([0-9.]*\) s:.*/\1/p' "$TMP/send")
		ok=$(grep -c "OK" "$TMP/recv" || true)
		mbit=$(mbit "$secs")
		cmbit=$(mbit "$csecs")
		busy=$(busy_of "$@")
		[ $rc = 0 ] && [ "$ok" = 1 ] || say "mrc rep $r FAILED (exit $rc): $(tail -n2 "$TMP/send" "$TMP/recv" | tr '\n' ' ')"
		gpl="$gpl{\"shmem_thp\":\"$thp\",\"mrc_mbit\":$mbit,\"mrc_secs\":${secs:-0},\"mrc_first_mbit\":$cmbit,\"mrc_first_secs\":${csecs:-0},\"verified\":$ok,\"mrcd_h0_cpu_s\":$d0,\"mrcd_h7_cpu_s\":$d7,\"mrcd_sys_share\":$sys,$pk,\"mrc_busy\":${busy% *},\"mrc_softirq\":${busy#* }}
"
		say "goodput rep $r/$REPS, shmem THP $thp: mrc $mbit Mbit/s, first pass $cmbit (mrcd h0 $d0 s, h7 $d7 s CPU over ${secs:-?} s; system share $sys; $pk; machine busy ${busy% *})"
		sid=$((sid + 1))
	done
	set_thp $ORIG_THP
	# raw UDP on the same pair, 4096-byte datagrams, as fast as it goes
	bg ip netns exec $P-h7 timeout 30 iperf3 -s -1 -p 5401 -J >"$TMP/u.srv" 2>&1
	up=$BGPID
	sleep 0.3
	set -- $(cpu_stat)
	ip netns exec $P-h0 timeout 30 iperf3 -u -b 0 -l 4096 -t 4 -c "$(baddr 7 0)" -p 5401 -J >"$TMP/u" 2>"$TMP/u.err" || say "udp rep $r FAILED: $(cat "$TMP/u.err")"
	set -- "$@" $(cpu_stat)
	reap $up 10 || true
	ubusy=$(busy_of "$@")
	u=$(jq -c '{sent: (.end.sum.bits_per_second / 1e6), lost: .end.sum.lost_percent, got: (.end.sum.bits_per_second * (1 - .end.sum.lost_percent / 100) / 1e6), cpu_snd: .end.cpu_utilization_percent.host_total, cpu_rcv: .end.cpu_utilization_percent.remote_total}' "$TMP/u" 2>/dev/null || echo '{"got":0}')
	ug=$(echo "$u" | jq -r '.got // 0')
	# one line per THP mode, each with this rep's UDP run and its ratio
	echo -n "$gpl" | while IFS= read -r g; do
		mb=$(echo "$g" | jq -r .mrc_mbit)
		fb=$(echo "$g" | jq -r .mrc_first_mbit)
		ratio=$(ratio "$mb" "$ug")
		fratio=$(ratio "$fb" "$ug")
		emit "$(echo "$g" | jq -c --argjson u "$u" --argjson ub "${ubusy% *}" --argjson us "${ubusy#* }" \
			--argjson ra "$ratio" --argjson fr "$fratio" --argjson r "$r" '{kind: "goodput", rep: $r} + . + {udp: $u, udp_busy: $ub, udp_softirq: $us, ratio: $ra, first_ratio: $fr}')"
		say "goodput rep $r/$REPS, shmem THP $(echo "$g" | jq -r .shmem_thp): mrc $mb (first pass $fb) vs UDP $ug Mbit/s received: ratio $ratio (first pass $fratio)"
	done
	r=$((r + 1))
done

# --- latency: WRITE_WITH_IMM ping-pong vs UDP ping-pong -------------------
r=1
while [ $r -le "$REPS" ]; do
	sid=$((sid + 1))
	# mrc twice: clients busy-polling (the example's default), then
	# sleeping in mrc_wait (-w): two busy pollers take both cores here
	for w in "" -w; do
		sid=$((sid + 1))
		bg "$B/bin/mrc_pingpong" -S "$(sock h7)" -s 64 -n "$PINGS" -i $sid $w server >"$TMP/pps" 2>&1
		pp=$BGPID
		rc=0
		timeout 60 "$B/bin/mrc_pingpong" -S "$(sock h0)" -s 64 -n "$PINGS" -i $sid $w client 7 >"$TMP/ppc" 2>&1 || rc=$?
		reap $pp 10 || true
		m=$(sed -n 's/.*min \([0-9.]*\) us, median \([0-9.]*\) us, p99 \([0-9.]*\) us, max \([0-9.]*\) us.*/{"min":\1,"p50":\2,"p99":\3,"max":\4}/p' "$TMP/ppc")
		[ -n "$m" ] || { say "mrc$w ping-pong rep $r FAILED (exit $rc): $(tail -n2 "$TMP/ppc")"; m='{"min":null,"p50":null,"p99":null,"max":null}'; }
		if [ -z "$w" ]; then mb=$m; fi
	done
	mw=$m; m=$mb
	bg ip netns exec $P-h7 timeout 60 "$B/bench/pingpong" -s -u -p 7400 -n "$PINGS" -b 64 2>"$TMP/ups"
	up=$BGPID
	sleep 0.2
	ip netns exec $P-h0 timeout 60 "$B/bench/pingpong" -c "$(baddr 7 0)" -u -p 7400 -n "$PINGS" -b 64 >"$TMP/upc" 2>"$TMP/upc.err" || say "udp ping-pong rep $r FAILED: $(cat "$TMP/upc.err")"
	reap $up 10 || true
	u=$(jq -c 'select(.rtt_us_p50) | {min: .rtt_us_min, p50: .rtt_us_p50, p99: .rtt_us_p99}' "$TMP/upc" 2>/dev/null || true)
	[ -n "$u" ] || u='{"min":null,"p50":null,"p99":null}'
	emit "{\"kind\":\"latency\",\"rep\":$r,\"size\":64,\"n\":$PINGS,\"mrc\":$m,\"mrc_wait\":$mw,\"udp\":$u}"
	say "latency rep $r/$REPS: mrc (busy-poll) $m, mrc (mrc_wait) $mw, udp $u"
	r=$((r + 1))
done
[ ! -s "$TMP/h0.log" ] || say "h0 daemon log: $(tail -n3 "$TMP/h0.log" | tr '\n' ' ')"
