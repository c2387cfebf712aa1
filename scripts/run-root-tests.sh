#!/bin/sh
# Runs the integration tests that need root (network namespaces, SRv6
# routes, nftables, tc).  Each test script cleans up after itself with a
# trap.  Without root they are skipped, loudly, with the reason.
b=$1; shift
[ $# -eq 0 ] && { echo "=== no root integration tests registered"; exit 0; }
if [ "$(id -u)" != 0 ]; then
	echo "=== SKIPPED $# root integration tests: they need root (network namespaces); run make check as root"
	exit 0
fi
failed=""
for t in "$@"; do
	echo "=== $t"
	if ! timeout 600 "$t" "$b"; then failed="$failed $t"; fi
done
if [ -n "$failed" ]; then
	echo "FAILED:$failed" >&2
	exit 1
fi
echo "=== all $# root integration tests passed"
