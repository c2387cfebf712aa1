#!/bin/bash
# The tail-loss probe in mrcsim (bench/results/sim_step_fault.md): the
# 64-host step with and without a spine blackholed, and the failover
# scenarios, each with --tlp-min 0 (off), 50us (default) and 20us,
# alternated.  Virtual-time figures are exact; only wall time is noisy.
# Usage: bench/sim_tlp.sh [OUTDIR]  (default /tmp/sim_tlp; needs jq)
set -e
cd "$(dirname "$0")/.."
OUT=${1:-/tmp/sim_tlp}
mkdir -p "$OUT"
S64="--topo clos:planes=8,leaves=8,spines=8,hosts=8,rate=100G,delay=500ns --workload step:steps=3,ep=64,local=8"
FO="--topo clos:planes=8,leaves=8,spines=8,hosts=8,rate=100G,delay=500ns --workload permutation:size=32M --bin 5us"
for sc in "step_fault|$S64 --fault 1600us:blackhole:p0s5" "fo_blackhole|$FO --fault 100us:blackhole:p0l0-p0s0" \
	  "fo_down|$FO --fault 100us:down:p0l0-p0s0" "step_healthy|$S64"; do
	name=${sc%%|*}; args=${sc#*|}
	for v in 0 50us 20us; do
		echo "== $name tlp-min $v load $(cut -d' ' -f1-3 /proc/loadavg)"
		# shellcheck disable=SC2086
		build/bin/mrcsim --quiet --timing $args --tlp-min $v --json-out "$OUT/$name-$v.json" |
			grep -E "workload|exposed|packets|slowest|EV states|timing"
		jq -c '{step_ns: .step.step_ns, exposed_mean_ns: .step.exposed_mean_ns,
			fct_max: .fct_vs_ideal.max, tlp_probes: .packets.engine.tlp_probes}' "$OUT/$name-$v.json"
	done
done
