# mpi_reap_sids SIDS PREFIX: ends every session that bench/fabric/
# mpi_agent.sh started (orted and its ranks), by the session ids listed in
# file SIDS, and only processes in the namespaces PREFIX-h* (a session id of
# a job long gone may have been reused); empties SIDS.  Sourced by
# bench/fabric/mpi.sh and tests/root/fi_lib.sh, not run.
mpi_reap_sids() {
	local s p
	[ -f "$1" ] || return 0
	for s in $(cat "$1"); do
		for p in $(ps -s "$s" -o pid= 2>/dev/null); do
			case $(ip netns identify "$p" 2>/dev/null) in
			"$2"-h*) kill -9 "$p" 2>/dev/null || true ;;
			esac
		done
	done
	: >"$1"
}
