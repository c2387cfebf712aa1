#!/bin/bash
# A/B runs of one fabtests program between h2 (server) and h0 (client) on
# bench/fabric/lib.sh's fabric (mrcd on those two hosts only), variants
# alternated round by round so that a busy machine weighs on each alike:
#   bash bench/fabric/libfabric_ab.sh REPS "LABEL|PROV|SIZE|ENV=V ..." ...
# PROV: a libfabric provider ("mrc", "tcp;ofi_rxm"), or pp for libmrc's own
# mrc_pingpong (SIZE bytes, 2000 round trips).  PROG (fi_rdm_tagged_pingpong)
# and ITERS (500) choose the program, WARM (50) its warm-up iterations and
# ARGS more of its options (e.g. "-W 8", the window); the environment words go to both
# processes (e.g. FI_MRC_POLL_GRACE_US=0 FI_MRC_YIELD=0: the provider's
# progress before issue 32's latency fix).  Prints each run and, per label,
# the sorted usec/xfer and MB/s.  Root; nothing is written to bench/results.
SCEN=libfabric_ab
export MRC_BENCH_RESULTS=${MRC_BENCH_RESULTS:-$(mktemp -d /tmp/mrcab.XXXXXX)}
FT=${MRC_FABTESTS_DIR:-${B:-build}/fabtests}/bin
. bench/fabric/libfabric_lib.sh
lf_up "h0 h2"
REPS=$1; shift
declare -A V M
for r in $(seq 1 $REPS); do
	say "round $r/$REPS, load $(cut -d' ' -f1-3 /proc/loadavg)"
	for c in "$@"; do
		IFS='|' read -r label prov size envs <<<"$c"
		if [ "$prov" = pp ]; then
			ip netns exec $P-h2 timeout 60 "$B/bin/mrc_pingpong" -S "$TMP/h2/mrcd.sock" -s $size -n 2000 -i 7002 server >"$TMP/pps" 2>&1 &
			spp=$!
			sleep 0.3
			ip netns exec $P-h0 timeout 60 "$B/bin/mrc_pingpong" -S "$TMP/h0/mrcd.sock" -s $size -n 2000 -i 7002 client 2 >"$TMP/ppc" 2>&1
			wait $spp
			res=$(tail -n 3 "$TMP/ppc" | tr '\n' ' ')
			say "$label rep $r: $res"
			continue
		fi
		FI_PROV=$prov
		for h in h0 h2; do fi_env_write $h; for e in $envs; do echo "export $e" >>"$tmp/fienv.$h"; done; done
		fi_cs "$TMP/ft" ${FT_TIMEOUT:-60} h2 h0 3000 "$FT/${PROG:-fi_rdm_tagged_pingpong}" -p "$prov" -S "$size" -I ${ITERS:-500} -w ${WARM:-50} ${ARGS:-} -E >/dev/null 2>&1 ||
			{ say "$label failed: $(tail -n 3 $TMP/ft.cli $TMP/ft.srv| tr '\n' ' ')"; continue; }
		v=$(awk '$1 ~ /^[0-9]+[kmg]?$/ && NF >= 7 {r = $6} END {print r}' "$TMP/ft.cli")
		mb=$(awk '$1 ~ /^[0-9]+[kmg]?$/ && NF >= 7 {r = $5} END {print r}' "$TMP/ft.cli")
		say "$label rep $r: $v us/xfer $mb MB/s"
		M[$label]="${M[$label]:-} $mb"
		V[$label]="${V[$label]:-} $v"
	done
done
say "end, load $(cut -d' ' -f1-3 /proc/loadavg)"
for k in "${!V[@]}"; do echo "RESULT $k: us/xfer $(echo ${V[$k]} | tr ' ' '\n' | sort -g | tr '\n' ' ') MB/s $(echo ${M[$k]} | tr ' ' '\n' | sort -g | tr '\n' ' ')"; done
