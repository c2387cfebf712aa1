#!/bin/sh
# Runs the integration tests that need root (network namespaces, SRv6
# routes, nftables, tc), each bounded to 10 minutes; each script cleans up
# after itself with a trap.  Every script is a suite (scripts/suite.sh):
# without root each is recorded as skipped with the reason, never passed.
here=$(dirname "$0")
[ -n "${MRC_CHECK_LOG:-}" ] || exec "$here/suite.sh" alone "$0" "$@"
b=$1; shift
rc_all=0
for t in "$@"; do
	if [ "$(id -u)" != 0 ]; then
		echo "=== SKIPPED $t: needs root (network namespaces); run make check as root"
		"$here/suite.sh" record "$MRC_CHECK_LOG" skip "$t" "needs root (network namespaces)"
		continue
	fi
	echo "=== $t"
	timeout 600 "$t" "$b"; rc=$?
	if [ $rc = 0 ]; then
		"$here/suite.sh" record "$MRC_CHECK_LOG" pass "$t"
	else
		[ $rc = 124 ] && why="timed out after 600 s" || why="exit $rc"
		"$here/suite.sh" record "$MRC_CHECK_LOG" fail "$t" "$why"
		rc_all=1
	fi
done
exit $rc_all
