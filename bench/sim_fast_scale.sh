#!/bin/sh
set -eu
# CPU, peak RSS and report identity of mrcsim builds copied to
# /tmp/sf/mrcsim.VARIANT, on the runs issues 33 and 35 size
# (bench/results/sim_fast.md): the 8-plane Clos permutation and the power
# config's step (bench/sim_power.sh's, with its eight lever files), at
# 1,024 and 8,192 hosts.  The first variant is the baseline: every other
# one's JSON report, less its timing, must equal it byte for byte.
# usage: bench/sim_fast_scale.sh SCALES VARIANT...
#   SCALES: perm1k,c1k,perm8k,c8k (comma-separated subset)
# Prints one line per run: name, variant, load average, user s, sys s,
# max RSS KiB; then "identical" or "DIFFER" per later variant.
SCALES=$1; shift
D=/tmp/sf
PW=""
mkdir -p "$D/pw"
i=0
for l in '"stagger_groups": 8, "stagger_ms": 2' '"stagger_groups": 2, "stagger_ms": 50' \
	 '"pace_ms": 10' '"floor": 0.8' '"floor": 0.6' '"floor": 0.8, "floor_ramp_ms": 100' \
	 '"pace_ms": 10, "floor": 0.8' \
	 '"stagger_groups": 8, "stagger_ms": 2, "pace_ms": 10, "floor": 0.75'; do
	i=$((i + 1))
	echo "{$l}" >"$D/pw/$i.json"
	PW="$PW --power $D/pw/$i.json"
done
C1K="clos:planes=8,leaves=32,spines=32,hosts=32,rate=100G,delay=500ns"
C8K="clos:planes=8,leaves=256,spines=32,hosts=32,rate=100G,delay=500ns"
STEP="step:steps=8,tokens=0,grad=64K"
args() {
	case $1 in
	perm1k) echo "--stalls on --spray-slot topo --topo $C1K --workload permutation:size=2M" ;;
	perm8k) echo "--stalls on --spray-slot topo --topo $C8K --workload permutation:size=2M" ;;
	c1k) echo "--topo $C1K --workload $STEP $PW" ;;
	c8k) echo "--topo $C8K --window 64 --paths 64 --workload $STEP $PW" ;;
	esac
}
for n in $(echo "$SCALES" | tr , ' '); do
	for v in "$@"; do
		l=$(cut -d' ' -f1 /proc/loadavg)
		# shellcheck disable=SC2046
		/usr/bin/time -f "%U %S %M" -o "$D/t.$n.$v" "$D/mrcsim.$v" --quiet --timing \
			$(args "$n") -j >"$D/out.$n.$v" 2>/dev/null
		echo "$n $v load=$l $(cat "$D/t.$n.$v")"
		jq -S 'del(.timing)' "$D/out.$n.$v" >"$D/cmp.$n.$v"
	done
	b=$1
	for v in "$@"; do
		[ "$v" = "$b" ] && continue
		if cmp -s "$D/cmp.$n.$b" "$D/cmp.$n.$v"; then
			echo "$n $v: identical to $b"
		else
			echo "$n $v: DIFFER from $b"
		fi
	done
done
