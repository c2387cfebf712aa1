#!/bin/bash
# Spurious RTOs in the MPI all-to-all (issue 32, bench/results/rto.md): two
# builds alternated per rep (order reversed every other rep), each one run of
# bench/fabric/libfabric_mpistat.sh (8 hosts, 8 ranks, 4 MiB all-to-all, 3
# iterations + 1 warm-up).  Root, and under the root lock:
#   flock /tmp/mrc-root.lock bash bench/fabric/rto-ab.sh BASE_BUILD NEW_BUILD [REPS]
# One line per build and rep: the time per all-to-all (us), data packets,
# resent (%), RTOs, RTOs proven spurious, packets RTOs declared lost that
# were proven spurious, rx duplicates, the load average; then the RTO
# evidence's histograms.
set -u
BASE=${1:?base build}; NEW=${2:?new build}; REPS=${3:-4}
one() {   # LABEL BUILD
	local out
	out=$(B=$2 timeout 300 bash bench/fabric/libfabric_mpistat.sh 2>&1)
	local t j
	t=$(echo "$out" | awk '/^ +4194304 /{print $6}')
	j=$(echo "$out" | sed -n '/^{$/,/^}$/p')
	echo "$1 us ${t:-fail} $(echo "$j" | jq -r '"data \(.tx_data) retx \(.tx_retx) (\(100 * .tx_retx / .tx_data | . * 10 | round / 10) %) rto \(.rto_fires) rto_sp \(.rto_spurious) loss_sp_rto \(.loss_spurious_rto) rest \(.rto_lost_rest) rest_sp \(.loss_spurious_rto_rest) dup \(.rx_dup) silent \(.rto_silent)"') load $(cut -d' ' -f1 /proc/loadavg)"
	echo "$out" | grep '^{"rto_lag"' | sed "s/^/$1 /"
}
for i in $(seq "$REPS"); do
	if [ $((i % 2)) = 1 ]; then o="base new"; else o="new base"; fi
	for v in $o; do
		if [ "$v" = base ]; then one base "$BASE"; else one new "$NEW"; fi
	done
done
