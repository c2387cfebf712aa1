#!/bin/bash
# Issue 16 item 5, simulator speed: mrcsim of commit 51a60aa (one binary
# heap for every event; built from git in a temporary worktree) and this
# tree's, side by side, alternating run by run on one core: 2 MiB
# permutation, fat tree, 100 Gbit/s, spray, seed 1.  k=12 (432 hosts) and
# k=16 (1,024) REPS times each (default 3, medians), k=32 (8,192) once each
# unless --quick.  Says whether both give the same report (all but
# timing): they did until the engine's spray changed after 51a60aa
# (docs/sim.md), so the runs now differ in events too and events per CPU
# second is the figure to compare.
#   bench/sim_speed.sh [BUILD] [--quick]
# Writes bench/results/sim_speed.md.  Needs git history; skips without it.
set -eu
B=${1:-build}
QUICK=0
[ "${2:-}" != --quick ] || QUICK=1
REPS=${REPS:-3}
BASE=51a60aa
OUT=bench/results/sim_speed.md
. "$(dirname "$0")/sim_lib.sh"
sim_build_base "$BASE" sim_speed
load0=$(cut -d' ' -f1 /proc/loadavg)
same=yes
# median of the numbers on stdin
med() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
ks="12 16"
[ "$QUICK" = 1 ] || ks="12 16 32"
for k in $ks; do
	n=$REPS
	[ "$k" != 32 ] || n=1
	for r in $(seq "$n"); do
		for v in base now; do
			bin="$B/bin/mrcsim"
			[ "$v" = base ] && bin="$wt/build/bin/mrcsim"
			echo "== sim_speed: k=$k $v run $r" >&2
			# process CPU (user + sys) s, wall s, max RSS KiB
			/usr/bin/time -f '%U %S %e %M' -o "$res/t" "$bin" --quiet --timing \
				--topo "fattree:k=$k,rate=100G" --workload permutation:size=2M \
				-j >"$res/k$k.$v.json"
			read -r u sy e m <"$res/t"
			echo "$(awk -v a="$u" -v b="$sy" 'BEGIN { printf "%.2f", a + b }') $e $m" >>"$res/k$k.$v.t"
			jq -S 'del(.timing)' "$res/k$k.$v.json" >"$res/k$k.$v.res"
		done
		cmp -s "$res/k$k.base.res" "$res/k$k.now.res" || same=no
	done
done
div() { awk -v a="$1" -v b="$2" -v u="$3" 'BEGIN { printf "%.2f", a / b / u }'; }   # a / b / u
col() { awk -v c="$2" '{ print $c }' "$1" | med; }
{
	echo "## mrcsim speed: the simulator of $BASE vs now, 2 MiB permutation on a fat tree"
	echo
	echo "Machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $(nproc) CPUs; $(date -u '+%Y-%m-%d %H:%M UTC'); load average at start $load0 (shared machine: CPU seconds are the figure; wall includes waiting for a core)."
	echo "100 Gbit/s, 4 KiB MTU, spray, NSCC, seed 1; whole process (setup + run), /usr/bin/time; medians of $REPS runs (k=32: one run). Reports identical (all but timing): $same$([ $same = yes ] || echo " (the engine changed since $BASE: compare M events per CPU s)")."
	echo
	echo "| hosts | events $BASE | events now | slowest / ideal $BASE | now | CPU s $BASE | CPU s now | ratio | M events / CPU s $BASE | now | wall s $BASE | wall s now | max RSS MiB $BASE | max RSS MiB now |"
	echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
	for k in $ks; do
		cb=$(col "$res/k$k.base.t" 1) cn=$(col "$res/k$k.now.t" 1)
		eb=$(jq .result.events "$res/k$k.base.json") en=$(jq .result.events "$res/k$k.now.json")
		echo "| $((k * k * k / 4)) (k=$k) | $eb | $en |" \
			"$(jq .fct_vs_ideal.max "$res/k$k.base.json") | $(jq .fct_vs_ideal.max "$res/k$k.now.json") | $cb | $cn |" \
			"$(div "$cb" "$cn" 1) | $(div "$eb" "$cb" 1e6) | $(div "$en" "$cn" 1e6) |" \
			"$(col "$res/k$k.base.t" 2) | $(col "$res/k$k.now.t" 2) |" \
			"$(col "$res/k$k.base.t" 3 | awk '{ printf "%d", $1 / 1024 }') |" \
			"$(col "$res/k$k.now.t" 3 | awk '{ printf "%d", $1 / 1024 }') |"
	done
} >"$OUT"
cat "$OUT"
