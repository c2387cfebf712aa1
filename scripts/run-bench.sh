#!/bin/sh
# Runs each benchmark binary given (from build dir $1), tees its output to
# bench/results/<name>.md and prints progress.  Usage: run-bench.sh B NAME...
set -e
b="$1"
shift
mkdir -p bench/results
n=0
for name in "$@"; do
	n=$((n + 1))
	echo "=== [$n/$#] $name"
	"$b/bench/$name" | tee "bench/results/$name.md"
done
echo "=== $# benchmark(s) done; results in bench/results/"
