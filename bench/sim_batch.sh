#!/bin/bash
# mrcsim's receive batches (docs/sim.md "Receive batches"): the power
# run's 1,024-host step (bench/sim_power.sh's c1k, without the power
# stage) with --rx-batch off (the model before batches), 0 (the default:
# same-instant arrivals), 500ns and 1us, alternating setting by setting,
# REPS rounds (default 3; medians of CPU s).  Events, ACKs and the step's
# figures are deterministic; CPU s depends on the machine's load.
#   bench/sim_batch.sh [BUILD]      prints a markdown table
set -eu
cd "$(dirname "$0")/.."
B=${1:-build}
REPS=${REPS:-3}
make -s "$B/bin/mrcsim"
res=$(mktemp -d /tmp/mrc-simbatch.XXXXXX)
trap 'rm -rf "$res"' EXIT
sets="off 0 500ns 1us"
load0=$(cut -d' ' -f1-3 /proc/loadavg)
for r in $(seq "$REPS"); do
	for v in $sets; do
		echo "== sim_batch: rx-batch $v, round $r" >&2
		/usr/bin/time -f '%U %S' -o "$res/t" "$B/bin/mrcsim" --quiet --timing -j \
			--topo clos:planes=8,leaves=32,spines=32,hosts=32,rate=100G,delay=500ns \
			--workload step:steps=8,tokens=0,grad=64K --rx-batch "$v" >"$res/$v.json"
		awk '{ printf "%.2f\n", $1 + $2 }' "$res/t" >>"$res/$v.cpu"
	done
done
med() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
echo "mrcsim receive batches, 1,024-host power step; $(date -u '+%Y-%m-%d %H:%M UTC'), load average $load0 -> $(cut -d' ' -f1-3 /proc/loadavg), CPU s median of $REPS [min, max]"
echo
echo "| rx-batch | events | ACKs | data packets | CPU s | step (trimmed mean) ns | exposed mean ns (last step) | FCT/ideal max |"
echo "|---|---:|---:|---:|---|---:|---:|---:|"
for v in $sets; do
	j="$res/$v.json"
	echo "| $v | $(jq .result.events "$j") | $(jq .packets.acks "$j") | $(jq .packets.data_sent "$j") |" \
		"$(med <"$res/$v.cpu") [$(sort -g "$res/$v.cpu" | head -1), $(sort -g "$res/$v.cpu" | tail -1)] |" \
		"$(jq .step.step_trimmed_ns "$j") | $(jq '.step.exposed_mean_ns[-1]' "$j") | $(jq .fct_vs_ideal.max "$j") |"
done
