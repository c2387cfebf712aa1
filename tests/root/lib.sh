# Shared helpers of the root integration scripts (tests/root/*.sh); sourced,
# not run.  The caller sets B (build dir) and tmp (its scratch dir, where
# host H's mrcctl socket is $tmp/H/mrcctl.sock) and counts failures in fails.
fails=${fails:-0}
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }
# until_t SECONDS CMD...: polls CMD (every UNTIL_POLL s, 0.05) until it
# holds; fails after SECONDS.  Readiness is awaited, never slept for.
until_t() {
	local end=$(($(date +%s%N) + $1 * 1000000000)); shift
	while ! "$@"; do
		[ "$(date +%s%N)" -lt $end ] || return 1
		sleep "${UNTIL_POLL:-0.05}"
	done
}
ctl() { local h=$1; shift; $B/bin/mrcctl -s "$tmp/$h/mrcctl.sock" "$@"; }
