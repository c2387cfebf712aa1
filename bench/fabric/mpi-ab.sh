#!/bin/bash
# The MPI all-to-all over the mrc provider (issue 32) under variants,
# alternated rep by rep (order reversed every other rep): each one run of
# bench/fabric/libfabric_mpistat.sh (8 hosts, 8 ranks, 4 MiB all-to-all,
# ITERS iterations + 1 warm-up) with the variant's environment words
# (MRCD_BIN=FILE: another mrcd; MRCD_ARGS="--cc fixed": its options;
# MPI_ENV=...: the ranks'; COLL=all_reduce).  Root, under the root lock:
#   flock /tmp/mrc-root.lock bash bench/fabric/mpi-ab.sh REPS "LABEL|VAR=V ..." ...
# One line per variant and rep: the time per operation (us), data packets,
# resent (%), RTOs, RNR NACKs, the load; then per variant the sorted times.
set -u
REPS=${1:?reps}; shift
declare -A T
for i in $(seq "$REPS"); do
	vs=("$@")
	if [ $((i % 2)) = 0 ]; then vs=(); for ((k = $#; k >= 1; k--)); do vs+=("${!k}"); done; fi
	for v in "${vs[@]}"; do
		IFS='|' read -r label envs <<<"$v"
		out=$(env $envs timeout 300 bash bench/fabric/libfabric_mpistat.sh 2>&1)
		t=$(echo "$out" | awk '/^ +4194304 /{print $6}')
		j=$(echo "$out" | sed -n '/^{$/,/^}$/p')
		echo "$label rep $i: us ${t:-fail} $(echo "$j" | jq -r '"data \(.tx_data) retx \(.tx_retx) (\(100 * .tx_retx / .tx_data | . * 10 | round / 10) %) rto \(.rto_fires) rnr \(.rnr_nacks)"' 2>/dev/null) load $(cut -d' ' -f1 /proc/loadavg)"
		T[$label]="${T[$label]:-} ${t:-fail}"
	done
done
for k in "${!T[@]}"; do echo "RESULT $k: $(echo ${T[$k]} | tr ' ' '\n' | sort -g | tr '\n' ' ')"; done
