#!/bin/bash
# The faulted step at 1,024 hosts in mrcsim (bench/results/sim_step_fault.md):
# the 8,192-host step's settings (expert groups of 256, 32 tokens, 128 KiB
# gradients per layer) on the 1,024-host Clos, about an eighth of the
# 8,192-host run's work, healthy and with spine p0s5 blackholed before the
# step's first communication in step 2, for each mrcsim binary given (a
# baseline first, then the variants), alternated.  Every host runs fabric
# health as mrcd does (`--health shared`: its 10 ms tick, sharing on).
# MRC_STEP=short (default): the simulator's step, 1.35 ms of compute
# (8 layers of 50 + 100 us), the fault at 1.6 ms; MRC_STEP=long: the
# compute of bench/fabric/step.sh (4 layers of 20 + 40 ms, 300 ms a step;
# idle time costs the simulator nothing), the fault at 310 ms.
# The engine's lone-tail probe is on (its default; mrcd.conf's tlp_lone
# is 0 unless engine_timerfd = 1): `-- --tlp-lone 0` runs mrcd's default.
# Virtual-time figures are exact; only wall time is noisy.  1-1.7 GiB of
# RSS each.  MRC_LEAVES=N: N leaves a plane (32 hosts each; 64: 2,048
# hosts, 1.9 GiB; 256: 8,192 hosts, 7.5+ GiB and 300+ CPU s a run: run
# that under `flock /tmp/mrc-bigsim.lock`).
# Usage: bench/sim_step_fault_1k.sh OUTDIR MRCSIM... [-- EXTRA ARGS]
set -e
OUT=$1; shift
bins=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do bins+=("$1"); shift; done
[ "$1" = "--" ] && shift
mkdir -p "$OUT"
case ${MRC_STEP:-short} in
short) W=step:steps=3,ep=256,tokens=32,grad=128K,bucket=512K; FT=1600us ;;
long) W=step:steps=3,layers=4,fwd=20ms,bwd=40ms,ep=256,tokens=32,grad=128K,bucket=512K
      FT=310ms ;;
*) echo "MRC_STEP: short or long" >&2; exit 2 ;;
esac
P1K="--topo clos:planes=8,leaves=${MRC_LEAVES:-32},spines=32,hosts=32,rate=100G,delay=500ns --window 64 --paths 64
     --health shared --workload $W"
for sc in "healthy|" "fault|--fault $FT:blackhole:p0s5"; do
	name=${sc%%|*}; args=${sc#*|}
	for b in "${bins[@]}"; do
		tag=$(basename "$b")
		echo "== ${MRC_STEP:-short} $name $tag load $(cut -d' ' -f1-3 /proc/loadavg)"
		# shellcheck disable=SC2086
		/usr/bin/time -f "%U u %S s %e wall %M KiB" "$b" --quiet --timing $P1K $args "$@" \
			--json-out "$OUT/${MRC_STEP:-short}-$name-$tag.json" |
			grep -E "exposed|packets|EV states|health|timing"
		jq -c '{step_ns: .step.step_ns, exposed_mean_ns: .step.exposed_mean_ns,
			rto: .packets.rto_fires, retx: .packets.retransmits,
			tlp_probes: .packets.engine.tlp_probes,
			suspected: .health.suspected_evs, denied: .health.denied_evs}' \
			"$OUT/${MRC_STEP:-short}-$name-$tag.json"
	done
done
