#!/bin/sh
# Datapath benchmark, udp vs dpdk side by side in one run on the same
# fabric (examples/topologies/fabric-2p-8h.json: 2 planes, unlimited veth
# links), h0 -> h7 with mrc-xfer (the daemon core):
#   bulk: BYTES verified WRITE; goodput; the CPU both mrc-xfer processes
#     used (user+sys from /usr/bin/time, whole lifetime: a dpdk process
#     spins from start to exit) and the whole machine's busy CPU (jiffies,
#     includes the kernel's veth/softirq work, and anyone else's: the
#     machine is shared); packets/s per core = packets both ends sent /
#     their CPU seconds; cores per Gbit/s = CPU seconds / transfer seconds
#     / Gbit/s.
#   pingpong: PINGS round trips of 64 bytes, rtt p50/p99.
# Contenders alternate within each rep; medians over REPS.  Raw lines go
# to bench/results/raw/datapath_dpdk.jsonl, the table to
# bench/results/datapath_dpdk.md.  Run under the root lock:
#   flock /tmp/mrc-root.lock sh bench/fabric/datapath_dpdk.sh
set -eu
B=${B:-build}
P=${MRC_BENCH_PREFIX:-mrcDD}
REPS=${MRC_BENCH_REPS:-3}
BYTES=${MRC_BENCH_BYTES:-512M}
PINGS=${MRC_BENCH_PINGS:-2000}
RES=${MRC_BENCH_RESULTS:-bench/results}
DPS=${MRC_BENCH_DATAPATHS:-"udp dpdk"}
T=examples/topologies/fabric-2p-8h.json
F="$B/bin/mrc-fabric -p $P"
if [ "$(id -u)" != 0 ]; then
	echo "bench/fabric/datapath_dpdk: needs root (network namespaces); skipped" >&2
	exit 0
fi
if ! ldd "$B/bin/mrc-xfer" | grep -q librte_eal; then
	echo "bench/fabric/datapath_dpdk: the dpdk datapath is not built in (libdpdk-dev); skipped" >&2
	exit 0
fi
TMP=$(mktemp -d /tmp/mrcbench.XXXXXX)
RAW="$RES/raw/datapath_dpdk.jsonl"
mkdir -p "$RES/raw"
: >"$RAW"
cleanup() {
	[ -n "${sp:-}" ] && kill "$sp" 2>/dev/null || true
	$F down >/dev/null 2>&1 || true
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
"$B/bin/mrcd" --genkey "$TMP/k" >/dev/null
X="$B/bin/mrc-xfer --topology $T --key-file $TMP/k"
$F down >/dev/null 2>&1 || true
$F up "$T" >/dev/null
busy() { awk '/^cpu /{print $2+$3+$4+$7+$8}' /proc/stat; }

# one DP KIND(bulk|ping) REP
one() {
	dp=$1; kind=$2; r=$3; o="$TMP/o"
	if [ "$kind" = bulk ]; then opt="--bytes $BYTES"; else opt="--bytes 64 --pingpong $PINGS"; fi
	sid=$((sid + 1))
	ip netns exec $P-h7 timeout 120 /usr/bin/time -f "%U %S %e" -o "$o.ts" \
		$X --datapath "$dp" --host h7 --listen --sid $sid $opt >"$o.s" 2>"$o.se" &
	sp=$!
	b0=$(busy); t0=$(date +%s%N)
	ip netns exec $P-h0 timeout 120 /usr/bin/time -f "%U %S %e" -o "$o.tc" \
		$X --datapath "$dp" --host h0 --connect h7 --sid $sid $opt >"$o.c" 2>"$o.ce" || {
		echo "[datapath_dpdk] $dp $kind rep $r FAILED: $(tail -n 3 "$o.ce")"; wait $sp || true; sp=; return 0; }
	wait $sp || true
	sp=
	b1=$(busy); t1=$(date +%s%N)
	hz=$(getconf CLK_TCK)
	if [ "$kind" = bulk ]; then
		jq -c -s --arg dp "$dp" --argjson r "$r" \
			--argjson cc "[$(tr ' ' , <"$o.tc")]" --argjson cs "[$(tr ' ' , <"$o.ts")]" \
			--argjson mb "$(awk -v a="$b0" -v b="$b1" -v t0="$t0" -v t1="$t1" -v hz="$hz" \
				'BEGIN{printf "%.3f", (b-a)/hz/((t1-t0)/1e9)}')" '
			(map(select(.goodput_mbit)) | .[0]) as $g |
			(map(select(.planes_tx_pkts)) | map(.planes_tx_pkts | add) | add) as $pk |
			(map(select(.crc32c)) | map(.crc32c) | unique | length == 1) as $ok |
			($cc[0] + $cc[1] + $cs[0] + $cs[1]) as $cpu |
			{datapath: $dp, kind: "bulk", rep: $r, verified: $ok, goodput_mbit: $g.goodput_mbit,
			 seconds: $g.seconds, pkts: $pk, cpu_s: $cpu,
			 pps_per_core: ($pk / $cpu), cores_per_gbit: ($cpu / $g.seconds / ($g.goodput_mbit / 1000)),
			 machine_busy_cores: $mb}' "$o.c" "$o.s" >>"$RAW"
	else
		jq -c --arg dp "$dp" --argjson r "$r" \
			'select(.rtt_us_p50) | {datapath: $dp, kind: "ping", rep: $r, p50_us: .rtt_us_p50,
			 p99_us: .rtt_us_p99, min_us: .rtt_us_min}' "$o.c" >>"$RAW"
	fi
	echo "[datapath_dpdk] $(tail -n 1 "$RAW")"
}

sid=0
r=1
while [ $r -le "$REPS" ]; do
	for dp in $DPS; do one "$dp" bulk $r; done
	for dp in $DPS; do one "$dp" ping $r; done
	r=$((r + 1))
done

# the table: medians over the reps
{
	echo "# Datapaths: udp vs dpdk (bench/fabric/datapath_dpdk.sh)"
	echo
	echo "$(date -u '+%Y-%m-%d %H:%M UTC'), $(awk -F': ' '/model name/{print $2; exit}' /proc/cpuinfo), $(nproc) CPUs shared with other work (load $(cut -d' ' -f1-3 /proc/loadavg)), kernel $(uname -r); h0 -> h7 on the emulated 2-plane fabric (veth, no rate limit), mrc-xfer at both ends, dpdk = af_packet vdevs (default datapath_args); $BYTES per bulk run, $PINGS round trips of 64 B; medians of $REPS reps, contenders alternating."
	echo
	jq -r -s '
	def med: sort | if length == 0 then null else .[(length - 1) / 2 | floor] end;
	def f(n): if . == null then "-" else (. * n | round / n | tostring) end;
	(map(.datapath) | unique) as $dps |
	"| datapath | goodput Mbit/s | packets/s per core | CPU s (both ends) | cores per Gbit/s | machine busy cores | ping p50 us | ping p99 us | verified |",
	"|---|---|---|---|---|---|---|---|---|",
	($dps[] as $d |
	  (map(select(.datapath == $d and .kind == "bulk"))) as $b |
	  (map(select(.datapath == $d and .kind == "ping"))) as $p |
	  "| \($d) | \($b | map(.goodput_mbit) | med | f(1)) | \($b | map(.pps_per_core) | med | f(1)) | \($b | map(.cpu_s) | med | f(100)) | \($b | map(.cores_per_gbit) | med | f(100)) | \($b | map(.machine_busy_cores) | med | f(100)) | \($p | map(.p50_us) | med | f(10)) | \($p | map(.p99_us) | med | f(10)) | \($b | map(select(.verified)) | length)/\($b | length) |")
	' "$RAW"
	echo
	echo "packets/s per core counts the packets both mrc-xfer processes sent (data and ACKs) per CPU second they used. A dpdk process spins at 100% of a core from start to exit, traffic or not (poll mode: docs/datapaths.md), so its CPU seconds include waiting for the peer and its cores per Gbit/s are an upper bound; the udp processes sleep when idle, and part of their cost is kernel softirq work not charged to them (machine busy cores counts everything on the machine, including other engineers' work: noisy). af_packet is the dpdk PMD that works on veth: every frame still crosses the kernel (a copy into the packet ring each way), so this measures DPDK's poll-mode structure on this fabric, not kernel bypass; on a NIC bound to vfio-pci (docs/datapaths.md) the kernel is out of the path."
} >"$RES/datapath_dpdk.md"
cat "$RES/datapath_dpdk.md"
