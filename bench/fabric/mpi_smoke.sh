#!/bin/sh
# The Open MPI baseline (bench/fabric/mpi.sh) works on the emulated fabric:
#   - healthy: all-reduce and all-to-all at 1 KiB .. 1 MiB on 8 ranks, every
#     size run, 0 wrong;
#   - the traffic crossed the plane NICs: a 4 MiB all-to-all moves exactly
#     calls x (n-1)/n x 4 MiB per rank (within 10 %: TCP/IP headers, ACKs,
#     MPI headers), and both planes carry part of it;
#   - a spine silently blackholed (mrc-fabric fail p0s1 --silent, checked by
#     its drop counters): what Open MPI over TCP on ECMP routes does is
#     reported (flows hashed onto the dead spine stall, bounded by
#     MRC_MPI_SIZE_TIMEOUT), not asserted: completing or stalling are both
#     what TCP may do; a hang past the bound or stray processes fail it.
# Root, under the lock: flock /tmp/mrc-root.lock sh bench/fabric/mpi_smoke.sh
# Env: B (build dir), MRC_BENCH_PREFIX (fabric prefix, default mrcM), RATE.
SCEN=mpi_smoke
RATE=${RATE:-100}
MRC_BENCH_PREFIX=${MRC_BENCH_PREFIX:-mrcM}
. bench/fabric/lib.sh
. bench/fabric/mpi.sh
set +e
fails=0
ok() { echo "ok   - $*"; }
bad() { echo "FAIL - $*"; fails=$((fails + 1)); }
mpi_available || { echo "mpi_smoke: skipped (Open MPI baseline not built)"; exit 0; }
fab_up
N=8

# sum of tx bytes of every host's NIC in plane $1
plane_tx() {
	_t=0
	for _h in 0 1 2 3 4 5 6 7; do
		set -- "$1" $(nic_tx $_h)
		[ "$1" = 0 ] && _t=$((_t + $2)) || _t=$((_t + $3))
	done
	echo $_t
}

# ---- healthy ---------------------------------------------------------------
for c in all_reduce all_to_all; do
	out=$(mpi_perf $c $N 1K 1M 2>"$TMP/err"); rc=$?
	rows=$(echo "$out" | grep -c .)
	if [ $rc = 0 ] && [ "$rows" = 11 ] && echo "$out" | awk '$9 != 0 {exit 1}'; then
		ok "$c healthy: 11 sizes 1 KiB..1 MiB on $N ranks, 0 wrong (1 MiB: $(echo "$out" |
			awk 'END {print $6 " us, busbw " $8 " GB/s"}'))"
	else
		bad "$c healthy: rc $rc, $rows rows: $(cat "$TMP/err")"
	fi
done

# ---- bytes on the plane NICs -----------------------------------------------
a0=$(plane_tx 0); a1=$(plane_tx 1)
MRC_MPI_ITERS=5 MRC_MPI_WARMUP=1 mpi_perf all_to_all $N 4M 4M >/dev/null 2>"$TMP/err"; rc=$?
d0=$(( $(plane_tx 0) - a0 )); d1=$(( $(plane_tx 1) - a1 ))
# 7 calls (1 warm-up, 5 timed, 1 checked), each rank sends 7/8 of 4 MiB
want=$((7 * N * (N - 1) * 4194304 / N))
if [ $rc = 0 ] && [ $((d0 + d1)) -ge $want ] && [ $((d0 + d1)) -le $((want * 11 / 10)) ] &&
   [ $d0 -ge $((want / 10)) ] && [ $d1 -ge $((want / 10)) ]; then
	ok "4 MiB all-to-all: the plane NICs sent $((d0 + d1)) bytes (payload $want), plane 0 $d0, plane 1 $d1"
else
	bad "4 MiB all-to-all: rc $rc, NICs sent $d0 + $d1 bytes, payload $want: $(cat "$TMP/err")"
fi

# ---- a spine silently blackholed -------------------------------------------
drops() {
	ip netns exec $P-p0s1 nft list table netdev mrcfab 2>/dev/null |
		awk '/counter packets/ {for (i = 1; i < NF; i++) if ($i == "packets") s += $(i + 1)} END {print s + 0}'
}
if $F fail p0s1 --silent >/dev/null; then
	for c in all_reduce all_to_all; do
		t0=$(date +%s)
		out=$(MRC_MPI_SIZE_TIMEOUT=${MRC_MPI_SIZE_TIMEOUT:-30} MRC_MPI_TIMEOUT=120 \
			mpi_perf $c $N 1M 2M 2>"$TMP/err"); rc=$?
		dt=$(($(date +%s) - t0))
		what="rc $rc after $dt s, $(echo "$out" | grep -c .) of 2 sizes done"
		case $rc in
		0) what="$what: completed (no flow hashed onto p0s1)" ;;
		3) what="$what: $(head -n1 "$TMP/err")" ;;
		*) what="$what: $(cat "$TMP/err")" ;;
		esac
		echo "# $c with p0s1 blackholed: $what"
		[ $rc = 0 ] || [ $rc = 3 ] || bad "$c with p0s1 blackholed: $what"
	done
	n=$(drops)
	[ "$n" -gt 0 ] && ok "p0s1 blackholed: it dropped $n packets, Open MPI bounded (above)" ||
		bad "p0s1 blackholed: its drop counters read $n"
	$F restore >/dev/null || bad "mrc-fabric restore failed"
else
	bad "mrc-fabric fail p0s1 --silent failed"
fi

# ---- nothing left behind ----------------------------------------------------
left=$(for s in $(cat "$TMP/mpi.sids.all" 2>/dev/null); do ps -s "$s" -o pid= 2>/dev/null; done | wc -l)
[ "$left" = 0 ] && ok "no orted or rank left after the runs" || bad "$left processes of the runs left"

[ $fails = 0 ] || { echo "mpi_smoke: $fails check(s) failed"; exit 1; }
echo "mpi_smoke: all checks passed"
