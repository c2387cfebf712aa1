#!/bin/bash
# Scenario: a training step end to end (issue 33 item 4; docs/step.md).
# 8 ranks, one per host of the rate-limited 2-plane fabric, mrcd on each,
# one mrc-step per rank.  Per rep, alternated in one run:
#   healthy    mrc-step, blocking and overlapped gradients side by side
#              (the tool alternates them step by step): step time,
#              exposed communication, time to N steps (MLPerf: the runs'
#              best and worst dropped);
#   blackhole  the same with spine p0s1 silently blackholed at step K of
#              the first run (mrc-step -k: rank 0 pauses there until the
#              fault is in), restored after: step blackholed / healthy;
#   mpi        the same step over Open MPI's non-blocking collectives
#              (bench/mpi_step, TCP BTL over the --ecmp baseline routes, as
#              bench/fabric/mpi.sh runs mpi_coll), when mpirun and mpicc
#              are there.
# Medians over the reps with [min, max], the load average per row.  Raw
# lines in bench/results/raw/step.jsonl, the table in bench/results/step.md.
# Usage (root): bench/fabric/step.sh; env B (build), MRC_BENCH_REPS (3),
# MRC_BENCH_RATE (Mbit/s per link, 1000), MRC_BENCH_STEP_ARGS (the step:
# mrc-step key=value pairs, default below), MRC_BENCH_STEP_K (3),
# MRC_BENCH_STEP_PARTS ("healthy blackhole mpi").
SCEN=step
RATE=${MRC_BENCH_RATE:-1000}
K=${MRC_BENCH_STEP_K:-3}
PARTS=${MRC_BENCH_STEP_PARTS:-healthy blackhole mpi}
# Compute long enough to hide the gradients' communication on this fabric
# of namespaces; the stub sleeps (8 mrcd and 8 ranks share the cores).
ARGS=${MRC_BENCH_STEP_ARGS:-layers=4 fwd=20ms bwd=40ms tokens=128 tok=2K topk=2 local=2 cap=1.25 skew=0.5 grad=512K bucket=1M stage=256K stub=sleep steps=6 runs=3 warm=1}
. bench/fabric/lib.sh
part() { case " $PARTS " in *" $1 "*) return 0 ;; esac; return 1; }
STEP=$B/bin/mrc-step
NR=8
declare -A DPID
sock() { echo "$TMP/$1/mrcd.sock"; }
until_t() {
	local end=$(($(date +%s) + $1)); shift
	while ! "$@"; do [ "$(date +%s)" -lt $end ] || return 1; sleep 0.05; done
}
start_raw
fab_up
jq '.topology' /run/mrc-fabric/$P/state.json >"$TMP/topo.json"
for h in 0 1 2 3 4 5 6 7; do
	mkdir -p "$TMP/h$h"
	bg ip netns exec $P-h$h "$B/bin/mrcd" --topology "$TMP/topo.json" --host h$h \
		--socket "$(sock h$h)" --key_file "$TMP/cluster.key" --log_level warning 2>>"$TMP/h$h.log"
	DPID[$h]=$BGPID
	until_t 10 test -S "$TMP/h$h/mrcctl.sock" || { say "mrcd on h$h did not start"; cat "$TMP/h$h.log"; exit 1; }
done
MPI_OK=0
if part mpi; then
	. bench/fabric/mpi.sh
	MPI_COLL=$B/bench/mpi_step   # what mpi_available checks for
	mpi_available && MPI_OK=1 || say "mpi: skipped"
fi
emit "{\"kind\":\"meta\",\"date\":\"$(date -u '+%Y-%m-%d %H:%M UTC')\",\"cpu\":\"$(awk -F': ' '/model name/{print $2; exit}' /proc/cpuinfo)\",\"ncpu\":$(nproc),\"rate_mbit\":$RATE,\"planes\":$PLANES,\"ranks\":$NR,\"args\":\"$ARGS\",\"k\":$K}"
say "8 ranks, step: $ARGS"

sid=8000
# run_step TAG [mrc-step options]: 8 ranks; rank 0's JSON line into $TMP/TAG.json.
run_step() {
	local tag=$1 r pids=() rc=0; shift
	sid=$((sid + 10))
	for r in 0 1 2 3 4 5 6 7; do
		# shellcheck disable=SC2086
		MRC_COLL_SIZE=$NR MRC_COLL_RANK=$r ip netns exec $P-h$r $STEP -S "$(sock h$r)" -H 0 -s $sid \
			-T 30000 -j "$@" $ARGS >"$TMP/$tag.$r" 2>&1 &
		pids+=($!)
	done
	[ "${FAULT:-}" ] && { until_t 120 grep -q "^# mrc-step: at step $K" "$TMP/$tag.0" &&
		$F fail p0s1 --silent >/dev/null && echo injected >"$TMP/$tag.injected"; touch "$TMP/go"; }
	for r in "${pids[@]}"; do wait "$r" || rc=1; done
	grep -h '^{' "$TMP/$tag.0" >"$TMP/$tag.json" || rc=1
	[ $rc = 0 ] || say "$tag: failed: $(grep -h mrc-step "$TMP"/$tag.* | head -n 3 | tr '\n' ' ')"
	return $rc
}
run_mpi() {
	local tag=$1 rc=0
	: >"$TMP/mpi.hosts"
	for h in 0 1 2 3 4 5 6 7; do echo "h$h slots=1" >>"$TMP/mpi.hosts"; done
	mkdir -p "$TMP/ompi"
	# shellcheck disable=SC2086
	MRC_MPI_PREFIX=$P MRC_MPI_SIDS=$MPI_SIDS MRC_MPI_TMP="$TMP/ompi" TMPDIR="$TMP/ompi" \
	timeout -k 5 600 ip netns exec "$P-h0" \
		mpirun --allow-run-as-root -np $NR --hostfile "$TMP/mpi.hosts" --map-by node \
		--bind-to none --mca plm_rsh_agent "$MPI_AGENT" --mca plm_rsh_no_tree_spawn 1 \
		--mca orte_leave_session_attached 1 --mca mpi_yield_when_idle 1 \
		--mca pml ob1 --mca btl tcp,self \
		--mca btl_tcp_if_exclude lo --mca oob_tcp_if_exclude lo \
		"$B/bench/mpi_step" -j $ARGS >"$TMP/$tag.out" 2>"$TMP/$tag.err" || rc=$?
	mpi_reap
	grep -h '^{' "$TMP/$tag.out" >"$TMP/$tag.json" || { say "$tag: failed (rc $rc): $(tail -n 3 "$TMP/$tag.err" | tr '\n' ' ')"; return 1; }
}
row() {   # row TAG REP: the raw line of a run
	emit "$(jq -c --arg tag "$1" --argjson rep "$2" --arg load "$(cut -d' ' -f1-3 /proc/loadavg)" \
		'{kind: $tag, rep: $rep, load: $load} + .' "$TMP/$1.json")"
}
for rep in $(seq 1 $REPS); do
	part healthy && run_step healthy && row healthy $rep
	if part blackhole; then
		rm -f "$TMP/go" "$TMP/bh.injected"
		FAULT=1 run_step bh -k "$K:$TMP/go" && [ -f "$TMP/bh.injected" ] && row bh $rep
		$F restore >/dev/null || say "mrc-fabric restore failed"
	fi
	[ $MPI_OK = 1 ] && run_mpi mpi && row mpi $rep
	say "rep $rep done (load $(cut -d' ' -f1 /proc/loadavg))"
done
python3 - "$RAW" "$RES/step.md" <<'PY'
import json, statistics as st, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
meta = rows[0]
def fig(kind, mode, key):
    v = [r[mode][key] for r in rows if r.get("kind") == kind and mode in r]
    return v
def cell(v, scale=1e-3):
    if not v: return "-"
    return "%.1f [%.1f, %.1f]" % (st.median(v) * scale, min(v) * scale, max(v) * scale)
out = ["# Training step (mrc-step, issue 33 item 4)", "",
       "bench/fabric/step.sh, %s, %s x%d, %d ranks on the 2-plane fabric at %d Mbit/s per link." %
       (meta["date"], meta["cpu"], meta["ncpu"], meta["ranks"], meta["rate_mbit"]),
       "Step: `%s`; spine p0s1 blackholed at step %d of the first run." % (meta["args"], meta["k"]), "",
       "Milliseconds: median [min, max] over the reps; loads: %s." %
       ", ".join(sorted({r["load"] for r in rows[1:]})), "",
       "| row | mode | step | trimmed step (MLPerf) | time to N | compute | exposed | MoE wait | grad wait at end |",
       "|---|---|---|---|---|---|---|---|---|"]
for kind, name in (("healthy", "mrc-step"), ("bh", "mrc-step, spine blackholed"), ("mpi", "Open MPI")):
    for mode in ("blocking", "overlap"):
        if not fig(kind, mode, "step_us"): continue
        out.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (name, mode,
            cell(fig(kind, mode, "step_us")), cell(fig(kind, mode, "step_trimmed_us")),
            cell(fig(kind, mode, "time_to_n_us")), cell(fig(kind, mode, "compute_us")),
            cell(fig(kind, mode, "exposed_us")), cell(fig(kind, mode, "moe_wait_us")),
            cell(fig(kind, mode, "grad_wait_us"))))
out.append("")
for mode in ("blocking", "overlap"):
    h = {r["rep"]: r[mode]["step_trimmed_us"] for r in rows if r.get("kind") == "healthy" and mode in r}
    b = {r["rep"]: r[mode]["step_trimmed_us"] for r in rows if r.get("kind") == "bh" and mode in r}
    q = [b[k] / h[k] for k in h if k in b]
    if q:
        out.append("- %s: blackholed / healthy trimmed step, per rep: %s (median %.3fx; goal <= 1.05x)" %
                   (mode, ", ".join("%.3f" % x for x in q), st.median(q)))
for kind in ("healthy", "mpi"):
    e = [(r["blocking"]["exposed_us"], r["overlap"]["exposed_us"]) for r in rows
         if r.get("kind") == kind and "blocking" in r and "overlap" in r]
    if e:
        out.append("- %s: exposed communication, overlap vs blocking: %s ms vs %s ms (medians)" %
                   ("mrc-step" if kind == "healthy" else "Open MPI",
                    "%.1f" % (st.median(x[1] for x in e) / 1e3), "%.1f" % (st.median(x[0] for x in e) / 1e3)))
d = [r["drop_share"] for r in rows if r.get("kind") == "healthy"]
if d: out.append("- MoE capacity drops (mrc-step): %.1f %% of the pairs" % (100 * st.median(d)))
open(sys.argv[2], "w").write("\n".join(out) + "\n")
print("\n".join(out))
PY
