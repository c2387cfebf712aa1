#!/bin/bash
# Where ACKs go back (transport/ack_tx.c ack_ev), two mrcsim builds side by
# side, alternated per scenario (A B A B): the failover scenarios of
# bench/sim.sh (64 hosts, 8 planes, p0l0-p0s0 down / blackholed at 100 us),
# the healthy 1,024-host permutation (ACK packets per data packet), the
# small cells of bench/sim_health.sh (run with each build) and
# bench/sim_step_fault_1k.sh.  Seeded: every figure but wall time is exact.
#   bench/sim_ackplane.sh OUTDIR DIR_A DIR_B   (DIR_x/bin/mrcsim)
set -eu
OUT=$1 A=$2 B=$3
mkdir -p "$OUT"
FO="--topo clos:planes=8,leaves=8,spines=8,hosts=8,rate=100G,delay=500ns --workload permutation:size=32M --bin 5us"
C1K="--topo clos:planes=8,leaves=32,spines=32,hosts=32,rate=100G,delay=500ns --workload permutation:size=2M"
run() {   # name args...
	local n=$1; shift
	for d in "$A" "$B"; do
		local tag; tag=$(basename "$d")
		echo "== $n $tag load $(cut -d' ' -f1-3 /proc/loadavg) $(date -u +%H:%M:%S)"
		# shellcheck disable=SC2068
		/usr/bin/time -f "%e s wall %M KiB" "$d/bin/mrcsim" --quiet --timing --json-out "$OUT/$n-$tag.json" $@ >/dev/null
	done
}
run fo_down $FO --fault 100us:down:p0l0-p0s0
run fo_blackhole $FO --fault 100us:blackhole:p0l0-p0s0
run c1k_spray $C1K
for d in "$A" "$B"; do
	OUT_MD="$OUT/sim_health-$(basename "$d").md"
	OUT=$OUT_MD SERIAL=1 bash bench/sim_health.sh "$d"
done
# distinct names: the step script tags its reports by the binary's name
ln -sf "$A/bin/mrcsim" "$OUT/mrcsim-$(basename "$A")"
ln -sf "$B/bin/mrcsim" "$OUT/mrcsim-$(basename "$B")"
bash bench/sim_step_fault_1k.sh "$OUT/step" "$OUT/mrcsim-$(basename "$A")" "$OUT/mrcsim-$(basename "$B")"
