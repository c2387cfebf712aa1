#!/bin/bash
# Scenario: libfabric clients over the mrc provider vs libfabric's own
# tcp;ofi_rxm, and Open MPI over the mrc provider vs Open MPI's TCP BTL
# (issue 32's benchmark), side by side in one run on one rate-limited
# fabric (bench/fabric/lib.sh's fab_up: 2 planes, 4 leaves x 2 spines, 8
# hosts, RATE Mbit/s on every link), mrcd on every host:
#   1. fabtests' fi_rdm_tagged_pingpong (one-way latency, usec/xfer) and
#      fi_rdm_tagged_bw (MB/s) at 4 KiB and 4 MiB, h2 (server) and h0
#      (client, another leaf), over each provider;
#   2. MPI all-reduce and all-to-all (bench/mpi_coll, float, MPI_SIZE per
#      rank, every element checked) on 8 ranks (one per host) over the mrc
#      provider (pml cm, mtl ofi) and over the TCP BTL (bench/fabric/
#      mpi.sh's mpi_perf: pml ob1, both planes), healthy and with spine
#      p1s1 silently blackholed (a TCP flow hashed onto it stalls; the
#      stall bound is MRC_MPI_SIZE_TIMEOUT, 30 s here: 1.2x of a healthy
#      run is far less).
# Medians of REPS runs (MRC_BENCH_REPS, default 3), ratios mrc / baseline,
# the machine; bench/results/libfabric.md and raw/libfabric.jsonl.  With
# the mrc provider absent ($B/lib/libmrc-fi.so) its rows say "provider not
# built" and the rest runs.  Issue 32's goals: latency within 1.5x of
# tcp;ofi_rxm, bandwidth at least 1.8x it (both planes vs its one), the
# blackholed MPI run at most 1.2x its healthy time.
# Addresses: tests/root/fi_lib.sh (the fabric's IPv4 twin: tcp;ofi_rxm on
# plane 1, FI_TCP_IFACE; out-of-band sockets on plane 0).
# the MPI rows alone keep their raw rows apart (raw/libfabric_mpi.jsonl)
SCEN=libfabric; [ "${MRC_BENCH_LF_PARTS:-all}" = all ] || SCEN=libfabric_mpi
RATE=${MRC_BENCH_RATE:-200}
MPI_SIZE=${MRC_BENCH_LF_MPI_SIZE:-4M}
. bench/fabric/lib.sh
set +e   # every step checks its own status; a failed run is a row, not the end
tmp=$TMP
FTDIR=${MRC_FABTESTS_DIR:-$B/fabtests}
FT=$FTDIR/bin
. tests/root/fi_lib.sh
export MRC_MPI_SIZE_TIMEOUT=${MRC_MPI_SIZE_TIMEOUT:-30} MRC_MPI_TIMEOUT=${MRC_MPI_TIMEOUT:-120}
. bench/fabric/mpi.sh
MD="$RES/libfabric.md"
# MRC_BENCH_LF_PARTS=mpi: the MPI rows alone (no fabtests), into libfabric_mpi.md
PARTS=${MRC_BENCH_LF_PARTS:-all}
[ "$PARTS" = all ] || MD="$RES/libfabric_mpi.md"
until_t() {
	local end=$(($(date +%s) + $1)); shift
	while ! "$@"; do [ "$(date +%s)" -lt $end ] || return 1; sleep 0.05; done
}
median() { sort -g | awk '{a[NR] = $1} END {if (!NR) print ""; else if (NR % 2) print a[(NR + 1) / 2]; else printf "%.2f\n", (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (a == "" || b == "" || b + 0 == 0) print "-"; else printf "%.2f", a / b}'; }

start_raw
fab_up
fi_ipv4_up || { say "the IPv4 twin of the baseline routes failed"; exit 1; }
jq '.topology' /run/mrc-fabric/$P/state.json >"$TMP/topo.json"
HOSTS="h0 h1 h2 h3 h4 h5 h6 h7"
for h in $HOSTS; do
	mkdir -p "$TMP/$h"
	bg ip netns exec $P-$h "$B/bin/mrcd" --topology "$TMP/topo.json" --host $h \
		--socket "$TMP/$h/mrcd.sock" --key_file "$TMP/cluster.key" --log_level warning 2>>"$TMP/$h.log"
	until_t 10 test -S "$TMP/$h/mrcctl.sock" || { say "mrcd on $h did not start"; cat "$TMP/$h.log"; exit 1; }
done
CPU=$(awk -F': ' '/model name/{print $2; exit}' /proc/cpuinfo)
emit "{\"kind\":\"meta\",\"date\":\"$(date -u '+%Y-%m-%d %H:%M UTC')\",\"cpu\":\"$CPU\",\"ncpu\":$(nproc),\"kernel\":\"$(uname -r)\",\"rate_mbit\":$RATE,\"planes\":$PLANES,\"reps\":$REPS,\"commit\":\"$(git rev-parse --short HEAD 2>/dev/null)\",\"load\":\"$(cut -d' ' -f1-3 /proc/loadavg)\"}"

declare -A WHY V   # WHY[prov]: why it cannot run; V[key]: median
PROVS=("mrc" "tcp;ofi_rxm")
for p in "${PROVS[@]}"; do
	WHY[$p]=$(fi_prov_why "$p")
	[ -z "${WHY[$p]}" ] || say "provider '$p': ${WHY[$p]}"
done
fi_is_mrc mrc && [ -n "${WHY[mrc]}" ] && WHY[mrc]="provider not built (${WHY[mrc]})"
if [ ! -x "$FT/fi_rdm_tagged_bw" ]; then
	out=$(scripts/fabtests-build.sh "$FTDIR" 2>&1) || { say "fabtests: $out"; FT_WHY="fabtests not built: $(echo "$out" | tail -n 1)"; }
fi
FT_WHY=${FT_WHY:-}

# ---- 1. fabtests ----------------------------------------------------------------
# ft_one PROV PROG SIZE ARGS...: one server/client run; prints the client's
# "MB/sec usec/xfer" for SIZE (fabtests' columns: bytes iters total time
# MB/sec usec/xfer Mxfers/sec), nothing when the run failed.
ft_one() {
	local prov=$1 prog=$2 size=$3; shift 3
	FI_PROV=$prov
	for h in h0 h2; do fi_env_write $h; done
	fi_cs "$TMP/ft" 120 h2 h0 3000 "$FT/$prog" -p "$prov" -S "$size" "$@" -E >/dev/null 2>&1 ||
		{ say "$prog -p '$prov' -S $size failed (server $FI_SRC, client $FI_CRC): $(tail -n 2 "$TMP/ft.cli" | tr '\n' ' ')"; return 1; }
	awk '$1 ~ /^[0-9]+[kmg]?$/ && NF >= 7 {r = $5 " " $6} END {print r}' "$TMP/ft.cli"
}
FT_CASES=("fi_rdm_tagged_pingpong|4096|-I 500 -w 50|lat"
	  "fi_rdm_tagged_pingpong|4194304|-I 8 -w 1|lat"
	  "fi_rdm_tagged_bw|4096|-I 100 -W 64 -w 5|bw"
	  "fi_rdm_tagged_bw|4194304|-I 2 -W 8 -w 1|bw")
[ "$PARTS" = all ] || FT_CASES=()
# providers alternated rep by rep, so that a busy machine weighs on each alike
for c in "${FT_CASES[@]}"; do
	IFS='|' read -r prog size args what <<<"$c"
	unset vals; declare -A vals=()
	for r in $(seq 1 "$REPS"); do
		for p in "${PROVS[@]}"; do
			k="$prog|$size|$p"
			if [ -n "${WHY[$p]}" ]; then V[$k]="${WHY[$p]%% (*}"; continue; fi
			if [ -n "$FT_WHY" ]; then V[$k]="$FT_WHY"; continue; fi
			# shellcheck disable=SC2086
			res=$(ft_one "$p" "$prog" "$size" $args) || continue
			[ -n "$res" ] || continue
			set -- $res
			v=$([ "$what" = lat ] && echo "$2" || echo "$1")
			vals[$p]="${vals[$p]:-} $v"
			emit "{\"kind\":\"fabtests\",\"prog\":\"$prog\",\"size\":$size,\"prov\":\"$p\",\"rep\":$r,\"mb_s\":$1,\"usec_xfer\":$2,\"load\":\"$(cut -d' ' -f1 /proc/loadavg)\"}"
			say "$prog $size over '$p' rep $r/$REPS: $1 MB/s, $2 usec/xfer (load $(cut -d' ' -f1 /proc/loadavg))"
		done
	done
	for p in "${PROVS[@]}"; do
		k="$prog|$size|$p"
		[ -z "${WHY[$p]}" ] && [ -z "$FT_WHY" ] || continue
		V[$k]=$(echo ${vals[$p]:-} | tr ' ' '\n' | grep . | median)
		[ -n "${V[$k]:-}" ] || V[$k]="failed"
	done
done

# ---- 2. MPI -----------------------------------------------------------------------
# mpi_one TRANSPORT COLL: one 8-rank run at MPI_SIZE; prints "time_us busbw"
# (mpi_coll's columns), or a word saying why not.
mpi_one() {
	local tr=$1 coll=$2 row
	if [ "$tr" = tcp ]; then
		row=$(mpi_perf "$coll" 8 "$MPI_SIZE" "$MPI_SIZE" 2>"$TMP/mpi.why"); local rc=$?
		[ $rc = 3 ] && { echo stalled; return; }
		[ $rc = 0 ] || { echo failed; return; }
	else
		FI_PROV=mrc
		for h in $HOSTS; do fi_env_write $h; done
		local c=$coll; [ $c = all_to_all ] && c=alltoall
		fi_mpirun "$TMP/mpi.out" 180 ofi "$HOSTS" 1 "$B/bench/mpi_coll" -C $c -b "$MPI_SIZE" -e "$MPI_SIZE" \
			-n "${MRC_MPI_ITERS:-5}" -w 1 -T "$MRC_MPI_SIZE_TIMEOUT" -L "$TMP/mpi.stall"
		local rc=$?
		grep -q '^# stalled' "$TMP/mpi.out" "$TMP/mpi.stall" 2>/dev/null && { echo stalled; return; }
		{ [ $rc = 0 ] && grep -q 'Out of bounds values : 0 OK' "$TMP/mpi.out"; } || { echo failed; return; }
		row=$(awk '/^ /{$1 = $1; print}' "$TMP/mpi.out")
	fi
	echo "$row" | awk 'NF >= 9 {print $6, $8; exit}'
}
MPI_TR=("mrc|ofi" "tcp-btl|tcp")
for fault in healthy blackhole; do
	if [ $fault = blackhole ]; then
		$F fail p1s1 --silent >/dev/null || say "mrc-fabric fail p1s1 --silent failed"
		d0=$(fi_nft_drops p1s1)
	fi
	for coll in all_reduce all_to_all; do
		# transports alternated rep by rep
		unset mv ms; declare -A mv=() ms=()
		for r in $(seq 1 "$REPS"); do
			for t in "${MPI_TR[@]}"; do
				IFS='|' read -r name tr <<<"$t"
				k="mpi|$coll|$name|$fault"
				if [ "$tr" = ofi ] && [ -n "${WHY[mrc]}" ]; then V[$k]="${WHY[mrc]%% (*}"; continue; fi
				if [ "$tr" = tcp ] && ! mpi_available 2>/dev/null; then V[$k]="Open MPI missing"; continue; fi
				res=$(mpi_one "$tr" "$coll")
				case $res in
				stalled) ms[$name]=$((${ms[$name]:-0} + 1)); say "$coll over $name ($fault) rep $r: stalled (load $(cut -d' ' -f1 /proc/loadavg))"
					emit "{\"kind\":\"mpi\",\"coll\":\"$coll\",\"transport\":\"$name\",\"fault\":\"$fault\",\"rep\":$r,\"stalled\":true}" ;;
				failed|"") say "$coll over $name ($fault) rep $r: failed" ;;
				*) set -- $res; mv[$name]="${mv[$name]:-} $1"
				   emit "{\"kind\":\"mpi\",\"coll\":\"$coll\",\"transport\":\"$name\",\"fault\":\"$fault\",\"rep\":$r,\"time_us\":$1,\"busbw\":$2}"
				   say "$coll $MPI_SIZE over $name ($fault) rep $r/$REPS: $1 us, busbw $2 GB/s (load $(cut -d' ' -f1 /proc/loadavg))" ;;
				esac
			done
		done
		for t in "${MPI_TR[@]}"; do
			IFS='|' read -r name tr <<<"$t"
			k="mpi|$coll|$name|$fault"
			[ -z "${V[$k]:-}" ] || continue   # why it could not run
			stalls=${ms[$name]:-0}
			V[$k]=$(echo ${mv[$name]:-} | tr ' ' '\n' | grep . | median)
			[ "$stalls" = 0 ] || V[$k]="${V[$k]:+${V[$k]:-} us, }$stalls of $REPS stalled"
			[ -n "${V[$k]:-}" ] || V[$k]="failed"
		done
	done
	if [ $fault = blackhole ]; then
		BH_DROPS=$(( $(fi_nft_drops p1s1) - d0 ))
		$F restore >/dev/null; fi_ipv4_up
	fi
done

# ---- the report ------------------------------------------------------------------
human() { case $1 in 4096) echo "4 KiB" ;; 4194304) echo "4 MiB" ;; *) echo "$1 B" ;; esac; }
num() { case $1 in ''|*[!0-9.e+-]*) return 1 ;; esac; }
{
	echo "# libfabric: the mrc provider vs tcp;ofi_rxm, Open MPI over it vs the TCP BTL"
	echo
	echo "Written by bench/fabric/libfabric.sh (issue 32) on $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git rev-parse --short HEAD 2>/dev/null)."
	echo "Machine: $CPU, $(nproc) cores, kernel $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg) at the end."
	echo "Fabric: bench/fabric/lib.sh's fab_up, 2 planes x (4 leaves, 2 spines), 8 hosts, $RATE Mbit/s on every link"
	echo "(a host's NICs carry $((RATE * PLANES)) Mbit/s in all); mrcd on every host. tcp;ofi_rxm runs on plane 1's"
	echo "IPv4 addresses (FI_TCP_IFACE; tests/root/fi_lib.sh), one path per connection; mrc sprays both planes."
	echo "Medians of $REPS runs. Ratios: mrc / baseline (latency and time: lower is better; bandwidth: higher)."
	echo
	[ "$PARTS" = all ] || echo "MPI rows only (MRC_BENCH_LF_PARTS=mpi): the fabtests rows are in libfabric.md."
	if [ "$PARTS" = all ]; then
		echo "## fabtests (h2 server, h0 client, different leaves)"
		echo
		echo "| test | size | mrc | tcp;ofi_rxm | mrc / tcp | goal |"
		echo "|---|---|---|---|---|---|"
		for c in "${FT_CASES[@]}"; do
			IFS='|' read -r prog size args what <<<"$c"
			a=${V[$prog|$size|mrc]:-}; b=${V[$prog|$size|tcp;ofi_rxm]:-}
			unit=$([ "$what" = lat ] && echo "us one way" || echo "MB/s")
			goal=$([ "$what" = lat ] && echo "<= 1.5" || echo ">= 1.8")
			r=-; num "$a" && num "$b" && r=$(ratio "$a" "$b")
			fa=$a; num "$a" && fa="$a $unit"; fb=$b; num "$b" && fb="$b $unit"
			echo "| $prog ($args) | $(human "$size") | $fa | $fb | $r | $goal |"
		done
		echo
	fi
	echo "## MPI on 8 ranks (one per host), $MPI_SIZE per rank, float; time per operation"
	echo
	echo "Spine p1s1 blackholed silently (nftables drop on its ports): it dropped ${BH_DROPS:-?} packets during those runs."
	echo "A stalled run: a size not done within ${MRC_MPI_SIZE_TIMEOUT} s (mpi_coll -T)."
	echo
	echo "| collective | transport | healthy | spine blackholed | blackholed / healthy | goal |"
	echo "|---|---|---|---|---|---|"
	for coll in all_reduce all_to_all; do
		for t in "${MPI_TR[@]}"; do
			IFS='|' read -r name tr <<<"$t"
			a=${V[mpi|$coll|$name|healthy]:-}; b=${V[mpi|$coll|$name|blackhole]:-}
			r=-; num "$a" && num "$b" && r=$(ratio "$b" "$a")
			fa=$a; num "$a" && fa="$a us"; fb=$b; num "$b" && fb="$b us"
			label=$([ "$tr" = ofi ] && echo "Open MPI mtl ofi over mrc" || echo "Open MPI TCP BTL")
			echo "| $coll | $label | $fa | $fb | $r | $([ "$tr" = ofi ] && echo "<= 1.2" || echo "-") |"
		done
		a=${V[mpi|$coll|mrc|healthy]:-}; b=${V[mpi|$coll|tcp-btl|healthy]:-}
		num "$a" && num "$b" && echo "| $coll | mrc / TCP BTL, healthy | | | $(ratio "$a" "$b") | |"
	done
	echo
	echo "Raw rows: bench/results/raw/$SCEN.jsonl. Rerun: \`bash bench/fabric/libfabric.sh\` (root;"
	echo "MRC_BENCH_REPS, MRC_BENCH_RATE, MRC_BENCH_LF_MPI_SIZE), or \`make bench\` (MRC_BENCH_FABRIC=libfabric)."
} >"$MD"
say "wrote $MD"
cat "$MD"
