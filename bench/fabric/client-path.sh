#!/bin/bash
# The client path on the emulated fabric (issue 30's rows "on the fabric";
# bench/client-path.sh is the loopback side): h0 -> h7, one mrcd per host,
# no rate limits, REPS runs, each contender once per run (alternated, so a
# change in the machine's load hits all of them):
#   plugin / libmrc:  mrc-nccl-harness -b (the NCCL plugin as NCCL's proxy
#                     drives it) and -d (libmrc directly), 4 KiB round trip
#                     and 4 MiB messages with 8 in flight
#   pingpong busy/-w: mrc_pingpong 64 B, busy-polling and sleeping clients
#   bulk:             mrc_bulk 256 MiB (the third of 3 passes)
#   references:       bench/pingpong over the ECMP baseline routes, UDP 64 B
#                     and TCP 4 KiB; UDP 64 B over the SRv6 path of plane 0
#                     spine 0 (what the fabric itself costs); iperf3 TCP
# Writes $MRC_BENCH_RESULTS/client-path-fabric.md (bench/results): medians
# [min, max] over the runs and the ratios issue 30 sets goals on.  Root.
SCEN=client_path
RATE=0
. bench/fabric/lib.sh
start_raw
fab_up
set +e   # a failed contender is recorded as missing, not the end of the run
PP="$B/bench/pingpong"
H="$B/bin/mrc-nccl-harness"
for f in "$PP" "$H" "$B/bin/mrc_pingpong" "$B/bin/mrc_bulk"; do
	[ -x "$f" ] || { echo "bench/fabric/client-path: $f missing (make bench builds it)" >&2; exit 1; }
done
export LD_LIBRARY_PATH="$PWD/$B/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
sock() { echo "$TMP/$1/mrcd.sock"; }
for h in h0 h7; do
	mkdir -p "$TMP/$h"
	bg ip netns exec $P-$h "$B/bin/mrcd" --topology "$TOPO" --host $h --socket "$(sock $h)" \
		--ctl_socket "$TMP/$h/mrcctl.sock" --key_file "$TMP/cluster.key" --log_level warning \
		2>>"$TMP/$h.log"
	for _ in $(seq 200); do [ -S "$TMP/$h/mrcctl.sock" ] && break; sleep 0.05; done
	[ -S "$TMP/$h/mrcctl.sock" ] || { echo "mrcd on $h did not start: $(tail -n3 "$TMP/$h.log")" >&2; exit 1; }
done
rec() { [ -n "$2" ] && emit "{\"scenario\":\"$SCEN\",\"rep\":$r,\"metric\":\"$1\",\"v\":$2}"; }
# harness ARGS...: rank 0's first table row (| mode | bytes | rtt | p99 | Gbit/s |)
harness() {
	bg ip netns exec $P-h7 env MRC_SOCKET="$(sock h7)" timeout 120 "$H" -r 1 -n 2 -R "$TMP/rdv" "$@"
	local sp=$BGPID
	ip netns exec $P-h0 env MRC_SOCKET="$(sock h0)" timeout 120 "$H" -r 0 -n 2 -R "$TMP/rdv" "$@" \
		2>&1 | grep -m1 -E '^\| [a-z]+ \| [0-9]+ \|'
	reap $sp 10 >/dev/null || true
}
col() { awk -F'|' -v c="$1" '{ gsub(/ /, "", $c); print $c; exit }'; }
median_of() { sed -n 's/.*median \([0-9.]*\) us.*/\1/p'; }
sid=300
r=1
while [ "$r" -le "$REPS" ]; do
	say "rep $r/$REPS (load $(cut -d' ' -f1 /proc/loadavg))"
	emit "{\"scenario\":\"$SCEN\",\"rep\":$r,\"metric\":\"load\",\"v\":$(cut -d' ' -f1 /proc/loadavg)}"
	for m in b d; do
		name=$([ $m = b ] && echo plugin || echo libmrc)
		if [ $m = b ]; then x=$(harness -b -z 4096 -p "$PWD/$B/lib/libnccl-net-mrc.so"); else x=$(harness -d -z 4096); fi
		v=$(echo "$x" | col 4); [ -n "$v" ] && rec ${name}_rtt_4k "$v"
		if [ $m = b ]; then x=$(harness -b -z 4194304 -p "$PWD/$B/lib/libnccl-net-mrc.so"); else x=$(harness -d -z 4194304); fi
		v=$(echo "$x" | col 6); [ -n "$v" ] && rec ${name}_gbit_4m "$v"
	done
	for w in "" -w; do
		sid=$((sid + 1))
		bg ip netns exec $P-h7 timeout 60 "$B/bin/mrc_pingpong" -S "$(sock h7)" $w -s 64 -n 5000 -i $sid server
		sp=$BGPID
		sleep 0.3
		v=$(ip netns exec $P-h0 timeout 60 "$B/bin/mrc_pingpong" -S "$(sock h0)" $w -s 64 -n 5000 -i $sid \
			client 7 2>&1 | median_of)
		reap $sp 10 >/dev/null || true
		[ -n "$v" ] && rec "pingpong${w:-_busy}" "$v"
	done
	sid=$((sid + 1))
	bg ip netns exec $P-h7 timeout 120 "$B/bin/mrc_bulk" -S "$(sock h7)" -s 256M -i $sid recv
	sp=$BGPID
	sleep 0.3
	v=$(ip netns exec $P-h0 timeout 120 "$B/bin/mrc_bulk" -S "$(sock h0)" -s 256M -p 3 -i $sid send 7 2>&1 |
		sed -n 's/.* \([0-9.]*\) MB\/s.*/\1/p' | tail -1)
	reap $sp 10 >/dev/null || true
	[ -n "$v" ] && rec bulk_mbs "$v"
	for c in udp64 tcp4k udp64-srv6; do
		o=$TMP/pp
		case $c in
		udp64-srv6)
			bg ip netns exec $P-h7 timeout 60 "$PP" -s -P "$($F -t "$TOPO" path h7 h0 --plane 0 --spine 0)" \
				-p 7000 -n 5000 -b 64
			sp=$BGPID
			ip netns exec $P-h0 timeout 60 "$PP" -P "$($F -t "$TOPO" path h0 h7 --plane 0 --spine 0)" \
				-p 7000 -n 5000 -b 64 >"$o" 2>/dev/null ;;
		*)
			u=""; b=4096; [ $c = udp64 ] && { u=-u; b=64; }
			bg ip netns exec $P-h7 timeout 60 "$PP" -s $u -p 7000 -n 5000 -b $b
			sp=$BGPID
			ip netns exec $P-h0 timeout 60 "$PP" -c "$(baddr 7 0)" $u -p 7000 -n 5000 -b $b >"$o" 2>/dev/null ;;
		esac
		reap $sp 10 >/dev/null || true
		v=$(jq -r 'select(.rtt_us_p50) | .rtt_us_p50' "$o" 2>/dev/null | head -1)
		[ -n "$v" ] && rec "$c" "$v"
	done
	ip_run tcp 0 7 "$TMP/ip" -t 5 || true
	v=$(jq -r '.end.sum_received.bits_per_second // empty' "$TMP/ip" 2>/dev/null)
	[ -n "$v" ] && rec tcp_gbit "$(awk -v b="$v" 'BEGIN { printf "%.3f", b / 1e9 }')"
	r=$((r + 1))
done
python3 - "$RAW" "$REPS" >"$RES/client-path-fabric.md" <<'PY'
import json, sys, statistics as st, platform, subprocess
raw, reps = sys.argv[1], int(sys.argv[2])
v = {}
for line in open(raw):
    o = json.loads(line)
    v.setdefault(o["metric"], []).append(float(o["v"]))
def m(k):
    x = v.get(k)
    return st.median(x) if x else None
def f(k):
    x = v.get(k)
    return f"{st.median(x):.1f} [{min(x):.1f}, {max(x):.1f}]" if x else "n/a"
def ratio(a, b):
    return f"{m(a) / m(b):.2f}x" if m(a) and m(b) else "n/a"
cpu = subprocess.run("lscpu | sed -n 's/^Model name: *//p'", shell=True, capture_output=True,
                     text=True).stdout.strip()
print("# The client path on the emulated fabric (bench/fabric/client-path.sh)\n")
print(f"Machine: {platform.node()}, {cpu}, {subprocess.run('nproc', capture_output=True, text=True).stdout.strip()} "
      f"CPUs, load at each run {', '.join(str(x) for x in v.get('load', []))}.  h0 -> h7 of the 2-plane "
      f"fabric (no rate limits, one spine hop), one mrcd per host with its defaults; medians [min, max] "
      f"over {reps} runs, each contender once per run.\n")
print("| row | mrc | reference | ratio | goal (issue 30) |")
print("|---|---:|---:|---:|---|")
print(f"| NCCL plugin 4 KiB round trip, us | {f('plugin_rtt_4k')} | libmrc {f('libmrc_rtt_4k')}; TCP 4 KiB {f('tcp4k')} "
      f"| {ratio('plugin_rtt_4k', 'libmrc_rtt_4k')}; {ratio('plugin_rtt_4k', 'tcp4k')} | <= 2x; <= 3x |")
print(f"| NCCL plugin 4 MiB x 8 in flight, Gbit/s | {f('plugin_gbit_4m')} | libmrc {f('libmrc_gbit_4m')}; "
      f"iperf3 TCP {f('tcp_gbit')} | {ratio('plugin_gbit_4m', 'libmrc_gbit_4m')}; "
      f"{ratio('plugin_gbit_4m', 'tcp_gbit')} | >= 0.9x (of mrc_bulk); >= 1x |")
print(f"| mrc_pingpong 64 B busy, us | {f('pingpong_busy')} | raw UDP {f('udp64')} (over SRv6 {f('udp64-srv6')}) "
      f"| {ratio('pingpong_busy', 'udp64')} | <= 1.5x |")
print(f"| mrc_pingpong 64 B sleeping (-w), us | {f('pingpong-w')} | raw UDP {f('udp64')} "
      f"| {ratio('pingpong-w', 'udp64')} | <= 2x |")
b = m('bulk_mbs')
print(f"| mrc_bulk 256 MiB, MB/s | {f('bulk_mbs')} | iperf3 TCP {f('tcp_gbit')} Gbit/s | "
      f"{(b * 8 / 1000 / m('tcp_gbit')):.2f}x |  |" if b and m('tcp_gbit') else "| mrc_bulk | n/a | | | |")
if b and m('plugin_gbit_4m'):
    print(f"\nThe plugin's 4 MiB stream against mrc_bulk's steady state: "
          f"{m('plugin_gbit_4m') * 1000 / 8 / b:.2f}x (goal >= 0.9x).")
PY
cat "$RES/client-path-fabric.md"
