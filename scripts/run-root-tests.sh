#!/bin/sh
# Runs the integration tests that need root (network namespaces, SRv6
# routes, nftables, tc), each bounded to 10 minutes; each script cleans up
# after itself with a trap; a script that cannot run here prints "SKIP why"
# and exits 77.  Every script is a suite (scripts/suite.sh), with its wall
# time: without root each is recorded as skipped with the reason, never
# passed.  MRC_ROOT_QUICK=1 (make check-fresh's run: MRC_FRESH=1) asks each
# script for its short run: the same tools, packages and assertions on
# fewer and smaller transfers (each script's header says what it shortens);
# the host's make check runs them in full.
here=$(dirname "$0")
[ -n "${MRC_CHECK_LOG:-}" ] || exec "$here/suite.sh" alone "$0" "$@"
b=$1; shift
rc_all=0
out=$(mktemp)
trap 'rm -f "$out"' EXIT
quick=
[ "${MRC_ROOT_QUICK:-0}" = 1 ] && quick=" (quick)"
export MRC_ROOT_QUICK
for t in "$@"; do
	if [ "$(id -u)" != 0 ]; then
		echo "=== SKIPPED $t: needs root (network namespaces); run make check as root"
		"$here/suite.sh" record "$MRC_CHECK_LOG" skip "$t" "needs root (network namespaces)"
		continue
	fi
	echo "=== $t$quick"
	MRC_SUITE_T0=$(date +%s%N); export MRC_SUITE_T0
	t0=$(date +%s)
	timeout 600 "$t" "$b" >"$out" 2>&1; rc=$?
	cat "$out"
	echo "=== $t$quick: exit $rc after $(( $(date +%s) - t0 )) s"
	if [ $rc = 0 ]; then
		"$here/suite.sh" record "$MRC_CHECK_LOG" pass "$t$quick"
	elif [ $rc = 77 ]; then
		# exit 77 (automake's convention): skipped, the reason on a "SKIP " line
		"$here/suite.sh" record "$MRC_CHECK_LOG" skip "$t$quick" "$(sed -n 's/^SKIP //p' "$out" | head -n 1)"
	else
		[ $rc = 124 ] && why="timed out after 600 s" || why="exit $rc"
		"$here/suite.sh" record "$MRC_CHECK_LOG" fail "$t$quick" "$why"
		rc_all=1
	fi
done
exit $rc_all
