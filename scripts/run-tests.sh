#!/bin/sh
# Runs each test binary given, keeps going after a failure, and fails at the
# end if any failed.  cmocka prints its own per-binary summary lines.
failed=""
for t in "$@"; do
	echo "=== $t"
	if ! "$t"; then failed="$failed $t"; fi
done
if [ -n "$failed" ]; then
	echo "FAILED:$failed" >&2
	exit 1
fi
echo "=== all $# test binaries passed"
