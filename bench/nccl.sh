#!/bin/bash
# The NCCL net plugin's overhead (make bench; bench/results/nccl.md):
# mrc-nccl-harness -b (the plugin: isend/irecv/test through bounce copies
# and the CTS protocol) against -d (the same transfers through libmrc
# directly: WRITE_IMM between registered regions), rank 0 on h0 and rank 1
# on h7 of the emulated fabric without rate limits (fabric-2p-8h.json),
# through their mrcds; per message size the round-trip latency (median and
# p99 of the ping-pongs) and the throughput with 8 messages in flight;
# MRC_BENCH_REPS runs of each, alternated, medians of the runs.  Plus the
# cost of one bounce copy (-M).  Needs root (namespaces); prefix mrcQ.
set -u
B=${B:-${1:-build}}
P=mrcQ
REPS=${MRC_BENCH_REPS:-3}
RES=${MRC_BENCH_RESULTS:-bench/results}
T=examples/topologies/fabric-2p-8h.json
F="$B/bin/mrc-fabric -p $P"
H="$B/bin/mrc-nccl-harness"
if [ "$(id -u)" != 0 ]; then
	echo "bench/nccl.sh: needs root (network namespaces); skipped" >&2
	exit 0
fi
tmp=$(mktemp -d)
declare -A dpid
cleanup() {
	for p in "${dpid[@]}"; do kill "$p" 2>/dev/null; done
	$F down >/dev/null 2>&1
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM
. tests/root/lib.sh
export LD_LIBRARY_PATH="$PWD/$B/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
MRCD_LOG_LEVEL=warning fabric_up "$T" h0 h7
# run MODE REP: one benchmark run, rank 0's table rows into $tmp/MODE.REP
run() {
	MRC_SOCKET=$tmp/h7/mrcd.sock timeout 300 $H -r 1 -n 2 -R "$tmp/rdv" $1 >"$tmp/r1" 2>&1 &
	local p=$!
	MRC_SOCKET=$tmp/h0/mrcd.sock timeout 300 $H -r 0 -n 2 -R "$tmp/rdv" $1 >"$tmp/r0" 2>&1
	local rc=$?
	wait $p || rc=1
	[ $rc = 0 ] || { echo "run $1 failed: $(tail -n2 "$tmp/r0" "$tmp/r1")"; exit 1; }
	grep -E '^\| (plugin|libmrc) \|' "$tmp/r0" >"$tmp/$2.$3"
}
for i in $(seq "$REPS"); do
	echo "=== nccl: rep $i/$REPS"
	run -b plugin "$i"
	run -d libmrc "$i"
done
$H -M >"$tmp/copy"
mkdir -p "$RES"
python3 - "$tmp" "$REPS" >"$RES/nccl.md" <<'PY'
import sys, statistics as st, platform, subprocess
tmp, reps = sys.argv[1], int(sys.argv[2])
def rows(mode):
    d = {}
    for i in range(1, reps + 1):
        for line in open(f"{tmp}/{mode}.{i}"):
            c = [x.strip() for x in line.strip().strip('|').split('|')]
            d.setdefault(int(c[1]), []).append((float(c[2]), float(c[3]), float(c[4])))
    return {k: tuple(st.median(x[j] for x in v) for j in range(3)) for k, v in d.items()}
p, m = rows("plugin"), rows("libmrc")
cpu = subprocess.run("lscpu | sed -n 's/^Model name: *//p'", shell=True,
                     capture_output=True, text=True).stdout.strip()
print("# NCCL net plugin vs libmrc directly (bench/nccl.sh)\n")
print(f"Machine: {platform.node()}, {cpu}, {subprocess.run('nproc', capture_output=True, text=True).stdout.strip()} CPUs; "
      f"h0 -> h7 on the emulated fabric (fabric-2p-8h.json, no rate limits), one mrcd per host, "
      f"busy-polling clients; medians of {reps} runs each, alternated.\n")
print("| size (B) | plugin RTT us (p99) | libmrc RTT us (p99) | RTT ratio | plugin Gbit/s | libmrc Gbit/s | throughput ratio |")
print("|---:|---:|---:|---:|---:|---:|---:|")
for k in sorted(p):
    a, b = p[k], m[k]
    print(f"| {k} | {a[0]:.1f} ({a[1]:.1f}) | {b[0]:.1f} ({b[1]:.1f}) | {a[0]/b[0]:.2f} | "
          f"{a[2]:.3f} | {b[2]:.3f} | {a[2]/b[2]:.2f} |")
print("\nThe cost of one bounce copy (memcpy between host buffers, -M; the plugin makes "
      "one on each side of every message):\n")
print(open(f"{tmp}/copy").read())
PY
cat "$RES/nccl.md"
