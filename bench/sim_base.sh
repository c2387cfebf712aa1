#!/bin/bash
# Issue 16's simulator table: mrcsim with the engine of commit cb92cd3 (the
# baseline, built from git in a temporary worktree) and with this tree's,
# side by side, one run after the other on one core.  2 MiB permutation,
# 100 Gbit/s, 4 KiB MTU, spray, no faults, seed 1, fat tree k=12 and k=16,
# and k=32 (8,192 hosts, minutes and ~1 GiB each) unless --quick.
#   bench/sim_base.sh [BUILD] [--quick]
# Writes bench/results/sim_base.md and, with gnuplot, sim_base_fct.png: the
# CDF of every flow's completion time / ideal, both engines, one panel per
# fabric.  Needs git history; skips without it.
set -eu
B=${1:-build}
QUICK=0
[ "${2:-}" != --quick ] || QUICK=1
BASE=cb92cd3
OUT=bench/results/sim_base.md
. "$(dirname "$0")/sim_lib.sh"
sim_build_base "$BASE" sim_base
ks="12 16"
[ "$QUICK" = 1 ] || ks="12 16 32"
for k in $ks; do
	for v in base now; do
		bin="$B/bin/mrcsim"
		[ "$v" = base ] && bin="$wt/build/bin/mrcsim"
		echo "== sim_base: k=$k $v" >&2
		"$bin" --quiet --timing --topo "fattree:k=$k,rate=100G" \
			--workload permutation:size=2M -j >"$res/k$k.$v.json"
	done
done
row() {   # row FILE: slowest/ideal, p99, ASSUMED_BAD, trims, CPU s, RSS MiB
	jq -r '[(.fct_vs_ideal.max|tostring), (.fct_vs_ideal.p99|tostring),
		(.ev_changes.to_assumed_bad|tostring), (.packets.trimmed|tostring),
		((.timing.cpu_s*10|floor)/10|tostring),
		((.timing.maxrss_kb/1024)|floor|tostring)] | join(" | ")' "$1"
}
{
	echo "## mrcsim: the engine of $BASE vs now, 2 MiB permutation on a fat tree"
	echo
	echo "Machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $(nproc) CPUs; $(date -u '+%Y-%m-%d %H:%M UTC'); load average at start $(cut -d' ' -f1 /proc/loadavg) (CPU seconds, not wall: the machine is shared)."
	echo "100 Gbit/s, 4 KiB MTU, spray, NSCC, no faults (no packet is dropped: every ASSUMED_BAD is a false alarm), seed 1."
	echo
	echo "| hosts | engine | slowest / ideal | p99 | paths to ASSUMED_BAD | trims | CPU s | max RSS MiB |"
	echo "|---:|---|---:|---:|---:|---:|---:|---:|"
	for k in $ks; do
		h=$((k * k * k / 4))
		echo "| $h (k=$k) | $BASE | $(row "$res/k$k.base.json") |"
		echo "| $h (k=$k) | now | $(row "$res/k$k.now.json") |"
	done
} >"$OUT"
# The CDFs: each flow's FCT / ideal (the report's flows rows are
# [src, dst, size, start, fct, ideal, status]), sorted.
PNG=bench/results/sim_base_fct.png
if command -v gnuplot >/dev/null; then
	gp="set terminal pngcairo size $((420 * $(echo $ks | wc -w))),360 font ',9'
set multiplot layout 1,$(echo $ks | wc -w)
set grid; set key bottom right; set yrange [0:1]
set xlabel 'flow completion time / ideal'; set ylabel 'fraction of flows'"
	for k in $ks; do
		for v in base now; do
			jq -r '.flows[] | select(.[6] == 0) | .[4] / .[5]' "$res/k$k.$v.json" | sort -g |
				awk '{v[NR] = $1} END {for (i = 1; i <= NR; i++) print v[i], i / NR}' >"$res/k$k.$v.cdf"
		done
		gp="$gp
set title 'fat tree k=$k, $((k * k * k / 4)) hosts, 2 MiB permutation'
plot '$res/k$k.base.cdf' using 1:2 with lines lw 2 title '$BASE', \\
     '$res/k$k.now.cdf' using 1:2 with lines lw 2 title 'now'"
	done
	echo "$gp" | gnuplot >"$PNG" && printf "\n![FCT / ideal CDFs](sim_base_fct.png)\n" >>"$OUT"
else
	echo "(No plot: gnuplot is not installed; scripts/deps.sh installs gnuplot-nox.)" >>"$OUT"
fi
cat "$OUT"
