#!/bin/sh
# Runs each libFuzzer target for a bounded time.  The committed seed corpus
# (fuzz/corpus/NAME) is read-only input; new units go to a scratch corpus
# under the build directory so the tree stays clean.  A crash fails that
# target's suite (scripts/suite.sh) and leaves the reproducer (crash-*) in
# the build directory; the other targets still run.
here=$(dirname "$0")
[ -n "${MRC_CHECK_LOG:-}" ] || exec "$here/suite.sh" alone "$0" "$@"
dir=$1; secs=$2; shift 2
rc_all=0
for f in "$@"; do
	work="$dir/corpus/$f"; log="$dir/$f.log"
	mkdir -p "$work" "fuzz/corpus/$f"
	echo "=== fuzz $f for ${secs}s (seed corpus fuzz/corpus/$f)"
	MRC_SUITE_T0=$(date +%s%N); export MRC_SUITE_T0
	if "$dir/bin/$f" -max_total_time="$secs" -seed=1 -print_final_stats=1 \
		-rss_limit_mb=2048 -artifact_prefix="$dir/" "$work" "fuzz/corpus/$f" >"$log" 2>&1; then
		grep -E 'stat::number_of_executed_units|stat::peak_rss_mb' "$log"
		"$here/suite.sh" record "$MRC_CHECK_LOG" pass "fuzz $f"
	else
		tail -n 40 "$log" >&2
		echo "FAILED: fuzz target $f crashed (log $log)" >&2
		"$here/suite.sh" record "$MRC_CHECK_LOG" fail "fuzz $f" "crashed; log $log, reproducer in $dir/"
		rc_all=1
	fi
done
exit $rc_all
