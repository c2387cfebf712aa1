#!/bin/bash
# Issue 34's simulator benchmark: mrcsim, a leaf-spine link (p0l3-p0s5)
# blackholed silently mid-run, after traffic is flowing, with traffic
# that keeps arriving after the failure, so hosts that have not yet used
# the link can learn of it from others.  Health off against shared, the
# two alternated per cell, 2 planes x 32 leaves x 16 spines, 100 Gbit/s.
# Cells ("HOSTS_PER_LEAF:SCENARIO"):
#   psteps  8 permutations of 64 KiB (each a new random one), one every
#           50 us; the link dies at 20 us, in the first
#   a2a     an all-to-all of 16 KiB whose flows start at random times
#           over 400 us; the link dies at 50 us
#   SPEC    any workload (several joined with +), the link dying at 0
# Default: 32:psteps 8:a2a (1,024 and 256 hosts); --big adds 256:psteps
# (8,192 hosts).  CELLS="..." picks others; APPEND=1 adds rows; SERIAL=1
# runs a cell's two modes one after the other (memory).
# Figures from each JSON report: packets lost cluster-wide (every drop),
# of them on the dead link, hosts that ever sent on it (only packets
# after the failure reach it), when the last packet went onto it after
# the failure (every host avoids it from then on), slowest flow / ideal,
# EVs denied, hosts that ever held DENIED a link with no fault on it,
# HEALTH messages, wall seconds, CPU seconds (user + system) and peak
# RSS (GNU time).
#   bench/sim_health.sh [BUILD] [--big] [TICK]
# Writes bench/results/sim_health.md (OUT=... elsewhere).  Deterministic
# (seeded): one run per cell and mode is the figure, so a cell's two modes
# run side by side; only wall time and RSS vary with load.
set -eu
B=${1:-build}
BIG=0
[ "${2:-}" != --big ] || BIG=1
TICK=${3:-5us}
OUT=${OUT:-bench/results/sim_health.md}
res=$(mktemp -d)
trap 'rm -rf "$res"' EXIT
cells=${CELLS:-"32:psteps 8:a2a"}
[ "$BIG" = 1 ] && cells="$cells 256:psteps"
# scenario -> fault time (us) and workload arguments
scen() {
	case $1 in
	psteps)
		FAULT=20 WL="--workload permutation:size=64K"
		for i in 1 2 3 4 5 6 7; do WL="$WL --workload permutation:size=64K,start=$((i * 50))us"; done ;;
	a2a)
		FAULT=50 WL="--workload alltoall:size=16K,jitter=400us" ;;
	*)
		# shellcheck disable=SC2086 # split at the + on purpose
		FAULT=0 WL=$(printf -- '--workload %s ' ${1//+/ }) ;;
	esac
}
row() {
	jq -r --argjson f "$2" '[.health.mode,
		((.packets.drops | [.[]] | add) | tostring),
		(.health.dead_link_pkts|tostring), (.health.dead_link_senders|tostring),
		(if .health.dead_link_pkts > 0 then
			((.health.last_dead_ns/1000 - $f)*10|floor)/10|tostring else "-" end),
		((.health.slowest_ideal*1000|floor)/1000|tostring),
		(.health.denied_evs|tostring), (.health.wrong_deny_hosts // "-" | tostring),
		(.health.share_msgs|tostring)] | join(" | ")' "$1"
}
[ "${APPEND:-0}" = 1 ] || {
	echo "## mrcsim: a leaf-spine link blackholed silently mid-run, health off vs shared"
	echo
	echo "Machine: $(nproc) CPUs, $(free -g | awk '/Mem:/ {print $2}') GiB; $(date -u '+%Y-%m-%d %H:%M UTC')."
	echo "Command: \`bench/sim_health.sh $*\` (health tick $TICK, sharing every 10 ticks, 10 us delivery)."
	echo "Fault: blackhole p0l3-p0s5 at the time listed, seed 1; 2 planes x 32 leaves x 16 spines, 100 Gbit/s."
	echo
	echo "| hosts | scenario | fault at | health | packets lost (all) | on the dead link | hosts that sent on it | last packet onto it, us after the fault | slowest/ideal | EVs denied | hosts that denied a healthy link | HEALTH messages | wall s | CPU s | peak RSS MiB | load |"
	echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
} >"$OUT"
for cell in $cells; do
	hp=${cell%%:*} sc=${cell#*:}
	scen "$sc"
	load=$(cut -d' ' -f1 /proc/loadavg)
	for h in off "shared,$TICK"; do
		f="$res/$hp.${h%%,*}"
		(
			t0=$(date +%s.%N)
			# shellcheck disable=SC2086 # WL is a list of arguments
			/usr/bin/time -f "%U %S %M" -o "$f.rss" "$B/bin/mrcsim" --quiet \
				--topo "clos:planes=2,leaves=32,spines=16,hosts=$hp,rate=100G" \
				$WL --seed 1 --fault "${FAULT}us:blackhole:p0l3-p0s5" --health "$h" -j >"$f.json"
			t1=$(date +%s.%N)
			awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }' >"$f.wall"
		) &
		[ "${SERIAL:-0}" = 0 ] || wait   # one at a time where memory is short
	done
	wait
	for h in off shared; do
		f="$res/$hp.$h"
		echo "| $((hp * 32)) | $sc | ${FAULT} us | $(row "$f.json" "$FAULT") | $(cat "$f.wall") | $(tail -1 "$f.rss" | awk '{ printf "%.1f | %d", $1 + $2, $3 / 1024 }') | $load |" >>"$OUT"
	done
done
cat "$OUT"
