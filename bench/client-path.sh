#!/bin/bash
# The client path against its references, before and after (make bench;
# bench/results/client-path.md): on one loopback mrcd per build, for each
# build in turn (alternated, so a change in the machine's load hits both):
#   - the NCCL plugin driven as NCCL's proxy thread drives it
#     (mrc-nccl-harness -b: two comm pairs, isend/irecv/test, host memory):
#     4 KiB round trip (median of 200) and 4 MiB messages, 8 in flight;
#   - libmrc: mrc_pingpong 64 B (busy-polling and sleeping: -w), mrc_bulk
#     256 MiB, steady state (the last of 3 passes) and first pass;
#   - the references: the same harness over a loopback TCP connection (-T),
#     and through libmrc directly (-d);
#   - 64-byte WRITEs through mrcd per second, with the udp datapath's
#     default and gso=on, beside 64-byte UDP datagrams (bench_ring part 3
#     of the new build, against each build's mrcd).
# The driver is the current build's harness for every plugin (-p PATH: any
# v11 plugin).  Usage:
#   bench/client-path.sh BASE_BUILD NEW_BUILD [REPS]     (default REPS 5)
# MRC_CP_ONLY=bulk: only the 4 MiB stream rows (the plugin with malloc'd
# and with memfd buffers, -m), mrc_bulk and TCP (bench/results/nccl-bulk.md).
# Writes $MRC_BENCH_RESULTS/client-path.md (bench/results by default);
# medians [min, max] over the reps, the load average at each rep.
set -u
BASE=${1:?base build dir}
NEW=${2:?new build dir}
REPS=${3:-${MRC_BENCH_REPS:-5}}
RES=${MRC_BENCH_RESULTS:-bench/results}
ONLY=${MRC_CP_ONLY:-}
H=$NEW/bin/mrc-nccl-harness
tmp=$(mktemp -d)
dpid=
cleanup() {
	[ -n "$dpid" ] && kill "$dpid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM
$NEW/bin/mrcd --genkey "$tmp/key" >/dev/null
out=$tmp/raw
: >"$out"
rec() { [ -n "$3" ] && echo "$1 $2 $3" >>"$out"; }   # VERSION METRIC VALUE (none: not recorded)

LO_ENV=()
. "$(dirname "$0")/loopback.sh"

# harness MODE-ARGS...: rank 0's table rows on stdout
harness() {
	MRC_SOCKET=$tmp/s timeout 120 $H -r 1 -n 2 -R "$tmp/rdv" "$@" >"$tmp/h1" 2>&1 &
	local p=$!
	MRC_SOCKET=$tmp/s timeout 120 $H -r 0 -n 2 -R "$tmp/rdv" "$@" >"$tmp/h0" 2>&1
	local rc=$?
	wait $p || rc=1
	[ $rc = 0 ] || { echo "harness $* failed: $(tail -n2 "$tmp/h0" "$tmp/h1")" >&2; return 1; }
	grep -E '^\| [a-z]+ \| [0-9]+ \|' "$tmp/h0"
}
col() { awk -F'|' -v c="$1" '{ gsub(/ /, "", $c); print $c; exit }'; }

bulk() {   # VERSION BUILD: mrc_bulk 256 MiB, first and steady (third) pass
	local sp r
	MRC_SOCKET=$tmp/s timeout 120 "$2/bin/mrc_bulk" -s 256M recv >/dev/null 2>&1 &
	sp=$!
	r=$(MRC_SOCKET=$tmp/s timeout 120 "$2/bin/mrc_bulk" -s 256M -p 3 send 0) && {
		rec "$1" bulk_first "$(echo "$r" | sed -n 's/.*pass 1\/3: .* \([0-9.]*\) MB\/s/\1/p')"
		rec "$1" bulk_steady "$(echo "$r" | sed -n 's/.*pass 3\/3: .* \([0-9.]*\) MB\/s/\1/p')"
	}
	wait $sp
}

one() {   # VERSION BUILD
	local v=$1 b=$2 r sp
	lo_start "$b"
	[ "$ONLY" = bulk ] || { r=$(harness -b -z 4096 -p "$b/lib/libnccl-net-mrc.so") &&
		rec "$v" plugin_rtt_4k "$(echo "$r" | col 4)"; }
	r=$(harness -b -z 4194304 -p "$b/lib/libnccl-net-mrc.so") &&
		rec "$v" plugin_gbs_4m "$(echo "$r" | col 6)"
	if [ "$ONLY" = bulk ]; then
		r=$(harness -b -m -z 4194304 -p "$b/lib/libnccl-net-mrc.so") &&
			rec "$v" plugin_gbs_4m_memfd "$(echo "$r" | col 6)"
		bulk "$v" "$b"
		lo_stop
		return
	fi
	MRC_SOCKET=$tmp/s timeout 60 "$b/bin/mrc_pingpong" -s 64 -n 2000 server >/dev/null 2>&1 &
	sp=$!
	r=$(MRC_SOCKET=$tmp/s timeout 60 "$b/bin/mrc_pingpong" -s 64 -n 2000 client 0) &&
		rec "$v" pingpong_busy "$(echo "$r" | sed -n 's/.*median \([0-9.]*\) us.*/\1/p')"
	wait $sp
	MRC_SOCKET=$tmp/s timeout 60 "$b/bin/mrc_pingpong" -w -s 64 -n 2000 server >/dev/null 2>&1 &
	sp=$!
	r=$(MRC_SOCKET=$tmp/s timeout 60 "$b/bin/mrc_pingpong" -w -s 64 -n 2000 client 0) &&
		rec "$v" pingpong_sleep "$(echo "$r" | sed -n 's/.*median \([0-9.]*\) us.*/\1/p')"
	wait $sp
	bulk "$v" "$b"
	# libmrc directly through this mrcd, in the harness's own pattern
	r=$(harness -d -z 4096) && rec "$v" direct_rtt_4k "$(echo "$r" | col 4)"
	lo_stop
	# 64-byte WRITEs through this build's mrcd (default, and udp gso=on,
	# which a build without the option ignores) beside 64-byte UDP
	# datagrams: bench_ring part 3 (the new build's) starts its daemons
	if [ -x "$NEW/bench/bench_ring" ]; then
		r=$(MRCD_BIN=$b/bin/mrcd MRC_BENCH_RUNS=1 MRC_BENCH_RING_N=20000 \
			MRC_BENCH_RING_PART=3 timeout 120 "$NEW/bench/bench_ring" 2>/dev/null)
		rec "$v" udp_dgrams "$(echo "$r" | grep '^| 64-byte UDP' | col 3 | sed 's/(.*//')"
		rec "$v" write_rate "$(echo "$r" | grep '^| 64-byte WRITEs through mrcd |' | col 3 | sed 's/(.*//')"
		rec "$v" write_rate_gso "$(echo "$r" | grep 'gso=on |' | col 3 | sed 's/(.*//')"
	fi
}

for i in $(seq "$REPS"); do
	rec all load "$(cut -d' ' -f1 /proc/loadavg)"
	if [ $((i % 2)) = 1 ]; then one base "$BASE"; one new "$NEW"; else one new "$NEW"; one base "$BASE"; fi
	[ "$ONLY" = bulk ] || { r=$(harness -T -z 4096) && rec all tcp_rtt_4k "$(echo "$r" | col 4)"; }
	r=$(harness -T -z 4194304) && rec all tcp_gbs_4m "$(echo "$r" | col 6)"
	echo "=== client-path: rep $i/$REPS done" >&2
done
mkdir -p "$RES"
cp "$out" "$RES/client-path.raw"
python3 - "$out" "$BASE" "$NEW" "$REPS" >"$RES/client-path.md" <<'PY'
import sys, statistics as st, subprocess, platform
raw, base, new, reps = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
d, per = {}, {}
rep = 0
for line in open(raw):
    v, m, x = line.split()
    rep += (v, m) == ("all", "load")
    if x:
        d.setdefault((v, m), []).append(float(x))
        per[(v, m, rep)] = float(x)
def f(v, m, scale=1.0):
    x = d.get((v, m))
    if not x:
        return "-"
    p = 3 if scale == 1 / 8 else 1    # GB/s from Gbit/s: below 1 here
    return f"{st.median(x) * scale:.{p}f} [{min(x) * scale:.{p}f}, {max(x) * scale:.{p}f}]"
def paired(v, a, b, scale):
    """a / b of the same build in the same rep (a minute apart), over the reps:
    steadier than a ratio of medians while the load moves"""
    x = [per[(v, a, r)] * scale / per[(v, b, r)] for r in range(1, rep + 1)
         if (v, a, r) in per and (v, b, r) in per and per[(v, b, r)]]
    return f"{st.median(x):.2f}x [{min(x):.2f}, {max(x):.2f}]" if x else "-"
def med(v, m, scale=1.0):
    x = d.get((v, m))
    return st.median(x) * scale if x else float('nan')
cpu = subprocess.run("lscpu | sed -n 's/^Model name: *//p'", shell=True, capture_output=True, text=True).stdout.strip()
print("# The client path: NCCL plugin and libmrc against TCP (bench/client-path.sh)\n")
print(f"Machine: {platform.node()}, {cpu}, {subprocess.run('nproc', capture_output=True, text=True).stdout.strip()} CPUs, shared with other jobs: "
      f"load average at each rep {', '.join(f'{x:.1f}' for x in d.get(('all', 'load'), []))}.  "
      f"One loopback mrcd per build; base = `{base}`, new = `{new}`, {reps} reps alternated; "
      "medians [min, max] over the reps (each rep's figure is itself a median of 200 round trips, or a rate).\n")
print("| metric | base | new | reference |\n|---|---:|---:|---:|")
rows = [
    ("NCCL plugin, 4 KiB round trip, us", "plugin_rtt_4k", 1, f("all", "tcp_rtt_4k") + " (TCP)"),
    ("NCCL plugin, 4 MiB x 8 in flight, GB/s", "plugin_gbs_4m", 1 / 8, f("all", "tcp_gbs_4m", 1 / 8) + " (TCP)"),
    ("the same from memfd buffers (-m), GB/s", "plugin_gbs_4m_memfd", 1 / 8, ""),
    ("libmrc directly (harness -d), 4 KiB round trip, us", "direct_rtt_4k", 1, ""),
    ("mrc_pingpong 64 B, busy-polling, us", "pingpong_busy", 1, ""),
    ("mrc_pingpong 64 B, sleeping (-w), us", "pingpong_sleep", 1, ""),
    ("mrc_bulk 256 MiB steady (pass 3), MB/s", "bulk_steady", 1, ""),
    ("mrc_bulk 256 MiB first pass, MB/s", "bulk_first", 1, ""),
    ("64-byte WRITEs through mrcd, k/s (bench_ring part 3)", "write_rate", 1e-3, ""),
    ("the same, udp datapath gso=on, k/s", "write_rate_gso", 1e-3, ""),
    ("64-byte UDP datagrams alone, k/s (same run)", "udp_dgrams", 1e-3, ""),
]
for name, m, sc, ref in rows:
    print(f"| {name} | {f('base', m, sc)} | {f('new', m, sc)} | {ref} |")
print("\nRatios at the medians (goals of issue 30 in brackets):\n")
for v in ("base", "new"):
    p, pp, tcp = med(v, "plugin_rtt_4k"), med(v, "pingpong_busy"), med("all", "tcp_rtt_4k")
    g, bulk, tg = med(v, "plugin_gbs_4m", 1 / 8), med(v, "bulk_steady", 1e-3), med("all", "tcp_gbs_4m", 1 / 8)
    print(f"- {v}: plugin 4 KiB RTT / mrc_pingpong {p / pp:.2f}x (<= 2), / TCP {p / tcp:.2f}x (<= 3); "
          f"plugin 4 MiB GB/s / mrc_bulk steady {g / bulk:.2f}x (>= 0.9), / TCP {g / tg:.2f}x (>= 1); "
          f"64-byte WRITEs / UDP datagrams {med(v, 'write_rate') / med(v, 'udp_dgrams'):.2f}x, "
          f"gso=on {med(v, 'write_rate_gso') / med(v, 'udp_dgrams'):.2f}x (>= 0.5)")
print("\nPer rep, the plugin's 4 MiB stream over mrc_bulk's steady state, same build, same rep "
      "(median [min, max] over the reps):\n")
for v in ("base", "new"):
    print(f"- {v}: {paired(v, 'plugin_gbs_4m', 'bulk_steady', 1e3 / 8)}"
          + (f"; from memfd buffers {paired(v, 'plugin_gbs_4m_memfd', 'bulk_steady', 1e3 / 8)}"
             if (v, 'plugin_gbs_4m_memfd') in d else ""))
PY
cat "$RES/client-path.md"
