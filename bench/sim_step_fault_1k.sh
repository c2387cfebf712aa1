#!/bin/bash
# The faulted step at 1,024 hosts in mrcsim (bench/results/sim_step_fault.md,
# 2026-11-28): the 8,192-host step's settings (expert groups of 256, 32
# tokens, 128 KiB gradients per layer) on the 1,024-host Clos, about an
# eighth of the 8,192-host run's work, healthy and with spine p0s5
# blackholed at 1.6 ms (in step 2), for each mrcsim binary given (a
# baseline first, then the variants), alternated.  Virtual-time figures
# are exact; only wall time is noisy.  1 GiB of RSS each.
# Usage: bench/sim_step_fault_1k.sh OUTDIR MRCSIM... [-- EXTRA ARGS]
set -e
OUT=$1; shift
bins=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do bins+=("$1"); shift; done
[ "$1" = "--" ] && shift
mkdir -p "$OUT"
P1K="--topo clos:planes=8,leaves=32,spines=32,hosts=32,rate=100G,delay=500ns --window 64 --paths 64
     --workload step:steps=3,ep=256,tokens=32,grad=128K,bucket=512K"
for sc in "healthy|" "fault|--fault 1600us:blackhole:p0s5"; do
	name=${sc%%|*}; args=${sc#*|}
	for b in "${bins[@]}"; do
		tag=$(basename "$b")
		echo "== $name $tag load $(cut -d' ' -f1-3 /proc/loadavg)"
		# shellcheck disable=SC2086
		/usr/bin/time -f "%U u %S s %e wall %M KiB" "$b" --quiet --timing $P1K $args "$@" \
			--json-out "$OUT/$name-$tag.json" | grep -E "exposed|packets|EV states|timing"
		jq -c '{step_ns: .step.step_ns, exposed_mean_ns: .step.exposed_mean_ns,
			rto: .packets.rto_fires, retx: .packets.retransmits,
			tlp_probes: .packets.engine.tlp_probes}' "$OUT/$name-$tag.json"
	done
done
