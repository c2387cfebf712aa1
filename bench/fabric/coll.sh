#!/bin/bash
# Scenario: collectives on one rate-limited fabric (libmrc-coll vs Open MPI).
# NR ranks (default 4) on hosts h0..h(NR-1) (the hosts Open MPI's mpi_perf
# uses), mrcd on each, one mrc-coll-perf per rank.
#   1. capacity check: the ring's traffic pattern (rank i -> rank i+1, all
#      at once) with libmrc directly (mrc_bulk): each pair's goodput as a
#      share of a host's NIC capacity (RATE x planes); ~0.95 means the
#      CPU is not what limits the fabric at this rate;
#   2. all-reduce and all-to-all busbw, 1 KiB .. MAXB (default 256M),
#      healthy, then with spine p0s1 silently blackholed: busbw / bound;
#   3. the same sweeps with Open MPI (bench/fabric/mpi.sh `mpi_perf`, over
#      the --ecmp baseline routes) when it exists and mpirun is installed;
#   4. MoE dispatch + combine (T tokens x H hidden bf16, E experts, top-k),
#      flat vs 2-D hierarchical, per-rank vs per-expert dispatch, with 1
#      and 2 ranks per host, medians and phase times.
# The bound: all-reduce and all-to-all busbw cannot exceed what one host's
# NICs carry, RATE x PLANES Mbit/s (nccl-tests' busbw is defined so that
# it is compared with the per-host link bandwidth).
# Results: bench/results/raw/coll.jsonl and bench/results/coll.md (parts
# algo and a2a run alone: their own raw file and .md only).
# MRC_BENCH_COLL_PARTS="check sweep mpi moe" picks parts (also "algo":
# ring, tree and forest side by side, and "a2a": all-to-all spray vs
# spread, healthy vs blackholed, both below);
# MRC_BENCH_COLL_COLLS="all_reduce alltoall" and MRC_BENCH_COLL_FAULTS=
# "healthy blackhole" pick the sweep's collectives and faults,
# MRC_BENCH_COLL_MIN (default 1K) its smallest size;
# MRC_BENCH_COLL_MRCD_ARGS adds mrcd options (e.g. "--mtu 8192");
# MRC_BENCH_COLL_DIAG=DIR saves, before and after the check and each sweep, every
# mrcd's counters and paths and the leaves' uplink qdisc counters there.
SCEN=coll
RATE=${MRC_BENCH_RATE:-100}
NR=${MRC_BENCH_COLL_RANKS:-4}
MAXB=${MRC_BENCH_COLL_MAX:-256M}
PARTS=${MRC_BENCH_COLL_PARTS:-check sweep mpi moe}
COLLS=${MRC_BENCH_COLL_COLLS:-all_reduce alltoall}
FAULTS=${MRC_BENCH_COLL_FAULTS:-healthy blackhole}
MINB=${MRC_BENCH_COLL_MIN:-1K}
DIAG=${MRC_BENCH_COLL_DIAG:-}
# 8 KiB payloads: the fabric's MTU is 9216 (Open MPI's TCP uses it too); at
# 4 KiB headers and ACKs cost about 2 % more of every link.
MRCD_ARGS=${MRC_BENCH_COLL_MRCD_ARGS---mtu 8192}
. bench/fabric/lib.sh
part() { case " $PARTS " in *" $1 "*) return 0 ;; esac; return 1; }
MD="$RES/coll.md"
PERF=$B/bin/mrc-coll-perf
declare -A DPID
sock() { echo "$TMP/$1/mrcd.sock"; }
until_t() {
	local end=$(($(date +%s) + $1)); shift
	while ! "$@"; do [ "$(date +%s)" -lt $end ] || return 1; sleep 0.05; done
}
# The main parts write raw/coll.jsonl and coll.md; run alone, algo and a2a
# keep their own raw file (raw/coll_algo.jsonl, raw/coll_a2a.jsonl) and
# leave coll.md and its raw rows as they are.
main_parts() { part check || part sweep || part mpi || part moe; }
main_parts || RAW="$RES/raw/coll_$(echo $PARTS | tr ' ' '_').jsonl"
start_raw
fab_up
CAP=$((RATE * PLANES))
BOUND=$(awk -v m=$CAP 'BEGIN{printf "%.4f", m / 8000}')   # GB/s
HOSTS=(); for ((i = 0; i < NR; i++)); do HOSTS+=($i); done
jq '.topology' /run/mrc-fabric/$P/state.json >"$TMP/topo.json"
for h in "${HOSTS[@]}"; do
	mkdir -p "$TMP/h$h"
	bg ip netns exec $P-h$h "$B/bin/mrcd" --topology "$TMP/topo.json" --host h$h \
		--socket "$(sock h$h)" --key_file "$TMP/cluster.key" --log_level warning $MRCD_ARGS 2>>"$TMP/h$h.log"
	DPID[$h]=$BGPID
	until_t 10 test -S "$TMP/h$h/mrcctl.sock" || { say "mrcd on h$h did not start"; cat "$TMP/h$h.log"; exit 1; }
done
say "$NR ranks on hosts ${HOSTS[*]}; bound: host NIC capacity $CAP Mbit/s = $BOUND GB/s"
emit "{\"kind\":\"meta\",\"date\":\"$(date -u '+%Y-%m-%d %H:%M UTC')\",\"cpu\":\"$(awk -F': ' '/model name/{print $2; exit}' /proc/cpuinfo)\",\"ncpu\":$(nproc),\"kernel\":\"$(uname -r)\",\"rate_mbit\":$RATE,\"planes\":$PLANES,\"ranks\":$NR,\"bound_gbs\":$BOUND,\"mrcd_args\":\"$MRCD_ARGS\",\"load\":\"$(cut -d' ' -f1-3 /proc/loadavg)\"}"

# diag TAG: every mrcd's counters and paths to every other rank's host,
# and the qdisc counters of every leaf's ports, into $DIAG/TAG.*
diag() {
	[ -n "$DIAG" ] || return 0
	mkdir -p "$DIAG"
	local h d pl l
	for h in "${HOSTS[@]}"; do
		$B/bin/mrcctl -j -s "$TMP/h$h/mrcctl.sock" stats >"$DIAG/$1.stats.h$h" 2>&1 || true
		$B/bin/mrcctl -j -s "$TMP/h$h/mrcctl.sock" qps >"$DIAG/$1.qps.h$h" 2>&1 || true
		$B/bin/mrcctl -j -s "$TMP/h$h/mrcctl.sock" events -n 200 >"$DIAG/$1.events.h$h" 2>&1 || true
		for d in "${HOSTS[@]}"; do
			[ $d = $h ] || $B/bin/mrcctl -j -s "$TMP/h$h/mrcctl.sock" paths h$d \
				>"$DIAG/$1.paths.h$h.h$d" 2>&1 || true
		done
	done
	for pl in 0 1; do for l in 0 1 2 3; do
		ip netns exec $P-p${pl}l$l tc -s -j qdisc show >"$DIAG/$1.tc.p${pl}l$l" 2>&1 || true
	done; done
}
# ---- 1. capacity check: the ring pattern with libmrc directly ------------
part check && {
BYTES=${MRC_BENCH_COLL_CHECK_BYTES:-$((RATE * PLANES * 1000000 / 8 * 4))}   # ~4 s at the bound
sid=7300; rps=(); sps=()
diag check.healthy.0
for ((i = 0; i < NR; i++)); do
	d=${HOSTS[$(((i + 1) % NR))]}
	bg "$B/bin/mrc_bulk" -S "$(sock h$d)" -s "$BYTES" -i $((sid + i)) recv >"$TMP/chk.recv.$i" 2>&1
	rps+=($BGPID)
done
set -- $(cpu_stat)
for ((i = 0; i < NR; i++)); do
	d=${HOSTS[$(((i + 1) % NR))]}
	bg "$B/bin/mrc_bulk" -S "$(sock h${HOSTS[$i]})" -s "$BYTES" -i $((sid + i)) send $d >"$TMP/chk.send.$i" 2>&1
	sps+=($BGPID)
done
for p in "${sps[@]}" "${rps[@]}"; do reap "$p" 120 || true; done
set -- "$@" $(cpu_stat)
diag check.healthy.1
busy=$(awk -v a="$1" -v i="$2" -v b="$3" -v j="$4" 'BEGIN{d=(b-a)+(j-i); printf "%.3f", (d>0?(b-a)/d:0)}')
shares=""
for ((i = 0; i < NR; i++)); do
	secs=$(sed -n 's/.* in \([0-9.]*\) s:.*/\1/p' "$TMP/chk.send.$i")
	sh=$(awk -v s="${secs:-0}" -v b="$BYTES" -v c=$CAP 'BEGIN{printf "%.3f", (s > 0 ? b * 8 / s / 1e6 / c : 0)}')
	shares="$shares${shares:+,}$sh"
done
emit "{\"kind\":\"check\",\"bytes\":$BYTES,\"shares\":[$shares],\"busy\":$busy}"
say "capacity check (ring pattern, $NR pairs of mrc_bulk at once): goodput / $CAP Mbit/s = [$shares], machine busy $busy"
}

# ---- 2. collectives: mrc ---------------------------------------------------
# coll_run TAG COLL ARGS...: one mrc-coll-perf per rank; rank 0's rows to
# $TMP/TAG (size count type redop root time algbw busbw wrong).
csid=7400
coll_run() {
	local tag=$1 coll=$2 i pids=() rc=0; shift 2
	csid=$((csid + 1))
	for ((i = 0; i < NR; i++)); do
		bg env MRC_COLL_SIZE=$NR MRC_COLL_RANK=$i ip netns exec $P-h${HOSTS[$i]} $PERF \
			-S "$(sock h${HOSTS[$i]})" -H ${HOSTS[0]} -s $csid -C $coll "$@" >"$TMP/$tag.$i" 2>&1
		pids+=($BGPID)
	done
	for p in "${pids[@]}"; do reap "$p" 600 || rc=$?; done
	[ $rc = 0 ] || say "$tag: exit $rc: $(tail -n3 "$TMP"/$tag.* | tr '\n' ' ')"
	grep '^ ' "$TMP/$tag.0" >"$TMP/$tag" || true
	return $rc
}
# bytes SIZE: 4K, 16M, 1G as a number of bytes
bytes() {
	case $1 in
	*K) echo $((${1%K} << 10)) ;; *M) echo $((${1%M} << 20)) ;;
	*G) echo $((${1%G} << 30)) ;; *) echo "$1" ;;
	esac
}
# sweep TAG COLL: MINB .. MAXB by 4x; 20 timed runs up to 1 MiB, 2 above
# (after one warm-up; -c 1: one more, checked element by element).
sweep() {
	local tag=$1 coll=$2 lo=4M
	: >"$TMP/$tag.s"; : >"$TMP/$tag.l"
	[ "$(bytes "$MINB")" -le $((1 << 20)) ] &&
		coll_run "$tag.s" $coll -d float -o sum -b "$MINB" -e 1M -f 4 -n 20 -w 3 -c 1
	[ "$(bytes "$MINB")" -gt $((4 << 20)) ] && lo=$MINB
	[ "$(bytes "$MAXB")" -ge "$(bytes $lo)" ] &&
		coll_run "$tag.l" $coll -d float -o sum -b $lo -e "$MAXB" -f 4 -n 2 -w 1 -c 1
	cat "$TMP/$tag.s" "$TMP/$tag.l" >"$TMP/$tag"
}
# rows_json TAG CONTENDER COLL FAULT: one JSON line per row; algbw and
# busbw recomputed from size and time (the tools print 3 decimals of GB/s,
# too coarse at these rates), busbw with nccl-tests' factors.
rows_json() {
	awk -v c="$2" -v k="$3" -v f="$4" -v b="$BOUND" -v n="$NR" '{
		fac = (k == "all_reduce") ? 2 * (n - 1) / n : (n - 1) / n
		alg = ($6 > 0) ? $1 / $6 / 1e3 : 0
		printf "{\"kind\":\"coll\",\"contender\":\"%s\",\"coll\":\"%s\",\"fault\":\"%s\",\"bytes\":%d,\"time_us\":%s,\"algbw\":%.6f,\"busbw\":%.6f,\"wrong\":%d,\"bound\":%s,\"ratio\":%.3f}\n", c, k, f, $1, $6, alg, alg * fac, $9, b, alg * fac / b
	}' "$TMP/$1" >>"$RAW"
}
part sweep && {
for fault in $FAULTS; do
	[ $fault = blackhole ] && { $F fail p0s1 --silent >/dev/null; say "spine p0s1 silently blackholed"; }
	for coll in $COLLS; do
		say "mrc $coll $fault: $MINB .. $MAXB"
		diag "$coll.$fault.0"
		sweep "mrc.$coll.$fault" $coll
		diag "$coll.$fault.1"
		rows_json "mrc.$coll.$fault" mrc $coll $fault
		tail -n1 "$TMP/mrc.$coll.$fault" | while read -r l; do say "  $l"; done
	done
	[ $fault = blackhole ] && $F restore >/dev/null
done
}

# ---- 2b. all-reduce algorithms side by side (MRC_BENCH_COLL_PARTS=algo) ----
# ring, tree and forest (2 planes, HOSTS_PER_LEAF hosts per leaf) in turn,
# MRC_BENCH_COLL_ALGO_ROUNDS rounds (default 3), each MRC_BENCH_COLL_ALGO_MIN
# .. MRC_BENCH_COLL_ALGO_MAX (default 16K .. 16M) by 4x
# with -n 5 timed runs after one warm-up: rank 0's mean per round, the
# median of the rounds in $RES/coll_algo.md (docs/coll.md "Choosing by
# size" reads it).
part algo && {
for ((rd = 1; rd <= ${MRC_BENCH_COLL_ALGO_ROUNDS:-3}; rd++)); do
	for a in ring tree forest; do
		MRC_COLL_ALGO=$a MRC_COLL_PLANES=$PLANES MRC_COLL_HOSTS_PER_LEAF=$HOSTS_PER_LEAF \
			coll_run "algo.$a.$rd" all_reduce -d float -o sum -b ${MRC_BENCH_COLL_ALGO_MIN:-16K} -e ${MRC_BENCH_COLL_ALGO_MAX:-16M} -f 4 -n 5 -w 1 -c 1 || true
		awk -v a=$a -v rd=$rd '{printf "{\"kind\":\"algo\",\"algo\":\"%s\",\"round\":%d,\"bytes\":%d,\"time_us\":%s,\"wrong\":%d}\n", a, rd, $1, $6, $9}' \
			"$TMP/algo.$a.$rd" >>"$RAW"
		say "  round $rd $a: $(awk '{printf "%s:%s ", $1, $6}' "$TMP/algo.$a.$rd")"
	done
done
python3 - "$RAW" "$(date -u '+%Y-%m-%d %H:%M UTC')" "$(cut -d' ' -f1-3 /proc/loadavg)" "$NR" >"$RES/coll_algo.md" <<'PY'
import json, statistics, sys
raw, date, load, nr = sys.argv[1:5]
rows = [json.loads(l) for l in open(raw) if '"kind":"algo"' in l]
t = {}
for r in rows:
    t.setdefault(r["bytes"], {}).setdefault(r["algo"], []).append(r["time_us"])
print(f"# All-reduce: ring, tree and forest on the emulated fabric\n")
print(f"bench/fabric/coll.sh part `algo`, {date}; {nr} ranks, one per host, 2 planes, 2 hosts per leaf, 100 Mbit/s links; "
      f"load at the end {load} (2 cores shared with other work).  Median over rounds of each round's mean time (us) of 5 runs; "
      f"wrong elements over all rows: {sum(r['wrong'] for r in rows)}.\n")
print("| size | ring us | tree us | forest us | tree / ring | forest / ring | rounds |")
print("|---|--:|--:|--:|--:|--:|--:|")
for b in sorted(t):
    m = {a: statistics.median(v) for a, v in t[b].items()}
    ring = m.get("ring")
    f = lambda a: f"{m[a]:.0f}" if a in m else "-"
    q = lambda a: f"{m[a] / ring:.2f}" if a in m and ring else "-"
    size = f"{b >> 20}M" if b >= 1 << 20 else f"{b >> 10}K" if b >= 1 << 10 else f"{b}"
    print(f"| {size} | {f('ring')} | {f('tree')} | {f('forest')} | {q('tree')} | {q('forest')} | {len(t[b].get('ring', []))} |")
PY
say "wrote $RES/coll_algo.md"
}

# ---- 2c. all-to-all: spraying vs spreading, healthy vs blackholed --------
# (MRC_BENCH_COLL_PARTS=a2a) Rounds of (healthy, spine p0s1 silently
# blackholed) x (spray: MRC_COLL_PLANES=1, every chunk of a peer on its one
# QP, the transport sprays its packets over the planes in turn; spread:
# MRC_COLL_PLANES=$PLANES, each chunk on whichever of the peer's
# plane-pinned QPs has room), 16M and 64M (-n 3 after one warm-up); the
# median of the rounds' means in $RES/coll_a2a.md.
part a2a && {
for ((rd = 1; rd <= ${MRC_BENCH_COLL_A2A_ROUNDS:-3}; rd++)); do
	for fault in healthy blackhole; do
		[ $fault = blackhole ] && $F fail p0s1 --silent >/dev/null
		for v in spray spread; do
			pl=1; [ $v = spread ] && pl=$PLANES
			MRC_COLL_PLANES=$pl MRC_COLL_HOSTS_PER_LEAF=$HOSTS_PER_LEAF \
				coll_run "a2a.$fault.$v.$rd" alltoall -d float -o sum -b 16M -e ${MRC_BENCH_COLL_A2A_MAX:-64M} -f 4 -n 3 -w 1 -c 1 || true
			awk -v v=$v -v f=$fault -v rd=$rd '{printf "{\"kind\":\"a2a\",\"variant\":\"%s\",\"fault\":\"%s\",\"round\":%d,\"bytes\":%d,\"time_us\":%s,\"wrong\":%d}\n", v, f, rd, $1, $6, $9}' \
				"$TMP/a2a.$fault.$v.$rd" >>"$RAW"
			say "  round $rd $fault $v: $(awk '{printf "%s:%s ", $1, $6}' "$TMP/a2a.$fault.$v.$rd")"
		done
		[ $fault = blackhole ] && $F restore >/dev/null
	done
done
python3 - "$RAW" "$(date -u '+%Y-%m-%d %H:%M UTC')" "$(cut -d' ' -f1-3 /proc/loadavg)" "$NR" "$BOUND" >"$RES/coll_a2a.md" <<'PY'
import json, statistics, sys
raw, date, load, nr, bound = sys.argv[1:6]
rows = [json.loads(l) for l in open(raw) if '"kind":"a2a"' in l]
t = {}
for r in rows:
    t.setdefault((r["bytes"], r["variant"], r["fault"]), []).append(r["time_us"])
n = int(nr)
print("# All-to-all on the emulated fabric: spray vs spread, healthy vs blackholed\n")
print(f"bench/fabric/coll.sh part `a2a`, {date}; {nr} ranks, one per host, 2 planes, 2 hosts per leaf, 100 Mbit/s links, "
      f"spine p0s1 silently blackholed in every other pass; load at the end {load} (2 cores shared with other work).  "
      f"Median over rounds of each round's mean time of 3 runs; busbw / bound ({bound} GB/s); "
      f"wrong elements over all rows: {sum(r['wrong'] for r in rows)}.\n")
print("| size | variant | healthy ms | blackholed ms | blackholed / healthy | healthy busbw / bound | rounds |")
print("|---|---|--:|--:|--:|--:|--:|")
for b in sorted({k[0] for k in t}):
    for v in ("spray", "spread"):
        h, x = t.get((b, v, "healthy")), t.get((b, v, "blackhole"))
        if not h or not x:
            continue
        mh, mx = statistics.median(h), statistics.median(x)
        bus = b / mh / 1e3 * (n - 1) / n
        print(f"| {b >> 20}M | {v} | {mh / 1e3:.0f} | {mx / 1e3:.0f} | {mx / mh:.2f} | {bus / float(bound):.2f} | {len(h)} |")
PY
say "wrote $RES/coll_a2a.md"
}

# ---- 3. Open MPI on the same fabric and hosts (bench/fabric/mpi.sh) ------
MPI_WHY=""
if [ ! -f bench/fabric/mpi.sh ]; then
	MPI_WHY="bench/fabric/mpi.sh not in this tree"
elif ! command -v mpirun >/dev/null; then
	MPI_WHY="mpirun not installed (scripts/deps.sh: openmpi-bin)"
else
	. bench/fabric/mpi.sh
	mpi_available 2>"$TMP/mpi.why" || MPI_WHY=$(cat "$TMP/mpi.why")
fi
part mpi && [ -z "$MPI_WHY" ] && {
for fault in healthy blackhole; do
	[ $fault = blackhole ] && { $F fail p0s1 --silent >/dev/null; say "spine p0s1 silently blackholed"; }
	for coll in all_reduce alltoall; do
		mc=$coll; [ $coll = alltoall ] && mc=all_to_all
		say "Open MPI $coll $fault: 1K .. $MAXB"
		MRC_MPI_ITERS=20 MRC_MPI_WARMUP=3 mpi_perf $mc $NR 1K 1M >"$TMP/mpi.$coll.$fault" 2>"$TMP/mpi.err" ||
			say "Open MPI $coll $fault (small): $(tail -n2 "$TMP/mpi.err" | tr '\n' ' ')"
		# A 256 MiB all-reduce at 100 Mbit/s takes ~35 s a run under Open MPI,
		# 4 runs a size: past mpi.sh's default 120 s per size.
		MRC_MPI_SIZE_TIMEOUT=${MRC_MPI_SIZE_TIMEOUT:-900} MRC_MPI_TIMEOUT=${MRC_MPI_TIMEOUT:-1800} \
		MRC_MPI_ITERS=2 MRC_MPI_WARMUP=1 mpi_perf $mc $NR 4M "$MAXB" >>"$TMP/mpi.$coll.$fault" 2>"$TMP/mpi.err" ||
			say "Open MPI $coll $fault (large): $(tail -n2 "$TMP/mpi.err" | tr '\n' ' ')"
		rows_json "mpi.$coll.$fault" mpi $coll $fault
		tail -n1 "$TMP/mpi.$coll.$fault" | while read -r l; do say "  $l"; done
	done
	[ $fault = blackhole ] && $F restore >/dev/null
done
}
[ -n "$MPI_WHY" ] && { say "Open MPI: skipped ($MPI_WHY)"; emit "{\"kind\":\"mpi_skipped\",\"why\":$(jq -Rn --arg w "$MPI_WHY" '$w')}"; }

# ---- 4. MoE dispatch + combine, flat vs 2-D --------------------------------
# The layer on NR hosts with 1 rank per host (2-D's "nodes": host pairs, so
# the intra-node hop crosses the fabric) and with 2 per host (2*NR ranks,
# consecutive ranks on one host: the intra-node hop goes through shared
# memory, or with MRC_COLL_SHM=0 through that host's one mrcd).  Variants (MRC_BENCH_COLL_MOE_VARIANTS, default all):
# flat and 2d with the per-rank dispatch (2d also once per node), flat-pe
# and 2d-pe with the old per-expert one, 2d-rank the 2-D without the node
# dedupe; alternated, MRC_BENCH_COLL_MOE_RUNS timed runs each;
# every configuration bounded by MRC_BENCH_COLL_MOE_TIMEOUT seconds;
# MRC_BENCH_COLL_MOE_RPN lists the ranks per host (default "1 2");
# MRC_BENCH_COLL_MOE_SHM lists MRC_COLL_SHM settings run in turn, e.g.
# "1 0 1 0" (default: unset, the library's default, shared memory on):
# each a field "shm" of the raw rows, rank 0's output
# raw/coll_moe<rpn>_shm<s>_<k>.txt (k: the setting's place in the list).
part moe && {
MOE=${MRC_BENCH_COLL_MOE:-4096,4096,8,2}
MOEV=${MRC_BENCH_COLL_MOE_VARIANTS:-flat,2d,flat-pe,2d-pe}
MOET=${MRC_BENCH_COLL_MOE_TIMEOUT:-480}
# moe_run TAG RPN: RPN ranks on each of the NR hosts, rank 0's output to
# $TMP/TAG.0.
moe_run() {
	local tag=$1 rpn=$2 nrk=$(($2 * NR)) L=$2 i h pids=() rc=0 shm=()
	[ -n "$MOESHM" ] && shm=(MRC_COLL_SHM=$3)
	[ "$L" = 1 ] && L=2
	csid=$((csid + 1))
	for ((i = 0; i < nrk; i++)); do
		h=${HOSTS[$((i / rpn))]}
		bg env "${shm[@]}" MRC_COLL_SIZE=$nrk MRC_COLL_RANK=$i MRC_COLL_MOE_VARIANTS=$MOEV \
			ip netns exec $P-h$h timeout $MOET $PERF -S "$(sock h$h)" -H ${HOSTS[0]} -s $csid \
			-C moe -M "$MOE,$L" -n ${MRC_BENCH_COLL_MOE_RUNS:-3} >"$TMP/$tag.$i" 2>&1
		pids+=($BGPID)
	done
	for p in "${pids[@]}"; do reap "$p" $((MOET + 10)) || rc=$?; done
	[ $rc = 0 ] || say "$tag: exit $rc (124: past ${MOET} s): $(tail -n2 "$TMP/$tag.0" | tr '\n' ' ')"
	return $rc
}
MOESHM=${MRC_BENCH_COLL_MOE_SHM:-}
for rpn in ${MRC_BENCH_COLL_MOE_RPN:-1 2}; do
k=0
for shm in ${MOESHM:-default}; do
	k=$((k + 1)); tag=moe$rpn; raw=coll_moe$rpn.txt
	[ -n "$MOESHM" ] && tag=moe${rpn}s${shm}_$k && raw=coll_moe${rpn}_shm${shm}_$k.txt
	say "MoE layer $MOE (tokens,hidden,experts,top-k per rank, bf16), $rpn rank(s) per host, $((rpn * NR)) ranks: $MOEV${MOESHM:+; MRC_COLL_SHM=$shm}"
	t0=$(date +%s); load=$(cut -d' ' -f1-3 /proc/loadavg)
	moe_run $tag $rpn $shm || emit "{\"kind\":\"moe_failed\",\"rpn\":$rpn,\"ranks\":$((rpn * NR)),\"why\":$(grep -v '^#' "$TMP/$tag.0" | tail -n1 | jq -Rs .)}"
	cp "$TMP/$tag.0" "$RES/raw/$raw"   # rank 0's output, runs included
	grep -v '^#' "$TMP/$tag.0" | while read -r l; do say "  $l"; done
	# One JSON line per variant: median ms, pairs and rows sent to other
	# ranks (all ranks), their MB, #wrong, and the phases' medians (ms).
	awk -v layer="$MOE" -v rpn=$rpn -v nrk=$((rpn * NR)) -v secs=$(($(date +%s) - t0)) -v load="$load" -v shm="$shm" '
		$1 == "phase" { ph[$2] = $3; for (i = 4; i <= NF; i++) ph[$2] = ph[$2] "," $i; next }
		/^#/ || $1 == "2-D/flat" { next }
		NF >= 9 { v = ($1 == "2-D") ? "2d" : $1; ms[v] = $2; wr[v] = $4; pa[v] = $5; ro[v] = $6; mb[v] = $7; xr[v] = $8; xm[v] = $9; ord[++n] = v }
		END { for (i = 1; i <= n; i++) { v = ord[i]
			printf "{\"kind\":\"moe\",\"layer\":\"%s\",\"rpn\":%d,\"ranks\":%d,\"secs\":%d,\"load\":\"%s\",%s\"variant\":\"%s\",\"ms\":%s,\"wrong\":%s,\"pairs_out\":%s,\"rows_out\":%s,\"mb_out\":%s,\"rows_xnode\":%s,\"mb_xnode\":%s,\"phases_ms\":[%s]}\n", layer, rpn, nrk, secs, load, shm == "default" ? "" : "\"shm\":" shm ",", v, ms[v], wr[v], pa[v], ro[v], mb[v], xr[v], xm[v], ph[v] } }
	' "$TMP/$tag.0" >>"$RAW"
	say "  ($(($(date +%s) - t0)) s)"
done
done
}

if main_parts; then
	python3 bench/fabric/coll_md.py "$RAW" >"$MD"
	say "wrote $MD"
fi
