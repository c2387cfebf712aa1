#!/bin/bash
# alternated base (tlp-min 0) / tlp variants; virtual-time results are deterministic
cd /work/h-tlp
S64="--topo clos:planes=8,leaves=8,spines=8,hosts=8,rate=100G,delay=500ns --workload step:steps=3,ep=64,local=8"
FO="--topo clos:planes=8,leaves=8,spines=8,hosts=8,rate=100G,delay=500ns --workload permutation:size=32M --bin 5us"
for sc in "step_fault|$S64 --fault 1600us:blackhole:p0s5" "fo_blackhole|$FO --fault 100us:blackhole:p0l0-p0s0" "fo_down|$FO --fault 100us:down:p0l0-p0s0" "step_healthy|$S64"; do
  name=${sc%%|*}; args=${sc#*|}
  for v in 0 50us 20us; do
    echo "== $name tlp-min $v load $(cut -d' ' -f1-3 /proc/loadavg)"
    /usr/bin/time -f "wall %e s" build/bin/mrcsim --quiet --timing $args --tlp-min $v --json-out /tmp/tlpb/$name-$v.json 2>&1 | grep -E "workload|exposed|packets|wall|slowest|EV states"
    jq -c '{tlp: .packets.engine.tlp_probes}' /tmp/tlpb/$name-$v.json
  done
done
