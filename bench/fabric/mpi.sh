# The Open MPI baseline of the fabric collective benchmark; sourced (after
# bench/fabric/lib.sh and fab_up), not run.  docs/coll.md, "Open MPI baseline".
#
#   mpi_available                        0 when mpirun and $B/bench/mpi_coll
#                                        exist (else says why on stderr)
#   mpi_perf COLL NP MINBYTES MAXBYTES   COLL all_reduce|all_to_all: one
#       Open MPI rank on each of hosts h0..h(NP-1) of the fabric $P, sizes
#       MINBYTES, x2, .. MAXBYTES (K/M/G suffixes as mrc-coll-perf); prints
#       one row per size on stdout:
#           size count type redop root time_us algbw busbw wrong
#       (mrc-coll-perf's columns; GB/s; wrong summed over the ranks).
#       Returns 0 when every size ran with 0 wrong; 3 on a stall: a size
#       (or MPI_Init) not done within MRC_MPI_SIZE_TIMEOUT, mpirun not done
#       within MRC_MPI_TIMEOUT, or an orted that could not reach mpirun
#       (the rows done before are printed; stderr says where); 1 on any
#       other failure (stderr says which).
#
# Knobs (environment): MRC_MPI_ITERS (timed runs per size, 5),
# MRC_MPI_WARMUP (1), MRC_MPI_SIZE_TIMEOUT (s per size, 120),
# MRC_MPI_TIMEOUT (s for the whole mpirun, 600).
#
# How it runs: mpirun runs in h0's namespace and starts one orted per host
# through bench/fabric/mpi_agent.sh (ip netns exec instead of ssh); ranks
# talk over the TCP BTL (pml ob1, btl tcp,self: no shared memory between
# the "hosts") on the fabric's --ecmp baseline addresses (IPv6 fdbb:..., one
# per plane NIC: Open MPI stripes over both planes).  Open MPI 4.1 takes
# interface names or IPv4 CIDRs in *_if_include, and the NIC names differ
# from host to host (named after the leaf), so both the BTL and the OOB
# exclude lo instead: a fabric host's namespace holds lo and its plane NICs
# only, which mpi_perf checks.  Every session the agent starts is killed by
# its id after the run; this file extends lib.sh's EXIT trap to do it too.
# mpi_yield_when_idle: the 8 "hosts" share the machine's cores, and ranks
# that poll without yielding starve each other (a 1 KiB all-reduce on 8
# ranks and 2 cores: 32 ms without, 0.8-3.6 ms with).
# orted stays in that session (orte_leave_session_attached: it does not
# daemonize, which would move it to a session of its own, out of reach).

MPI_COLL="$B/bench/mpi_coll"
MPI_AGENT="$(cd "$(dirname "$0")/../.." 2>/dev/null && pwd)/bench/fabric/mpi_agent.sh"
[ -x "$MPI_AGENT" ] || MPI_AGENT="$PWD/bench/fabric/mpi_agent.sh"
MPI_SIDS="$TMP/mpi.sids"

mpi_available() {
	command -v mpirun >/dev/null 2>&1 ||
		{ echo "mpi: mpirun missing (scripts/deps.sh installs openmpi-bin)" >&2; return 1; }
	[ -x "$MPI_COLL" ] ||
		{ echo "mpi: $MPI_COLL missing (make; needs mpicc from libopenmpi-dev)" >&2; return 1; }
	[ -x "$MPI_AGENT" ] || { echo "mpi: $MPI_AGENT missing" >&2; return 1; }
}

# Ends every session the agent started (orted and its ranks) in this
# fabric's namespaces.
. "$(dirname "${BASH_SOURCE[0]}")/mpi_reap.sh"
mpi_reap() { mpi_reap_sids "$MPI_SIDS" "$P"; }
trap 'mpi_reap; cleanup' EXIT

mpi_perf() {
	_c=$1; _np=$2; _lo=$3; _hi=$4
	case $_c in
	all_reduce) ;;
	all_to_all) _c=alltoall ;;
	*) echo "mpi_perf: collective '$_c' (all_reduce or all_to_all)" >&2; return 1 ;;
	esac
	mpi_available || return 1
	: >"$TMP/mpi.hosts"
	_h=0
	while [ $_h -lt "$_np" ]; do
		# lo and the plane NICs, nothing else (the exclude-lo rule above)
		_n=$(ip -n "$P-h$_h" -o link show 2>/dev/null | grep -vc ': lo:' || true)
		if [ "$_n" != $PLANES ]; then
			echo "mpi_perf: host h$_h of fabric $P: $_n links besides lo, $PLANES plane NICs expected" >&2
			return 1
		fi
		echo "h$_h slots=1" >>"$TMP/mpi.hosts"
		_h=$((_h + 1))
	done
	mkdir -p "$TMP/ompi"
	_out="$TMP/mpi.out"
	rm -f "$TMP/mpi.stalls"
	_rc=0
	MRC_MPI_PREFIX=$P MRC_MPI_SIDS=$MPI_SIDS MRC_MPI_TMP="$TMP/ompi" TMPDIR="$TMP/ompi" \
	timeout -k 5 "${MRC_MPI_TIMEOUT:-600}" ip netns exec "$P-h0" \
		mpirun --allow-run-as-root -np "$_np" --hostfile "$TMP/mpi.hosts" --map-by node \
		--bind-to none --mca plm_rsh_agent "$MPI_AGENT" --mca plm_rsh_no_tree_spawn 1 \
		--mca orte_leave_session_attached 1 --mca mpi_yield_when_idle 1 \
		--mca pml ob1 --mca btl tcp,self \
		--mca btl_tcp_if_exclude lo --mca oob_tcp_if_exclude lo \
		"$MPI_COLL" -C "$_c" -b "$_lo" -e "$_hi" -n "${MRC_MPI_ITERS:-5}" \
		-w "${MRC_MPI_WARMUP:-1}" -T "${MRC_MPI_SIZE_TIMEOUT:-120}" -L "$TMP/mpi.stalls" \
		>"$_out" 2>"$_out.err" || _rc=$?
	mpi_reap
	awk '/^ /{$1 = $1; print}' "$_out"
	# A stall: a size (or MPI_Init) past MRC_MPI_SIZE_TIMEOUT, or mpirun
	# past MRC_MPI_TIMEOUT (its launch waits on orteds whose connection to
	# it may be the stalled one).  Ranks write their stall line to a file
	# too: mpirun's output forwarding may ride the connection that stalled.
	_why=$(cat "$TMP/mpi.stalls" "$_out" 2>/dev/null | grep '^# stalled' | cut -c12- |
		sort -u | head -n 3 | tr '\n' ';')
	# ORTE's own words when an orted's TCP connection back to mpirun (the
	# launch, the OOB) did not get through: a stall of the launch.
	_orte='unable to reliably start one or more daemons|before communicating back to mpirun|lost communication with a remote daemon'
	[ -n "$_why" ] || _why=$(grep -m1 -E "$_orte" "$_out.err" |
		sed 's/^/the launch failed, an orted and mpirun lost each other: ORTE says /')
	case $_rc in 124|137) [ -n "$_why" ] ||
		_why="mpirun still running after ${MRC_MPI_TIMEOUT:-600} s, killed; no rank reported a ${MRC_MPI_SIZE_TIMEOUT:-120} s stall: the launch stalled (orted to mpirun), or the sizes took longer in all" ;; esac
	if [ -n "$_why" ]; then
		echo "mpi_perf: $_c on $_np ranks stalled after $(grep -c '^ ' "$_out") size(s): $_why" >&2
		return 3
	fi
	if [ $_rc != 0 ] || ! grep -q 'Out of bounds values : 0 OK' "$_out"; then
		echo "mpi_perf: $_c on $_np ranks failed (mpirun exit $_rc): $(cat "$_out" "$_out.err" |
			grep -v -e '^ ' -e '^#  ' | tail -n 4 | tr '\n' ' ')" >&2
		return 1
	fi
	return 0
}
