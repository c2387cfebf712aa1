#!/bin/bash
# The RTO undo (docs/design.md "Spurious RTOs", bench/results/frto.md): two
# builds' loopback mrcd, alternated per rep (order reversed every other
# rep), each running the NCCL plugin's 4 MiB stream (mrc-nccl-harness -b -z
# 4194304, rank 0's first table row) and reporting the daemon's engine
# counters over it: RTOs fired, data packets and retransmissions.  Usage:
#   bench/frto-ab.sh BASE_BUILD NEW_BUILD [REPS]     (default 5)
# Prints one line per build and rep, and the load average per rep.
set -u
BASE=${1:?base build}; NEW=${2:?new build}; REPS=${3:-5}
tmp=$(mktemp -d)
dpid=
trap '[ -n "$dpid" ] && kill "$dpid" 2>/dev/null; rm -rf "$tmp"' EXIT INT TERM
"$NEW/bin/mrcd" --genkey "$tmp/key" >/dev/null
LO_ENV=()
. "$(dirname "$0")/loopback.sh"
snap() {   # BUILD
	"$1/bin/mrcctl" -s "$tmp/mrcctl.sock" -j stats | jq -c '{rto: .engine.rto_fires,
		data: .engine.tx_data, retx: .engine.tx_retx}'
}
one() {   # LABEL BUILD
	local a c r p=()
	lo_start "$2"
	for _ in $(seq 200); do [ -S "$tmp/mrcctl.sock" ] && break; sleep 0.05; done
	a=$(snap "$2")
	for r in 1 0; do
		MRC_SOCKET=$tmp/s timeout 300 "$2/bin/mrc-nccl-harness" -r $r -n 2 -R "$tmp/rdv" \
			-b -z 4194304 -p "$2/lib/libnccl-net-mrc.so" >"$tmp/h$r" 2>&1 &
		p+=($!)
	done
	wait "${p[@]}"
	c=$(snap "$2")
	lo_stop
	echo "$1 $(grep -m1 -E '^\| [a-z]+ \| [0-9]+ \|' "$tmp/h0" | tr -s ' ')" \
		"$(jq -n -c --argjson a "$a" --argjson b "$c" '$b | with_entries(.value -= $a[.key])')"
}
for i in $(seq "$REPS"); do
	echo "load $(cut -d' ' -f1 /proc/loadavg)"
	if [ $((i % 2)) = 1 ]; then o="base new"; else o="new base"; fi
	for v in $o; do
		if [ "$v" = base ]; then one base "$BASE"; else one new "$NEW"; fi
	done
done
