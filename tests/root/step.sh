#!/bin/bash
# Integration (root): mrc-step (docs/step.md) on the 2-plane fabric of 8
# hosts, mrcd on each, one rank per host:
#   - a healthy run, both modes side by side (blocking and overlapped
#     gradients), with the MoE layer (2-D, capacity drops), background
#     bulk QPs and staging reads: every gradient element of every step
#     right, the MoE pairs counted exactly (ranks x tokens x topk x 2 passes
#     x steps), the background bytes landed exactly, each mode's step no
#     shorter than its compute and staging, drops within [0, 1);
#   - spine p0s1 silently blackholed at step 3 of the first run (rank 0
#     pauses there until the fault is in: mrc-step -k): still right, the
#     fault's effect seen on h7's paths to h0 (its lost counter moved or the
#     path assumed bad), the report's before/after figures present.
# Bounded in time; cleans up on every exit.  Run it only under
# `flock /tmp/mrc-root.lock`.
set -u
B=${1:-build}
P=${MRC_STEP_PREFIX:-mrcS}
T=examples/topologies/fabric-2p-8h.json
F="$B/bin/mrc-fabric -p $P"
STEP=$B/bin/mrc-step
tmp=$(mktemp -d)
declare -A dpid
ranks=()
fails=0
cleanup() {
	for p in "${ranks[@]}" "${dpid[@]}"; do kill -9 "$p" 2>/dev/null; done
	$F down >/dev/null 2>&1
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
. tests/root/lib.sh
paths_snap() { paths_map h7 h0; }

fabric_up "$T" h0 h1 h2 h3 h4 h5 h6 h7

sid=7600
launch() {
	local name=$1 r; shift
	sid=$((sid + 10)); ranks=()
	for r in 0 1 2 3 4 5 6 7; do
		MRC_COLL_SIZE=8 MRC_COLL_RANK=$r ip netns exec $P-h$r $STEP -S "$(sock h$r)" -H 0 -s $sid \
			-T 20000 -j "$@" >"$tmp/$name.$r" 2>&1 &
		ranks+=($!)
	done
}
# The step: small enough for a loaded 2-core machine (8 mrcd), every part
# on; the stub sleeps (spinning ranks would starve the daemons).
SMALL=(layers=4 fwd=200us bwd=400us tokens=128 tok=2K topk=2 local=2 cap=1.0 skew=1
       grad=256K bucket=512K bulk=2M stage=256K warm=1 stub=sleep)
js() { grep -h '^{' "$tmp/$1.0" | jq -r "$2"; }

# ---- healthy ----------------------------------------------------------------
launch ok "${SMALL[@]}" steps=4 runs=3
if finish healthy 300 && [ "$(js ok .wrong)" = 0 ]; then
	# Per rank: runs x (warm + steps) x 2 modes steps, 2 MoE passes each.
	n=$((3 * (1 + 4) * 2))
	want_tok=$((8 * 128 * 2 * 2 * n)); want_bulk=$((8 * 2097152 * n))
	got_tok=$(js ok .tokens); got_bulk=$(js ok .bulk_bytes)
	[ "$got_tok" = $want_tok ] && ok "MoE pairs counted: $got_tok (dropped $(js ok .dropped), share $(js ok .drop_share))" ||
		bad "MoE pairs: $got_tok, want $want_tok"
	[ "$got_bulk" = $want_bulk ] && ok "background bytes landed: $got_bulk" || bad "background bytes: $got_bulk, want $want_bulk"
	if js ok '(.drop_share >= 0 and .drop_share < 1) and ([.blocking, .overlap][] | .step_us >= .compute_us + .stage_us and .step_min_us <= .step_us and .step_us <= .step_max_us and .time_to_n_us > 0 and .exposed_us >= 0) and (.blocking.time_to_n_runs_us | length) == 3' | grep -qx true; then
		ok "healthy: 8 ranks, every gradient right, figures sane: $(js ok '"blocking step \(.blocking.step_us) us (exposed \(.blocking.exposed_us)), overlap step \(.overlap.step_us) us (exposed \(.overlap.exposed_us)), compute \(.overlap.compute_us)"')"
	else
		bad "healthy: figures not sane: $(grep -h '^{' "$tmp/ok.0")"
	fi
else
	bad "healthy run: $(tail -n3 "$tmp/ok.0" | tr '\n' ' ') $(grep -h mrc-step "$tmp"/ok.* | head -n2)"
fi

# ---- a spine blackholed at step 3 ------------------------------------------
before=$(paths_snap); injected=0
launch bh "${SMALL[@]}" steps=8 runs=3 -k "3:$tmp/go"
if until_t 120 grep -q '^# mrc-step: at step 3' "$tmp/bh.0"; then
	$F fail p0s1 --silent >/dev/null && injected=1 || bad "blackhole: 'mrc-fabric fail p0s1 --silent' failed"
	touch "$tmp/go"
else
	bad "blackhole: rank 0 never reached step 3: $(tail -n2 "$tmp/bh.0" | tr '\n' ' ')"
	touch "$tmp/go"
fi
if finish blackhole 300 && [ $injected = 1 ] && [ "$(js bh .wrong)" = 0 ] &&
	js bh '.fault_step == 3 and .fault_before_us > 0 and .fault_after_us > 0' | grep -qx true; then
	ok "spine p0s1 blackholed at step 3: every gradient right; mean step before $(js bh .fault_before_us) us, from it $(js bh .fault_after_us) us; trimmed $(js bh .blocking.step_trimmed_us) / $(js bh .overlap.step_trimmed_us) us"
else
	bad "blackhole run: $(tail -n3 "$tmp/bh.0" | tr '\n' ' ') $(grep -h mrc-step "$tmp"/bh.* | head -n2)"
fi
[ $injected = 1 ] && effect "spine p0s1 blackholed at step 3" "$before" \
	'.a["0/1"].state == "ASSUMED_BAD" or .a["0/1"].lost > (.b["0/1"].lost // 0)'
$F restore >/dev/null || bad "mrc-fabric restore failed"

[ $fails = 0 ] || { echo "step: $fails check(s) failed"; exit 1; }
echo "step: all checks passed"
