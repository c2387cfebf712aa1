#!/bin/sh
# The one place that records and counts test suites for `make check`.
#
#   suite.sh record LOG pass|fail|skip NAME [REASON]
#   suite.sh stage  LOG STAGE CMD...   run CMD; if it fails without having
#                                      recorded a failure itself (a build
#                                      error, a crashed runner), record one
#   suite.sh alone CMD...              run a runner (run-tests.sh, ...) on its
#                                      own: a temporary LOG, then its summary
#   suite.sh summary LOG               print "N passed, N failed, N skipped",
#                                      list every skip and failure with its
#                                      reason, the stage times and the 10
#                                      slowest suites; exit 1 if anything
#                                      failed
#
# A suite is one cmocka binary, one sanitizer binary, one fuzz target or one
# root script.  A suite that skipped anything is reported as skipped with the
# reason, never as passed.  LOG is one line per suite:
# RESULT<TAB>NAME<TAB>REASON<TAB>SECONDS, SECONDS its wall time when the
# runner exported MRC_SUITE_T0 (`date +%s%N` as the suite began), else empty:
# CI has a time budget, and the slowest suites are where it goes.
set -u
cmd=${1:-}; log=${2:-}
if [ "$cmd" = alone ]; then
	shift
	MRC_CHECK_LOG=$(mktemp); export MRC_CHECK_LOG
	"$@"; rc=$?
	MRC_SUITE_LABEL=$(basename "$1") "$0" summary "$MRC_CHECK_LOG" || rc=1
	rm -f "$MRC_CHECK_LOG"
	exit $rc
fi
[ -n "$log" ] || { echo "usage: suite.sh record|stage|alone|summary LOG ..." >&2; exit 2; }
nfail() { grep -c '^fail	' "$log" 2>/dev/null || true; }
case "$cmd" in
record)
	res=$3; name=$4; why=${5:-}
	case "$res" in pass|fail|skip) ;; *) echo "suite.sh: bad result '$res'" >&2; exit 2 ;; esac
	secs=
	[ -n "${MRC_SUITE_T0:-}" ] &&
		secs=$(awk -v a="$MRC_SUITE_T0" -v b="$(date +%s%N)" 'BEGIN { printf "%.1f", (b - a) / 1e9 }')
	printf '%s\t%s\t%s\t%s\n' "$res" "$name" "$why" "$secs" | tr -d '\r' >>"$log"
	;;
stage)
	stage=$3; shift 3
	before=$(nfail)
	t0=$(date +%s)
	MRC_CHECK_LOG=$log "$@"; rc=$?
	# Stage times go beside the log, for the summary: CI has a time budget.
	printf '%s\t%s\n' "$stage" "$(( $(date +%s) - t0 ))" >>"$log.times"
	if [ $rc != 0 ] && [ "$(nfail)" = "$before" ]; then
		"$0" record "$log" fail "$stage" "exited $rc before any suite failed (build or runner error; see above)"
	fi
	exit 0
	;;
summary)
	p=$(grep -c '^pass	' "$log" || true)
	f=$(nfail)
	s=$(grep -c '^skip	' "$log" || true)
	echo "=================================================================="
	if [ "$s" != 0 ]; then
		echo "skipped:"
		awk -F'\t' '$1 == "skip" { printf "  %s: %s\n", $2, $3 }' "$log"
	fi
	if [ "$f" != 0 ]; then
		echo "failed:"
		awk -F'\t' '$1 == "fail" { printf "  %s: %s\n", $2, $3 }' "$log"
	fi
	if [ -s "$log.times" ]; then
		awk -F'\t' '{ printf "%s%s %d s", (NR > 1 ? ", " : "stage times: "), $1, $2 }
			END { print "" }' "$log.times"
	fi
	slow=$(awk -F'\t' '$4 != "" { printf "%s\t%s\n", $4, $2 }' "$log" | sort -rn | head -n 10)
	if [ -n "$slow" ]; then
		echo "slowest suites (wall time, s):"
		echo "$slow" | awk -F'\t' '{ printf "  %7.1f  %s\n", $1, $2 }'
	fi
	echo "${MRC_SUITE_LABEL:-make check}: $p passed, $f failed, $s skipped"
	[ "$f" = 0 ]
	;;
*)
	echo "usage: suite.sh record|stage|alone|summary LOG ..." >&2; exit 2 ;;
esac
