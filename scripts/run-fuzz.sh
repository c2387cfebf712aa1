#!/bin/sh
# Runs each libFuzzer target for a bounded time.  The committed seed corpus
# (fuzz/corpus/NAME) is read-only input; new units go to a scratch corpus
# under the build directory so the tree stays clean.  A crash fails the run
# and leaves the reproducer (crash-*) in the build directory.
dir=$1; secs=$2; shift 2
for f in "$@"; do
	work="$dir/corpus/$f"; log="$dir/$f.log"
	mkdir -p "$work" "fuzz/corpus/$f"
	echo "=== fuzz $f for ${secs}s (seed corpus fuzz/corpus/$f)"
	if ! "$dir/bin/$f" -max_total_time="$secs" -seed=1 -print_final_stats=1 \
		-rss_limit_mb=2048 -artifact_prefix="$dir/" "$work" "fuzz/corpus/$f" >"$log" 2>&1; then
		tail -n 40 "$log" >&2
		echo "FAILED: fuzz target $f crashed (log $log)" >&2
		exit 1
	fi
	grep -E 'stat::number_of_executed_units|stat::peak_rss_mb' "$log"
done
echo "=== fuzzing: $# targets, no crash"
