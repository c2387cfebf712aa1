#!/bin/sh
# Reruns the power figures of docs/power.md: mrcsim's step workload at
# 1,024 and 8,192 hosts, one run per scale, the levers computed on its
# phases (sim/power.c).  Usage: bench/sim_power.sh [OUTDIR] [--quick]
#   OUTDIR   where c1k*/c8k* go (default bench/results/sim_power)
#   --quick  only 1,024 hosts (the 8,192 run: ~55 CPU s, ~0.75 GiB)
#   --only c1k|c8k  that scale alone (two shells can run both at once)
# The figures are deterministic (seed 1); wall time, CPU and memory are
# not: /usr/bin/time's are in NAME.time with the load average.
set -eu
cd "$(dirname "$0")/.."
OUT=bench/results/sim_power
QUICK=0
ONLY=
for a in "$@"; do
	case "$a" in
	--quick) QUICK=1 ;;
	--only) ONLY=next ;;
	c1k|c8k) [ "$ONLY" = next ] && ONLY=$a || OUT=$a ;;
	*) OUT=$a ;;
	esac
done
# glibc's malloc in 2 MiB pages (the kernel gives them on madvise): the
# engines' state then misses the TLB less, -15 to -21% CPU at 8,192 hosts
# for +0.3 GiB (bench/results/sim_speed_thp.md).  GLIBC_TUNABLES= turns it off.
export GLIBC_TUNABLES="${GLIBC_TUNABLES-glibc.malloc.hugetlb=1}"
# MRC_SIM=PATH: that mrcsim, not this tree's build (a lent machine
# without the build's dependencies: scripts/bigsim-device.sh)
if [ -n "${MRC_SIM:-}" ]; then
	SIM=$MRC_SIM
else
	make -s build/bin/mrcsim
	SIM=$(pwd)/build/bin/mrcsim
fi
mkdir -p "$OUT"
P=$(mktemp -d /tmp/mrc-power.XXXXXX)
trap 'rm -rf "$P"' EXIT
# one params file per lever setting (docs/power.md "Levers")
echo '{"stagger_groups": 8, "stagger_ms": 2}' >"$P/1-stagger8x2.json"
echo '{"stagger_groups": 2, "stagger_ms": 50}' >"$P/2-stagger2x50.json"
echo '{"pace_ms": 10}' >"$P/3-pace10.json"
echo '{"floor": 0.8}' >"$P/4-floor0.8.json"
echo '{"floor": 0.6}' >"$P/5-floor0.6.json"
echo '{"floor": 0.8, "floor_ramp_ms": 100}' >"$P/6-floor0.8ramp100.json"
echo '{"pace_ms": 10, "floor": 0.8}' >"$P/7-pace10+floor0.8.json"
echo '{"stagger_groups": 8, "stagger_ms": 2, "pace_ms": 10, "floor": 0.75}' >"$P/8-all.json"
PW=""
for f in "$P"/*.json; do
	PW="$PW --power $f"
done

run() {
	name=$1
	shift
	[ -z "$ONLY" ] || [ "$ONLY" = "$name" ] || return 0
	echo "== $name: mrcsim $* $PW --power-out $OUT/$name" >&2
	echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)" >"$OUT/$name.time"
	# mrcsim's own timing line has wall, CPU and RSS where time(1) is missing
	T=
	[ -x /usr/bin/time ] && T="/usr/bin/time -v -a -o $OUT/$name.time"
	# shellcheck disable=SC2086
	$T "$SIM" --quiet --timing "$@" $PW --power-out "$OUT/$name" >"$OUT/$name.txt"
	echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$OUT/$name.time"
}

# No MoE (tokens=0) and 64 KiB of gradients per layer: the full step
# needs 5.3 GiB at 1,024 hosts and 8.2 GiB at 8,192 (docs/sim.md).
STEP="step:steps=8,tokens=0,grad=64K"
run c1k --topo clos:planes=8,leaves=32,spines=32,hosts=32,rate=100G,delay=500ns \
	--workload "$STEP"
[ "$QUICK" = 1 ] || run c8k --topo clos:planes=8,leaves=256,spines=32,hosts=32,rate=100G,delay=500ns \
	--window 64 --paths 64 --workload "$STEP"

for n in c1k c8k; do
	[ -f "$OUT/$n.txt" ] || continue
	echo "== $n"
	grep -E '^(step|timing) ' "$OUT/$n.txt"
	grep -E 'Maximum resident|Elapsed|User time' "$OUT/$n.time" || true
	# each params file's rows (the no-lever row once)
	awk '/^power params:/ { sub(".*/", ""); print "--", $0 }
	     /^(none|stagger|pace|floor|all) / && !($1 == "none" && seen++)' "$OUT/$n.txt"
done
