#!/bin/sh
# Runs each cmocka test binary given, keeps going after a failure, and
# records every binary as a suite (scripts/suite.sh, with its wall time):
# passed, failed, or skipped when any of its tests skipped (with the
# reasons the tests print as "mrc-skip: ..." lines, tests/support/skip.h).
# Exits 1 if any failed.
here=$(dirname "$0")
[ -n "${MRC_CHECK_LOG:-}" ] || exec "$here/suite.sh" alone "$0" "$@"
out=$(mktemp)
trap 'rm -f "$out"' EXIT
rc_all=0
for t in "$@"; do
	echo "=== $t"
	MRC_SUITE_T0=$(date +%s%N); export MRC_SUITE_T0
	"$t" >"$out" 2>&1; rc=$?
	cat "$out"
	skipped=$(grep '^\[  SKIPPED \] ' "$out" | grep -cv 'test(s)')
	if [ $rc != 0 ]; then
		"$here/suite.sh" record "$MRC_CHECK_LOG" fail "$t" "exit $rc: $(grep -m1 -o '\[  FAILED  \] [^ ]*' "$out" | sed 's/.*] //')"
		rc_all=1
	elif [ "$skipped" != 0 ]; then
		why=$(grep -o 'mrc-skip: .*' "$out" | sed 's/^mrc-skip: //' | sort -u | paste -sd ';' -)
		"$here/suite.sh" record "$MRC_CHECK_LOG" skip "$t" "$skipped test(s) skipped: ${why:-no reason printed}"
	else
		"$here/suite.sh" record "$MRC_CHECK_LOG" pass "$t"
	fi
done
exit $rc_all
