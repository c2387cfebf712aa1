# Shared by bench/fabric/libfabric_ab.sh and libfabric_mpistat.sh; sourced
# (after SCEN and MRC_BENCH_RESULTS are set), not run: bench/fabric/lib.sh
# at MRC_BENCH_RATE (200) Mbit/s, tests/root/fi_lib.sh, and lf_up.
RATE=${MRC_BENCH_RATE:-200}
. bench/fabric/lib.sh
set +e
tmp=$TMP
. tests/root/fi_lib.sh
until_t() { local end=$(($(date +%s) + $1)); shift; while ! "$@"; do [ "$(date +%s)" -lt $end ] || return 1; sleep 0.05; done; }

# lf_up HOSTS: lib.sh's fabric, its IPv4 twin (fi_ipv4_up) and an mrcd on
# each of HOSTS ($TMP/H/mrcd.sock, $TMP/H/mrcctl.sock); exits on failure.
declare -A NSPID
lf_up() {
	start_raw
	fab_up
	fi_ipv4_up || { say "the IPv4 twin of the baseline routes failed"; exit 1; }
	jq '.topology' /run/mrc-fabric/$P/state.json >"$TMP/topo.json"
	for h in $1; do
		mkdir -p "$TMP/$h"
		bg ip netns exec $P-$h "${MRCD_BIN:-$B/bin/mrcd}" --topology "$TMP/topo.json" --host $h \
			--socket "$TMP/$h/mrcd.sock" --key_file "$TMP/cluster.key" --log_level warning ${MRCD_ARGS:-} 2>>"$TMP/$h.log"
		NSPID[$h]=$BGPID   # ip netns exec execs: mrcd's pid, a handle on $h's namespace
		until_t 10 test -S "$TMP/$h/mrcctl.sock" || { say "mrcd on $h did not start"; cat "$TMP/$h.log"; exit 1; }
	done
}
