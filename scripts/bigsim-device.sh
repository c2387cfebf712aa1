#!/bin/bash
# The 8,192-host mrcsim runs that this project's 2-core VM cannot finish
# in a session, all at once on a lent machine with idle cores (the GPU
# machine: 16 cores, 128 GiB), from the repository root with the kit of
# scripts/nccl-gpu-kit.sh carried (its bin/mrcsim and lib/):
#   step-healthy, step-fault: docs/step.md's 8,192-host pair (steps 1
#     and 2; a spine of plane 0 blackholed at 1.6 ms, in step 2), shared
#     health, 64 paths and a 64-packet window
#   power: bench/sim_power.sh --only c8k (wall time on a quiet machine:
#     issue 35's 60 s goal)
# Each run is bounded by MRC_BIGSIM_LIMIT seconds (default 450).  Results
# in $OUT: NAME.txt (mrcsim's report, its timing line: wall, CPU, RSS),
# NAME.json, power/, summary.txt.
set -u
K=${MRC_NCCL_KIT:-nccl-gpu-kit}
OUT=${OUT:-/tmp/mrc-bigsim-out}
LIM=${MRC_BIGSIM_LIMIT:-450}
mkdir -p "$OUT"
[ -x "$K/bin/mrcsim" ] || { echo "no $K/bin/mrcsim (scripts/nccl-gpu-kit.sh)" | tee "$OUT/summary.txt"; exit 1; }
W=$(mktemp -d)
trap 'rm -rf "$W"; kill $(jobs -p) 2>/dev/null' EXIT
# the kit's loader and libraries, so the machine needs none of the build's
printf '#!/bin/sh\nexec %s --library-path %s %s "$@"\n' "$PWD/$K/lib/ld-linux-x86-64.so.2" \
	"$PWD/$K/lib" "$PWD/$K/bin/mrcsim" >"$W/mrcsim"
chmod +x "$W/mrcsim"
# glibc's malloc in 2 MiB pages, as bench/sim_power.sh and docs/sim.md
export GLIBC_TUNABLES="${GLIBC_TUNABLES-glibc.malloc.hugetlb=1}"
TOPO=clos:planes=8,leaves=256,spines=32,hosts=32,rate=100G,delay=500ns
STEP=step:steps=2,ep=256,tokens=32,grad=128K,bucket=512K
sim() {   # NAME ARGS...
	local n=$1; shift
	timeout "$LIM" "$W/mrcsim" --quiet --timing --topo "$TOPO" --window 64 --paths 64 \
		--health shared --workload "$STEP" "$@" --json-out "$OUT/$n.json" >"$OUT/$n.txt" 2>&1
	echo "$n: exit $?" >>"$OUT/summary.txt"
}
{
	echo "date: $(date -u +%FT%TZ)  host: $(uname -n)  cores: $(nproc)  load: $(cut -d' ' -f1 /proc/loadavg)"
	grep -m1 'model name' /proc/cpuinfo
} >"$OUT/summary.txt"
sim step-healthy &
sim step-fault --fault 1600us:blackhole:p0s5 &
MRC_SIM=$W/mrcsim timeout "$LIM" bash bench/sim_power.sh "$OUT/power" --only c8k >"$OUT/power.log" 2>&1
echo "power: exit $?" >>"$OUT/summary.txt"
wait
for n in step-healthy step-fault; do
	echo "== $n"
	grep -E '^(step|timing|rto|health)' "$OUT/$n.txt" | head -20
done >>"$OUT/summary.txt"
cat "$OUT/power.log" >>"$OUT/summary.txt"
cat "$OUT/summary.txt"
