#!/bin/bash
# Issue 34 item 4's simulator benchmark: mrcsim, a leaf-spine link
# (p0l3-p0s5) blackholed silently at t=0, health off against shared, run
# alternated, 2 planes x 32 leaves x 16 spines, 100 Gbit/s: a permutation
# at 1,024 hosts (8,192 with --big) and an all-to-all at 256 (at 1,024 it
# takes over 12 GiB of memory).  CELLS="HOSTS_PER_LEAF:WORKLOAD ..." picks
# others (WORKLOAD may join several with +); APPEND=1 adds rows to the results instead of starting them.
# Figures from each report's "health" member: packets lost on the dead
# link, hosts that ever sent on it, when the last packet went onto it
# (every host avoids it from then on), slowest flow / ideal.
#   bench/sim_health.sh [BUILD] [--big] [TICK]
# Writes bench/results/sim_health.md.  Deterministic (seeded): one run
# per cell is the figure; wall time is what the load varies.
set -eu
B=${1:-build}
BIG=0
[ "${2:-}" != --big ] || BIG=1
TICK=${3:-5us}
OUT=bench/results/sim_health.md
res=$(mktemp -d)
trap 'rm -rf "$res"' EXIT
cells=${CELLS:-"32:permutation:size=4M 8:alltoall:size=4K 8:permutation:size=4M+alltoall:size=4K,start=200us"}
[ "$BIG" = 1 ] && cells="$cells 256:permutation:size=4M"
row() {
	jq -r '[.health.mode, (.health.dead_link_pkts|tostring),
		(.health.dead_link_senders|tostring),
		((.health.last_dead_ns/1000*10|floor)/10|tostring),
		((.health.slowest_ideal*1000|floor)/1000|tostring),
		(.health.denied_evs|tostring), (.health.share_msgs|tostring)] | join(" | ")' "$1"
}
[ "${APPEND:-0}" = 1 ] || {
	echo "## mrcsim: a silent leaf-spine blackhole, health off vs shared"
	echo
	echo "Machine: $(nproc) CPUs, load average at start $(cut -d' ' -f1 /proc/loadavg); $(date -u '+%Y-%m-%d %H:%M UTC')."
	echo "Command: \`bench/sim_health.sh $*\` (health tick $TICK, sharing every 10 ticks, 10 us delivery)."
	echo "Fault: 0us:blackhole:p0l3-p0s5, seed 1; 2 planes x 32 leaves x 16 spines, hosts per leaf as listed."
	echo
	echo "| hosts | workload | health | dead-link pkts | hosts that sent on it | last packet onto it (us) | slowest/ideal | EVs denied | HEALTH messages | wall s |"
	echo "|---|---|---|---|---|---|---|---|---|---|"
} >"$OUT"
for cell in $cells; do
	hp=${cell%%:*} wl=${cell#*:}
	{
		for h in off "shared,$TICK"; do
			f="$res/$hp.${h%%,*}.json"
			t0=$(date +%s.%N)
			"$B/bin/mrcsim" --quiet --topo "clos:planes=2,leaves=32,spines=16,hosts=$hp,rate=100G" \
				$(printf -- '--workload %s ' ${wl//+/ }) --seed 1 --fault 0us:blackhole:p0l3-p0s5 \
				--health "$h" -j >"$f"
			t1=$(date +%s.%N)
			echo "| $((hp * 32)) | ${wl} | $(row "$f") | $(echo "$t1 - $t0" | bc | cut -c1-6) |" >>"$OUT"
		done
	}
done
cat "$OUT"
