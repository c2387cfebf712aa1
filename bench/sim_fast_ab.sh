#!/bin/sh
set -eu
# Alternated CPU/RSS runs of mrcsim builds copied to /tmp/sf/mrcsim.VARIANT (bench/results/sim_fast.md).
# usage: bench/sim_fast_ab.sh REPS variant... ; alternates runs, prints user+sys CPU and maxrss
REPS=$1; shift
ARGS="--quiet --timing --topo clos:planes=8,leaves=32,spines=32,hosts=32,rate=100G,delay=500ns --workload step:steps=8,tokens=0,grad=64K"
for r in $(seq $REPS); do
 for v in "$@"; do
  l=$(cut -d' ' -f1 /proc/loadavg)
  /usr/bin/time -f "%U %S %M" -o /tmp/sf/t.$v.$r /tmp/sf/mrcsim.$v $ARGS > /tmp/sf/out.$v.$r 2>/dev/null
  echo "$v rep$r load=$l $(cat /tmp/sf/t.$v.$r)"
 done
done
