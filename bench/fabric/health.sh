#!/bin/bash
# Benchmark (root) of issue 34's localisation on the emulated fabric:
# tests/root/health.sh with N blackholes of a random leaf-spine link and M
# congested healthy runs (default 20 and 20, seed printed), then the
# summary bench/results/health-fabric.md records: located N/N, median and
# max time to located (and to denied, and to healed after the restore),
# convicted runs of M, judged by the daemons' own counts of every link
# located or denied (health_located, health_denied and `mrcctl fabric`'s
# convictions: none missed between polls).
#   flock /tmp/mrc-root.lock bench/fabric/health.sh [BUILD] [N] [M]
set -u
B=${1:-build}
N=${2:-20}
M=${3:-20}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
trap 'exit 143' INT TERM
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
MRC_HEALTH_STRICT=1 MRC_HEALTH_N=$N MRC_HEALTH_M=$M tests/root/health.sh "$B" | tee "$out"
rc=${PIPESTATUS[0]}
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
# med_max COL: median and max of column COL (ms) of the ok runs.
med_max() {
	awk -v c="$1" '/^run .* ok$/ && $c != "-" { print $c }' "$out" | sort -n |
		awk '{ v[NR] = $1 } END { if (!NR) { print "n/a"; exit }
			m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
			printf "median %d ms, [min %d, max %d] ms over %d runs\n", m, v[1], v[NR], NR }'
}
echo "located, no other link, healed: $(grep -c '^run .* ok$' "$out")/$N (wrong $(grep -c '^run .* wrong$' "$out"), missed $(grep -c '^run .* missed$' "$out"), unhealed $(grep -c '^run .* unhealed$' "$out"), no drops $(grep -c '^run .* dry$' "$out"))"
echo "time to located: $(med_max 5)"
echo "time to denied:  $(med_max 7) (denied within the bound in $(awk '/^run / && $7 != "-"' "$out" | wc -l)/$N)"
echo "time to healed (restore to no host listing it): $(med_max 9)"
echo "congested runs convicting a link (counted by the daemons): $(grep '^cong ' "$out" | grep -vc 'counted 0/0 convicted none$')/$M"
echo "convictions in congested runs, all hosts (located/denied): $(awk '/^cong / { split($8, c, "/"); l += c[1]; d += c[2] } END { print l + 0 "/" d + 0 }' "$out")"
echo "convictions per blackhole run, all hosts (located/denied): $(awk '/^run / { print $13 }' "$out" | tr '\n' ' ')"
exit $rc
